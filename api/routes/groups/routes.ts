import type { RouteDef } from '../../http/route';
import type { ResourceRouteOptions } from '../options';

/** Routes of /api/groups (issue 3). */
export function groupsRoutes(_options: ResourceRouteOptions): RouteDef[] {
  return [];
}
