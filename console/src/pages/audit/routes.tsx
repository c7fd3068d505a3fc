/** The audit log pages, under the shell (console/src/routes.tsx), each a URL of its own. */
import type { RouteObject } from 'react-router';
import { lazyPage } from '../../lazyPage';

export const auditRoutes: RouteObject[] = [
  {
    path: 'audit',
    lazy: lazyPage(
      () => import('./AuditLog'),
      (m) => m.AuditLogPage,
    ),
  },
];
