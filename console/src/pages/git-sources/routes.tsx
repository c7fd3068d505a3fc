/** The Git source pages, under the shell (console/src/routes.tsx), each a URL of its own. */
import type { RouteObject } from 'react-router';
import { lazyPage } from '../../lazyPage';

export const gitSourceRoutes: RouteObject[] = [
  {
    path: 'git-sources',
    lazy: lazyPage(
      () => import('./GitSourcesList'),
      (m) => m.GitSourcesPage,
    ),
  },
  {
    path: 'git-sources/new',
    lazy: lazyPage(
      () => import('./NewGitSource'),
      (m) => m.NewGitSourcePage,
    ),
  },
  {
    path: 'git-sources/:id',
    lazy: lazyPage(
      () => import('./GitSourceDetail'),
      (m) => m.GitSourceDetailPage,
    ),
  },
  {
    path: 'git-sources/:id/edit',
    lazy: lazyPage(
      () => import('./EditGitSource'),
      (m) => m.EditGitSourcePage,
    ),
  },
];
