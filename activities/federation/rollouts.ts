import type { ActivityDeps } from '..';

/** Activities of the federated rollout workflow's steps (docs/federation.md). */
export function createFederatedRolloutActivities(deps: ActivityDeps) {
  void deps;
  return {};
}
