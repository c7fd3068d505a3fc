/** The group pages, under the shell (console/src/routes.tsx), each a URL of its own. */
import type { RouteObject } from 'react-router';

export const groupRoutes: RouteObject[] = [];
