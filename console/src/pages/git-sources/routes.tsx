/** The Git source pages, under the shell (console/src/routes.tsx), each a URL of its own. */
import type { RouteObject } from 'react-router';
import { EditGitSourcePage } from './EditGitSource';
import { GitSourceDetailPage } from './GitSourceDetail';
import { GitSourcesPage } from './GitSourcesList';
import { NewGitSourcePage } from './NewGitSource';

export const gitSourceRoutes: RouteObject[] = [
  { path: 'git-sources', element: <GitSourcesPage /> },
  { path: 'git-sources/new', element: <NewGitSourcePage /> },
  { path: 'git-sources/:id', element: <GitSourceDetailPage /> },
  { path: 'git-sources/:id/edit', element: <EditGitSourcePage /> },
];
