/** The group pages, under the shell (console/src/routes.tsx), each a URL of its own. */
import type { RouteObject } from 'react-router';
import { GroupDetailPage } from './GroupDetail';
import { GroupsPage } from './GroupsList';

export const groupRoutes: RouteObject[] = [
  { path: 'groups', element: <GroupsPage /> },
  { path: 'groups/:id', element: <GroupDetailPage /> },
];
