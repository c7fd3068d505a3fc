/** The federation pages, under the shell (console/src/routes.tsx), each a URL of its own. */
import type { RouteObject } from 'react-router';
import { lazyPage } from '../../lazyPage';

export const federationRoutes: RouteObject[] = [
  {
    path: 'federation',
    lazy: lazyPage(
      () => import('./Peers'),
      (m) => m.PeersPage,
    ),
  },
  {
    path: 'federation/peers/:id',
    lazy: lazyPage(
      () => import('./PeerDetail'),
      (m) => m.PeerDetailPage,
    ),
  },
  {
    path: 'federation/agents',
    lazy: lazyPage(
      () => import('./FederatedAgents'),
      (m) => m.FederatedAgentsPage,
    ),
  },
  {
    path: 'federation/handovers',
    lazy: lazyPage(
      () => import('./Handovers'),
      (m) => m.HandoversPage,
    ),
  },
  {
    path: 'federation/handovers/:id',
    lazy: lazyPage(
      () => import('./HandoverDetail'),
      (m) => m.HandoverDetailPage,
    ),
  },
  {
    path: 'federation/rollouts',
    lazy: lazyPage(
      () => import('./FederatedRollouts'),
      (m) => m.FederatedRolloutsPage,
    ),
  },
  {
    path: 'federation/rollouts/new',
    lazy: lazyPage(
      () => import('./NewFederatedRollout'),
      (m) => m.NewFederatedRolloutPage,
    ),
  },
  {
    path: 'federation/rollouts/:id',
    lazy: lazyPage(
      () => import('./FederatedRolloutDetail'),
      (m) => m.FederatedRolloutDetailPage,
    ),
  },
];
