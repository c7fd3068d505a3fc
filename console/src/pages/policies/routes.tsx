/** The policy pages, under the shell (console/src/routes.tsx), each a URL of its own. */
import type { RouteObject } from 'react-router';
import { DryRunPage } from './DryRun';
import { PoliciesPage } from './PoliciesList';
import { PolicyDetailPage } from './PolicyDetail';
import { EditPolicyPage, NewPolicyPage } from './PolicyEditor';

export const policyRoutes: RouteObject[] = [
  { path: 'policies', element: <PoliciesPage /> },
  { path: 'policies/new', element: <NewPolicyPage /> },
  { path: 'policies/dry-run', element: <DryRunPage /> },
  { path: 'policies/:id', element: <PolicyDetailPage /> },
  { path: 'policies/:id/edit', element: <EditPolicyPage /> },
];
