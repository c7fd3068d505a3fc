/**
 * What the federation pages share: the links between them (each its own URL), the cursor
 * pager of their lists, a peer's health, and how a time is written.
 */
import { Badge, Button, Group } from '@mantine/core';
import { Link, useLocation } from 'react-router';

/** Every query of the federation pages starts with this key: one invalidation refreshes them. */
export const FEDERATION_KEY = ['federation'];

export const PAGE_SIZE = 25;

const SECTIONS = [
  { path: '/federation', label: 'Peers' },
  { path: '/federation/agents', label: 'Federated agents' },
  { path: '/federation/handovers', label: 'Handovers' },
  { path: '/federation/rollouts', label: 'Federated rollouts' },
] as const;

function isCurrent(path: string, pathname: string): boolean {
  if (path === '/federation') return pathname === path || pathname.startsWith('/federation/peers');
  return pathname === path || pathname.startsWith(`${path}/`);
}

/** The federation area's pages, as links (each page is a URL of its own, so not ARIA tabs). */
export function FederationNav() {
  const { pathname } = useLocation();
  return (
    <nav aria-label="Federation pages">
      <Group gap="xs" mb="md">
        {SECTIONS.map(({ path, label }) => {
          const current = isCurrent(path, pathname);
          return (
            <Button
              key={path}
              component={Link}
              to={path}
              size="xs"
              variant={current ? 'filled' : 'default'}
              aria-current={current ? 'page' : undefined}
            >
              {label}
            </Button>
          );
        })}
      </Group>
    </nav>
  );
}

// Filled badges in dark shades: white text on them keeps 4.5:1 contrast on any row.
export function HealthBadge({ healthy }: { healthy: boolean }) {
  return (
    <Badge variant="filled" color={healthy ? 'teal.9' : 'red.9'} data-testid="peer-health">
      {healthy ? 'healthy' : 'unhealthy'}
    </Badge>
  );
}

export const when = (time: string | null | undefined, never = 'never') =>
  time ? new Date(time).toLocaleString() : never;
