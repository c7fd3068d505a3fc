import type { RouteDef } from '../../http/route';
import type { ResourceRouteOptions } from '../options';

/** Routes of /api/policies (issue 3). */
export function policiesRoutes(_options: ResourceRouteOptions): RouteDef[] {
  return [];
}
