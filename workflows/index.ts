// Every workflow the worker registers, under the type names workflows/definitions.ts
// declares (checked below). Workflows import only activity *types*.
import type {
  FederatedRolloutWorkflow,
  FleetCensusWorkflow,
  GitSyncWorkflow,
  HandoverWorkflow,
  OutboxRetentionWorkflow,
  PeerHealthWorkflow,
  RolloutWorkflow,
  federatedRolloutWorkflowType,
  fleetCensusWorkflowType,
  gitSyncWorkflowType,
  handoverWorkflowType,
  outboxRetentionWorkflowType,
  peerHealthWorkflowType,
  rolloutWorkflowType,
} from './definitions';
import { federatedRolloutWorkflow } from './federated-rollout';
import { fleetCensusWorkflow } from './fleet-census';
import { gitSyncWorkflow } from './git-sync';
import { handoverWorkflow } from './handover';
import { outboxRetentionWorkflow } from './outbox-retention';
import { peerHealthWorkflow } from './peer-health';
import { rolloutWorkflow } from './rollout';

export {
  federatedRolloutWorkflow,
  fleetCensusWorkflow,
  gitSyncWorkflow,
  handoverWorkflow,
  outboxRetentionWorkflow,
  peerHealthWorkflow,
  rolloutWorkflow,
};

/** Fails to compile when a registered name or signature drifts from its definition. */
export type Registered = {
  [K in typeof rolloutWorkflowType]: RolloutWorkflow;
} & { [K in typeof outboxRetentionWorkflowType]: OutboxRetentionWorkflow } & {
  [K in typeof gitSyncWorkflowType]: GitSyncWorkflow;
} & { [K in typeof peerHealthWorkflowType]: PeerHealthWorkflow } & {
  [K in typeof handoverWorkflowType]: HandoverWorkflow;
} & { [K in typeof federatedRolloutWorkflowType]: FederatedRolloutWorkflow } & {
  [K in typeof fleetCensusWorkflowType]: FleetCensusWorkflow;
};
const registered: Registered = {
  rolloutWorkflow,
  outboxRetentionWorkflow,
  gitSyncWorkflow,
  peerHealthWorkflow,
  handoverWorkflow,
  federatedRolloutWorkflow,
  fleetCensusWorkflow,
};
void registered;
