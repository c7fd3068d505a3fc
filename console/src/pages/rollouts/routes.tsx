/** The rollout pages, under the shell (console/src/routes.tsx), each a URL of its own. */
import type { RouteObject } from 'react-router';
import { NewRolloutPage } from './NewRollout';
import { RolloutDetailPage } from './RolloutDetail';
import { RolloutsPage } from './Rollouts';

export const rolloutRoutes: RouteObject[] = [
  { path: 'rollouts', element: <RolloutsPage /> },
  { path: 'rollouts/new', element: <NewRolloutPage /> },
  { path: 'rollouts/:id', element: <RolloutDetailPage /> },
];
