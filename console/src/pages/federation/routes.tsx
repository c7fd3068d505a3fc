/** The federation pages, under the shell (console/src/routes.tsx), each a URL of its own. */
import type { RouteObject } from 'react-router';
import { FederatedAgentsPage } from './FederatedAgents';
import { FederatedRolloutDetailPage } from './FederatedRolloutDetail';
import { FederatedRolloutsPage } from './FederatedRollouts';
import { HandoverDetailPage } from './HandoverDetail';
import { NewFederatedRolloutPage } from './NewFederatedRollout';
import { HandoversPage } from './Handovers';
import { PeerDetailPage } from './PeerDetail';
import { PeersPage } from './Peers';

export const federationRoutes: RouteObject[] = [
  { path: 'federation', element: <PeersPage /> },
  { path: 'federation/peers/:id', element: <PeerDetailPage /> },
  { path: 'federation/agents', element: <FederatedAgentsPage /> },
  { path: 'federation/handovers', element: <HandoversPage /> },
  { path: 'federation/handovers/:id', element: <HandoverDetailPage /> },
  { path: 'federation/rollouts', element: <FederatedRolloutsPage /> },
  { path: 'federation/rollouts/new', element: <NewFederatedRolloutPage /> },
  { path: 'federation/rollouts/:id', element: <FederatedRolloutDetailPage /> },
];
