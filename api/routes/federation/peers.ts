import type { RouteDef } from '../../http/route';
import type { FederationRouteOptions } from '.';

/** Federation: peers (admin) and ping (peer) (docs/federation.md). */
export function peerRoutes(options: FederationRouteOptions): RouteDef[] {
  void options;
  return [];
}
