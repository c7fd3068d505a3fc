/** The bootstrap token, pool and access token (PAT) pages, under the shell (console/src/routes.tsx), each a URL of its own. */
import type { RouteObject } from 'react-router';
import { BootstrapTokensPage } from './BootstrapTokens';
import { PatsPage } from './Pats';
import { PoolDetailPage } from './PoolDetail';
import { PoolsPage } from './Pools';

export const tokenRoutes: RouteObject[] = [
  { path: 'tokens', element: <BootstrapTokensPage /> },
  { path: 'tokens/pools', element: <PoolsPage /> },
  { path: 'tokens/pools/:id', element: <PoolDetailPage /> },
  { path: 'pats', element: <PatsPage /> },
];
