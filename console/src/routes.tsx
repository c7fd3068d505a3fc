/**
 * Every page of the console, by path: each is deep-linkable (the api serves index.html for
 * any path it does not own). Each area's pages are listed by its own routes module; each page
 * is a chunk of its own, loaded when first visited (lazyPage).
 */
import { createBrowserRouter, type RouteObject } from 'react-router';
import { Shell } from './components/Shell';
import { lazyPage } from './lazyPage';
import { NotFoundPage } from './pages/NotFound';
import { SignedOutPage } from './pages/SignedOut';
import { auditRoutes } from './pages/audit/routes';
import { configurationRoutes } from './pages/configurations/routes';
import { federationRoutes } from './pages/federation/routes';
import { gitSourceRoutes } from './pages/git-sources/routes';
import { groupRoutes } from './pages/groups/routes';
import { policyRoutes } from './pages/policies/routes';
import { rolloutRoutes } from './pages/rollouts/routes';
import { tokenRoutes } from './pages/tokens/routes';

const pages: RouteObject[] = [
  {
    index: true,
    lazy: lazyPage(
      () => import('./pages/Overview'),
      (m) => m.OverviewPage,
    ),
  },
  {
    path: 'agents',
    lazy: lazyPage(
      () => import('./pages/Agents'),
      (m) => m.AgentsPage,
    ),
  },
  {
    path: 'agents/:id',
    lazy: lazyPage(
      () => import('./pages/AgentDetail'),
      (m) => m.AgentDetailPage,
    ),
  },
  ...groupRoutes,
  ...configurationRoutes,
  ...rolloutRoutes,
  ...policyRoutes,
  ...tokenRoutes,
  ...auditRoutes,
  ...gitSourceRoutes,
  ...federationRoutes,
];

export const router = createBrowserRouter([
  { path: '/signed-out', element: <SignedOutPage /> },
  {
    path: '/',
    element: <Shell />,
    children: [...pages, { path: '*', element: <NotFoundPage /> }],
  },
]);
