/**
 * The frame of every page: the areas in a navigation landmark, who is signed in with their
 * role, sign-out, and the page in <main>. A skip link lets keyboard users past the navigation.
 */
import { Anchor, AppShell, Badge, Burger, Button, Group, Loader, NavLink, Text, Title } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { useMutation } from '@tanstack/react-query';
import { Link, Outlet, useLocation, useNavigate } from 'react-router';
import { api, ok } from '../api/client';
import { may, useSession, type Session } from '../api/session';
import { AREAS } from '../navigation';
import { ProblemAlert } from './ProblemAlert';

function isCurrent(areaPath: string, pathname: string): boolean {
  return areaPath === '/' ? pathname === '/' : pathname === areaPath || pathname.startsWith(`${areaPath}/`);
}

function SignOut() {
  const navigate = useNavigate();
  const signOut = useMutation({
    mutationFn: () => ok(api.POST('/api/auth/logout')),
    onSuccess: ({ endSessionUrl }) => {
      if (endSessionUrl) window.location.assign(endSessionUrl);
      else void navigate('/signed-out');
    },
  });
  return (
    <Button variant="default" size="xs" loading={signOut.isPending} onClick={() => signOut.mutate()}>
      Sign out
    </Button>
  );
}

function Person({ session }: { session: Session }) {
  return (
    <Group gap="xs" wrap="nowrap" data-testid="person">
      <Text size="sm" fw={500} visibleFrom="xs" truncate="end" maw={200}>
        {session.displayName ?? session.subject}
      </Text>
      {session.roles.map((role) => (
        <Badge key={role} variant="filled" color="blue.9" aria-label={`role ${role}`}>
          {role}
        </Badge>
      ))}
    </Group>
  );
}

function Navigation({ session, onNavigate }: { session: Session; onNavigate: () => void }) {
  const { pathname } = useLocation();
  const areas = AREAS.filter((area) => !area.permission || may(session, area.permission));
  return (
    <nav aria-label="Console areas">
      {areas.map((area) => {
        const current = isCurrent(area.path, pathname);
        return (
          <NavLink
            key={area.path}
            component={Link}
            to={area.path}
            label={area.label}
            active={current}
            variant="filled"
            aria-current={current ? 'page' : undefined}
            onClick={onNavigate}
          />
        );
      })}
    </nav>
  );
}

/**
 * Below the `sm` breakpoint (a phone) the navigation is a panel a menu button opens and
 * closes, and choosing an area closes it; from `sm` up it is always there.
 */
export function Shell() {
  const session = useSession();
  const [navigationOpen, navigation] = useDisclosure(false);
  if (session.isPending) return <Loader m="xl" aria-label="Loading the session" />;
  if (session.isError) return <ProblemAlert error={session.error} m="xl" />;
  return (
    <AppShell
      header={{ height: 56 }}
      navbar={{ width: 220, breakpoint: 'sm', collapsed: { mobile: !navigationOpen } }}
      padding="md"
    >
      <AppShell.Header>
        <Group h="100%" px="md" justify="space-between" wrap="nowrap">
          <Group wrap="nowrap" gap="xs">
            <Anchor href="#content" className="skip-link">
              Skip to content
            </Anchor>
            <Burger
              opened={navigationOpen}
              onClick={navigation.toggle}
              hiddenFrom="sm"
              size="sm"
              aria-label={navigationOpen ? 'Close the navigation' : 'Open the navigation'}
              aria-expanded={navigationOpen}
            />
            <Title order={1} size="h4">
              Fleet console
            </Title>
          </Group>
          <Group wrap="nowrap" gap="xs">
            <Person session={session.data} />
            <SignOut />
          </Group>
        </Group>
      </AppShell.Header>
      <AppShell.Navbar p="xs">
        <Navigation session={session.data} onNavigate={navigation.close} />
      </AppShell.Navbar>
      <AppShell.Main id="content" tabIndex={-1}>
        <Outlet />
      </AppShell.Main>
    </AppShell>
  );
}
