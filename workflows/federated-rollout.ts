import type { FederatedRolloutOutcome, FederatedRolloutWorkflowInput } from './definitions';

/** A configuration version rolled out across installations (docs/federation.md). */
export async function federatedRolloutWorkflow(input: FederatedRolloutWorkflowInput): Promise<FederatedRolloutOutcome> {
  void input;
  throw new Error('not built yet');
}
