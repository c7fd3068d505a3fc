import type { HandoverOutcome, HandoverWorkflowInput } from './definitions';

/** Hands agents to a peer (docs/federation.md). */
export async function handoverWorkflow(input: HandoverWorkflowInput): Promise<HandoverOutcome> {
  void input;
  throw new Error('not built yet');
}
