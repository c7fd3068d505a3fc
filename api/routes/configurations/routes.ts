import type { RouteDef } from '../../http/route';
import type { ResourceRouteOptions } from '../options';

/** Routes of /api/configurations (issue 3). */
export function configurationsRoutes(_options: ResourceRouteOptions): RouteDef[] {
  return [];
}
