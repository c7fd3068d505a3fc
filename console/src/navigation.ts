/** The console's areas (issue 14), in the order the navigation lists them. */
export interface Area {
  path: string;
  label: string;
}

export const AREAS: readonly Area[] = [
  { path: '/', label: 'Overview' },
  { path: '/agents', label: 'Agents' },
  { path: '/groups', label: 'Groups' },
  { path: '/configurations', label: 'Configurations' },
  { path: '/rollouts', label: 'Rollouts' },
  { path: '/policies', label: 'Policies' },
  { path: '/tokens', label: 'Bootstrap tokens' },
  { path: '/pats', label: 'Access tokens' },
  { path: '/audit', label: 'Audit log' },
  { path: '/git-sources', label: 'Git sources' },
  { path: '/federation', label: 'Federation' },
];
