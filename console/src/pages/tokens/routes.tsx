/** The bootstrap token, pool and access token (PAT) pages, under the shell (console/src/routes.tsx), each a URL of its own. */
import type { RouteObject } from 'react-router';
import { lazyPage } from '../../lazyPage';

export const tokenRoutes: RouteObject[] = [
  {
    path: 'tokens',
    lazy: lazyPage(
      () => import('./BootstrapTokens'),
      (m) => m.BootstrapTokensPage,
    ),
  },
  {
    path: 'tokens/pools',
    lazy: lazyPage(
      () => import('./Pools'),
      (m) => m.PoolsPage,
    ),
  },
  {
    path: 'tokens/pools/:id',
    lazy: lazyPage(
      () => import('./PoolDetail'),
      (m) => m.PoolDetailPage,
    ),
  },
  {
    path: 'pats',
    lazy: lazyPage(
      () => import('./Pats'),
      (m) => m.PatsPage,
    ),
  },
];
