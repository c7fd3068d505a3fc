/** The configuration pages, under the shell (console/src/routes.tsx), each a URL of its own. */
import type { RouteObject } from 'react-router';
import { lazyPage } from '../../lazyPage';

export const configurationRoutes: RouteObject[] = [
  {
    path: 'configurations',
    lazy: lazyPage(
      () => import('./ConfigurationsList'),
      (m) => m.ConfigurationsPage,
    ),
  },
  {
    path: 'configurations/:id',
    lazy: lazyPage(
      () => import('./ConfigurationDetail'),
      (m) => m.ConfigurationDetailPage,
    ),
  },
  {
    path: 'configurations/:id/new-version',
    lazy: lazyPage(
      () => import('./VersionEditor'),
      (m) => m.VersionEditorPage,
    ),
  },
  {
    path: 'configurations/:id/versions/:version',
    lazy: lazyPage(
      () => import('./VersionView'),
      (m) => m.VersionViewPage,
    ),
  },
  {
    path: 'configurations/:id/compare',
    lazy: lazyPage(
      () => import('./CompareVersions'),
      (m) => m.CompareVersionsPage,
    ),
  },
];
