/** The console's areas (issue 14), in the order the navigation lists them. */
export interface Area {
  path: string;
  label: string;
  /** The REST resource a page not built yet can be reached through meanwhile. */
  api: string;
}

export const AREAS: readonly Area[] = [
  { path: '/', label: 'Overview', api: '/api/events' },
  { path: '/agents', label: 'Agents', api: '/api/agents' },
  { path: '/groups', label: 'Groups', api: '/api/groups' },
  { path: '/configurations', label: 'Configurations', api: '/api/configurations' },
  { path: '/rollouts', label: 'Rollouts', api: '/api/rollouts' },
  { path: '/policies', label: 'Policies', api: '/api/policies' },
  { path: '/tokens', label: 'Bootstrap tokens', api: '/api/tokens' },
  { path: '/pats', label: 'Access tokens', api: '/api/pats' },
  { path: '/audit', label: 'Audit log', api: '/api/audit/events' },
  { path: '/git-sources', label: 'Git sources', api: '/api/git-sources' },
  { path: '/federation', label: 'Federation', api: '/api/federation/peers' },
];
