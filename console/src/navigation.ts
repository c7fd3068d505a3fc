/** The console's areas (issue 14), in the order the navigation lists them. */
export interface Area {
  path: string;
  label: string;
  /** Listed only to whom the API lets read it (a viewer gets no area that answers 403). */
  permission?: 'audit' | 'admin';
}

export const AREAS: readonly Area[] = [
  { path: '/', label: 'Overview' },
  { path: '/agents', label: 'Agents' },
  { path: '/groups', label: 'Groups' },
  { path: '/configurations', label: 'Configurations' },
  { path: '/rollouts', label: 'Rollouts' },
  { path: '/policies', label: 'Policies' },
  { path: '/tokens', label: 'Bootstrap tokens' },
  { path: '/pats', label: 'Access tokens', permission: 'admin' },
  { path: '/audit', label: 'Audit log', permission: 'audit' },
  { path: '/git-sources', label: 'Git sources' },
  { path: '/federation', label: 'Federation' },
];
