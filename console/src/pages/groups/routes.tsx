/** The group pages, under the shell (console/src/routes.tsx), each a URL of its own. */
import type { RouteObject } from 'react-router';
import { lazyPage } from '../../lazyPage';

export const groupRoutes: RouteObject[] = [
  {
    path: 'groups',
    lazy: lazyPage(
      () => import('./GroupsList'),
      (m) => m.GroupsPage,
    ),
  },
  {
    path: 'groups/:id',
    lazy: lazyPage(
      () => import('./GroupDetail'),
      (m) => m.GroupDetailPage,
    ),
  },
];
