import type { RouteDef } from '../../http/route';
import type { FederationRouteOptions } from '.';

/** Federation: handovers, receiver side (peer): issue, redeem, status, cancel (docs/federation.md). */
export function incomingHandoverRoutes(options: FederationRouteOptions): RouteDef[] {
  void options;
  return [];
}
