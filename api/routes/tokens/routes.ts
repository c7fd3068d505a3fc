import type { RouteDef } from '../../http/route';
import type { ResourceRouteOptions } from '../options';

/** Routes of /api/tokens (issue 3). */
export function tokensRoutes(_options: ResourceRouteOptions): RouteDef[] {
  return [];
}
