import type { ActivityDeps } from '..';

/** Activities of the handover workflow's steps (sender side) (docs/federation.md). */
export function createHandoverActivities(deps: ActivityDeps) {
  void deps;
  return {};
}
