import Router from '@koa/router';
import type { Middleware, Next } from 'koa';
import { problems } from '../problems';
import type { AppContext } from './context';

/**
 * The area a path belongs to: its first segment, and under /api its second too
 * (`/api/agents/{id}` and `/api/agents` → `/api/agents`; `/errors/{slug}` → `/errors`).
 */
export function areaOf(path: string): string {
  const first = path.indexOf('/', 1);
  if (first === -1) return path;
  if (path.slice(0, first) !== '/api') return path.slice(0, first);
  const second = path.indexOf('/', first + 1);
  return second === -1 ? path : path.slice(0, second);
}

interface Area {
  router: Router;
  /** The methods of each path a template without parameters serves (`/api/tenant`: GET, HEAD, PUT). */
  staticPaths: Map<string, Set<string>>;
  serve: Middleware;
}

export interface DispatchedRoute {
  method: 'get' | 'post' | 'put' | 'delete';
  /** OpenAPI spelling: `/api/pats/{id}`. */
  path: string;
  middleware: (ctx: AppContext) => Promise<void>;
}

function toKoaPath(path: string): string {
  return path.replace(/\{(\w+)\}/g, ':$1');
}

function staticPathMethods(router: Router): Map<string, Set<string>> {
  const byPath = new Map<string, Set<string>>();
  for (const layer of router.stack) {
    if (layer.paramNames.length > 0 || typeof layer.path !== 'string') continue;
    const methods = byPath.get(layer.path) ?? new Set<string>();
    for (const method of layer.methods) methods.add(method);
    byPath.set(layer.path, methods);
  }
  return byPath;
}

/**
 * 405 with `Allow` when the path exists under other methods only. The most specific
 * templates matching the path decide (fewest parameters): `PUT /api/policies/evaluate`
 * is a 405 for the static `/api/policies/evaluate`, not a `PUT /api/policies/{id}` with a
 * bad id. A path that a static template serves under this method is as specific as a path
 * can be, so it skips the match.
 */
function assertMethodAllowed(area: Area, ctx: AppContext): void {
  if (area.staticPaths.get(ctx.path)?.has(ctx.method)) return;
  const layers = area.router.match(ctx.path, ctx.method).path;
  if (layers.length === 0) return;
  const fewestParams = Math.min(...layers.map((layer) => layer.paramNames.length));
  const specific = layers.filter((layer) => layer.paramNames.length === fewestParams);
  const methods = new Set(specific.flatMap((layer) => layer.methods));
  if (!methods.has(ctx.method))
    throw problems.methodNotAllowed(
      ctx.method,
      [...methods].filter((m) => m !== 'HEAD'),
    );
}

/**
 * Routes a request with the @koa/router of its area, so it is matched against that area's
 * dozen routes rather than all of them (each match tries every route's pattern in turn).
 * Paths are case-sensitive: `/API/TENANT` is no route (and so cannot slip past the audit).
 * A path of no area goes on (to the console's files).
 */
export function dispatchByArea(routes: DispatchedRoute[]) {
  const areas = new Map<string, Area>();
  for (const route of routes) {
    const key = areaOf(route.path.replace(/\/\{.*$/, ''));
    let area = areas.get(key);
    if (!area) {
      const router = new Router({ sensitive: true });
      area = { router, staticPaths: new Map(), serve: router.routes() as Middleware };
      areas.set(key, area);
    }
    area.router[route.method](toKoaPath(route.path), route.middleware as never);
  }
  for (const area of areas.values()) area.staticPaths = staticPathMethods(area.router);

  return function dispatch(ctx: AppContext, next: Next) {
    const area = areas.get(areaOf(ctx.path));
    if (!area) return next();
    assertMethodAllowed(area, ctx);
    return area.serve(ctx, next) as Promise<void>;
  };
}
