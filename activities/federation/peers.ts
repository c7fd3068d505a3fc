import type { ActivityDeps } from '..';

/** Activities of peer health checks (docs/federation.md). */
export function createPeerActivities(deps: ActivityDeps) {
  void deps;
  return {};
}
