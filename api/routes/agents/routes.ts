import type { RouteDef } from '../../http/route';
import type { ResourceRouteOptions } from '../options';

/** Routes of /api/agents (issue 3). */
export function agentsRoutes(_options: ResourceRouteOptions): RouteDef[] {
  return [];
}
