/**
 * Every page of the console, by path: each is deep-linkable (the api serves index.html for
 * any path it does not own). A new page is one entry here and one in navigation.ts.
 */
import { createBrowserRouter } from 'react-router';
import { Shell } from './components/Shell';
import { AREAS } from './navigation';
import { AgentDetailPage } from './pages/AgentDetail';
import { AgentsPage } from './pages/Agents';
import { NotBuiltYetPage } from './pages/NotBuiltYet';
import { NotFoundPage } from './pages/NotFound';
import { OverviewPage } from './pages/Overview';
import { NewRolloutPage } from './pages/rollouts/NewRollout';
import { RolloutDetailPage } from './pages/rollouts/RolloutDetail';
import { RolloutsPage } from './pages/rollouts/Rollouts';
import { SignedOutPage } from './pages/SignedOut';
import { configurationRoutes } from './pages/configurations/routes';

const BUILT = new Set(['/', '/agents', '/configurations', '/rollouts']);

export const router = createBrowserRouter([
  { path: '/signed-out', element: <SignedOutPage /> },
  {
    path: '/',
    element: <Shell />,
    children: [
      { index: true, element: <OverviewPage /> },
      { path: 'agents', element: <AgentsPage /> },
      { path: 'agents/:id', element: <AgentDetailPage /> },
      ...configurationRoutes,
      { path: 'rollouts', element: <RolloutsPage /> },
      { path: 'rollouts/new', element: <NewRolloutPage /> },
      { path: 'rollouts/:id', element: <RolloutDetailPage /> },
      ...AREAS.filter((area) => !BUILT.has(area.path)).map((area) => ({
        path: area.path.slice(1),
        element: <NotBuiltYetPage area={area} />,
      })),
      { path: '*', element: <NotFoundPage /> },
    ],
  },
]);
