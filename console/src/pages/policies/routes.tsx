/** The policy pages, under the shell (console/src/routes.tsx), each a URL of its own. */
import type { RouteObject } from 'react-router';
import { lazyPage } from '../../lazyPage';

export const policyRoutes: RouteObject[] = [
  {
    path: 'policies',
    lazy: lazyPage(
      () => import('./PoliciesList'),
      (m) => m.PoliciesPage,
    ),
  },
  {
    path: 'policies/new',
    lazy: lazyPage(
      () => import('./PolicyEditor'),
      (m) => m.NewPolicyPage,
    ),
  },
  {
    path: 'policies/dry-run',
    lazy: lazyPage(
      () => import('./DryRun'),
      (m) => m.DryRunPage,
    ),
  },
  {
    path: 'policies/:id',
    lazy: lazyPage(
      () => import('./PolicyDetail'),
      (m) => m.PolicyDetailPage,
    ),
  },
  {
    path: 'policies/:id/edit',
    lazy: lazyPage(
      () => import('./PolicyEditor'),
      (m) => m.EditPolicyPage,
    ),
  },
];
