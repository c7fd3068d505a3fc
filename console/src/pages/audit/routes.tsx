/** The audit log pages, under the shell (console/src/routes.tsx), each a URL of its own. */
import type { RouteObject } from 'react-router';
import { AuditLogPage } from './AuditLog';

export const auditRoutes: RouteObject[] = [{ path: 'audit', element: <AuditLogPage /> }];
