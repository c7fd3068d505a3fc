import type { RouteDef } from '../../http/route';
import type { FederationRouteOptions } from '.';

/** Federation: federated rollouts, and the receiver side a peer calls (docs/federation.md). */
export function federatedRolloutRoutes(options: FederationRouteOptions): RouteDef[] {
  void options;
  return [];
}
