import type { RouteDef } from '../../http/route';
import type { FederationRouteOptions } from '.';

/** Federation: handovers, sender side (admin) (docs/federation.md). */
export function handoverRoutes(options: FederationRouteOptions): RouteDef[] {
  void options;
  return [];
}
