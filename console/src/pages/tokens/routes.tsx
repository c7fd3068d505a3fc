/** The bootstrap token, pool and access token (PAT) pages, under the shell (console/src/routes.tsx), each a URL of its own. */
import type { RouteObject } from 'react-router';

export const tokenRoutes: RouteObject[] = [];
