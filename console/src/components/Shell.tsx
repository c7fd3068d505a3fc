/**
 * The frame of every page: the areas in a navigation landmark, who is signed in with their
 * role, sign-out, and the page in <main>. A skip link lets keyboard users past the navigation.
 */
import { Anchor, AppShell, Badge, Button, Group, Loader, NavLink, Text, Title } from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { Link, Outlet, useLocation, useNavigate } from 'react-router';
import { api, ok } from '../api/client';
import { useSession, type Session } from '../api/session';
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
    <Group gap="xs" data-testid="person">
      <Text size="sm" fw={500}>
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

function Navigation() {
  const { pathname } = useLocation();
  return (
    <nav aria-label="Console areas">
      {AREAS.map((area) => {
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
          />
        );
      })}
    </nav>
  );
}

export function Shell() {
  const session = useSession();
  if (session.isPending) return <Loader m="xl" aria-label="Loading the session" />;
  if (session.isError) return <ProblemAlert error={session.error} m="xl" />;
  return (
    <AppShell header={{ height: 56 }} navbar={{ width: 220, breakpoint: 'sm' }} padding="md">
      <AppShell.Header>
        <Group h="100%" px="md" justify="space-between">
          <Group>
            <Anchor href="#content" className="skip-link">
              Skip to content
            </Anchor>
            <Title order={1} size="h4">
              Fleet console
            </Title>
          </Group>
          <Group>
            <Person session={session.data} />
            <SignOut />
          </Group>
        </Group>
      </AppShell.Header>
      <AppShell.Navbar p="xs">
        <Navigation />
      </AppShell.Navbar>
      <AppShell.Main id="content" tabIndex={-1}>
        <Outlet />
      </AppShell.Main>
    </AppShell>
  );
}
