/**
 * A route whose page is its own chunk, loaded when the route is first visited (React
 * Router's `lazy`): the first load carries the shell and the page it opens on, not the
 * whole console.
 */
import type { ComponentType } from 'react';
import type { RouteObject } from 'react-router';

export function lazyPage<Module>(
  load: () => Promise<Module>,
  pick: (module: Module) => ComponentType,
): RouteObject['lazy'] {
  return async () => ({ Component: pick(await load()) });
}
