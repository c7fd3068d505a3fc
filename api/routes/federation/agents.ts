import type { RouteDef } from '../../http/route';
import type { FederationRouteOptions } from '.';

/** Federation: GET /api/federation/agents (docs/federation.md). */
export function federatedAgentRoutes(options: FederationRouteOptions): RouteDef[] {
  void options;
  return [];
}
