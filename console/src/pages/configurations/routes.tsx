/** The configuration pages, under the shell (console/src/routes.tsx), each a URL of its own. */
import type { RouteObject } from 'react-router';
import { CompareVersionsPage } from './CompareVersions';
import { ConfigurationDetailPage } from './ConfigurationDetail';
import { ConfigurationsPage } from './ConfigurationsList';
import { VersionEditorPage } from './VersionEditor';
import { VersionViewPage } from './VersionView';

export const configurationRoutes: RouteObject[] = [
  { path: 'configurations', element: <ConfigurationsPage /> },
  { path: 'configurations/:id', element: <ConfigurationDetailPage /> },
  { path: 'configurations/:id/new-version', element: <VersionEditorPage /> },
  { path: 'configurations/:id/versions/:version', element: <VersionViewPage /> },
  { path: 'configurations/:id/compare', element: <CompareVersionsPage /> },
];
