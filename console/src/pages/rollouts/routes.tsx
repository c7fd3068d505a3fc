/** The rollout pages, under the shell (console/src/routes.tsx), each a URL of its own. */
import type { RouteObject } from 'react-router';
import { lazyPage } from '../../lazyPage';

export const rolloutRoutes: RouteObject[] = [
  {
    path: 'rollouts',
    lazy: lazyPage(
      () => import('./Rollouts'),
      (m) => m.RolloutsPage,
    ),
  },
  {
    path: 'rollouts/new',
    lazy: lazyPage(
      () => import('./NewRollout'),
      (m) => m.NewRolloutPage,
    ),
  },
  {
    path: 'rollouts/:id',
    lazy: lazyPage(
      () => import('./RolloutDetail'),
      (m) => m.RolloutDetailPage,
    ),
  },
];
