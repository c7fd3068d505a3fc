/**
 * The fleet at a glance: agents by status and health, which configuration and version they
 * run (and which are behind), failed applies, the rollouts in flight with their progress,
 * and agents online over the last day, each count a link to the list of what it counts;
 * then the tenant's latest events. The figures come from `GET /api/fleet/summary` and
 * `/api/fleet/online`, read again as the live-updates hub announces events (the census once
 * a minute); the latest events come from the hub itself.
 */
import { Anchor, Card, Group, Progress, SimpleGrid, Skeleton, Stack, Table, Text, Title } from '@mantine/core';
import { useQuery, useQueryClient, type QueryClient } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { Link } from 'react-router';
import { api, ok, type Schemas } from '../api/client';
import { useLiveRefresh, type CloudEvent } from '../api/live';
import { EmptyRow } from '../components/EmptyRow';
import { PageTitle } from '../components/PageTitle';
import { ProblemAlert } from '../components/ProblemAlert';
import { ResourceName, subjectKind } from '../components/ResourceName';
import { StackedBar, type BarPart } from '../components/StackedBar';
import { searchOf } from './agentFilters';
import { OnlineChart } from './OnlineChart';

type Summary = Schemas['FleetSummary'];

const LATEST_EVENTS = 10;
const LATEST_KEY = ['events', 'latest'];
const SUMMARY_KEY = ['fleet', 'summary'];
/** Every event may change a figure here: the page refreshes as they arrive. */
const LIVE = ['*'];
const ONLINE_HOURS = 24;
/** The census counts once a minute: the chart is read again as often. */
const CENSUS_EVERY_MS = 60_000;

const agentsWhere = (filters: Record<string, string | number>) => `/agents?${searchOf(filters)}`;

function useSummary() {
  return useQuery({ queryKey: SUMMARY_KEY, queryFn: () => ok(api.GET('/api/fleet/summary')) });
}

function useOnline() {
  return useQuery({
    queryKey: ['fleet', 'online', ONLINE_HOURS],
    queryFn: () => ok(api.GET('/api/fleet/online', { params: { query: { hours: ONLINE_HOURS, stepMinutes: 5 } } })),
    refetchInterval: CENSUS_EVERY_MS,
  });
}

function Panel({ title, children, testId }: { title: string; children: ReactNode; testId?: string }) {
  return (
    <Card withBorder padding="md" role="group" aria-label={title} data-testid={testId}>
      <Title order={3} size="h5" mb="xs">
        {title}
      </Title>
      {children}
    </Card>
  );
}

/** One number, large, that leads to the agents it counts. */
function Figure({ label, count, to, testId }: { label: string; count: number; to: string; testId: string }) {
  return (
    <Card withBorder padding="md" role="group" aria-label={label}>
      <Text size="sm" c="gray.8">
        {label}
      </Text>
      <Anchor component={Link} to={to} size="xl" fw={700} data-testid={testId}>
        {count.toLocaleString()}
      </Anchor>
    </Card>
  );
}

function Figures({ agents }: { agents: Summary['agents'] }) {
  return (
    <SimpleGrid cols={{ base: 2, sm: 5 }} mb="md">
      <Figure
        label="Agents online"
        count={agents.byStatus.online}
        to={agentsWhere({ status: 'online' })}
        testId="agents-online"
      />
      <Figure
        label="Agents offline"
        count={agents.byStatus.offline}
        to={agentsWhere({ status: 'offline' })}
        testId="agents-offline"
      />
      <Figure
        label="Awaiting approval"
        count={agents.byStatus['pending-approval']}
        to={agentsWhere({ status: 'pending-approval' })}
        testId="agents-pending-approval"
      />
      <Figure
        label="Online, unhealthy"
        count={agents.health.unhealthy}
        to={agentsWhere({ status: 'online', health: 'unhealthy' })}
        testId="agents-unhealthy"
      />
      <Figure
        label="Failed applies"
        count={agents.failedApplies}
        to={agentsWhere({ applied: 'FAILED' })}
        testId="agents-failed-applies"
      />
    </SimpleGrid>
  );
}

const STATUS_PARTS: Array<{ status: keyof Summary['agents']['byStatus']; color: string }> = [
  { status: 'online', color: 'teal.7' },
  { status: 'offline', color: 'gray.6' },
  { status: 'enrolling', color: 'blue.5' },
  { status: 'pending-approval', color: 'yellow.5' },
  { status: 'revoked', color: 'red.8' },
  { status: 'handed-over', color: 'violet.5' },
];

function ByStatus({ agents }: { agents: Summary['agents'] }) {
  const parts: BarPart[] = STATUS_PARTS.map(({ status, color }) => ({
    label: status,
    count: agents.byStatus[status],
    color,
    to: agentsWhere({ status }),
  }));
  return <StackedBar label="Agents by status" parts={parts} />;
}

function HealthOfOnline({ health }: { health: Summary['agents']['health'] }) {
  const online = (health: string) => agentsWhere({ status: 'online', health });
  return (
    <StackedBar
      label="Online agents by health"
      parts={[
        { label: 'healthy', count: health.healthy, color: 'teal.7', to: online('healthy') },
        { label: 'unhealthy', count: health.unhealthy, color: 'red.8', to: online('unhealthy') },
        { label: 'not reported', count: health.unknown, color: 'gray.4', to: online('unknown') },
      ]}
    />
  );
}

/** A configuration's agents by desired version: the published one, and older ones (behind). */
function ConfigurationVersions({ configuration }: { configuration: Summary['configurations'][number] }) {
  const { configurationId, publishedVersion } = configuration;
  const behind = configuration.versions
    .filter((one) => publishedVersion !== null && one.version < publishedVersion)
    .reduce((sum, one) => sum + one.agents, 0);
  const parts: BarPart[] = configuration.versions.map((one) => {
    const current = one.version === publishedVersion;
    const applied =
      one.failed > 0 ? `, ${one.failed} failed` : one.applied < one.agents ? `, ${one.applied} applied` : '';
    return {
      label: `v${one.version}${current ? ' (published)' : ''}${applied}:`,
      count: one.agents,
      color: current ? 'teal.7' : one.version < (publishedVersion ?? 0) ? 'orange.6' : 'blue.5',
      to: agentsWhere({ configurationId, version: one.version }),
    };
  });
  return (
    <Stack gap={4}>
      <Group justify="space-between">
        <Anchor component={Link} to={`/configurations/${configurationId}`} size="sm" fw={600}>
          {configuration.name}
        </Anchor>
        <Text size="sm">
          {configuration.agents.toLocaleString()} agents{behind > 0 && `, ${behind.toLocaleString()} behind`}
        </Text>
      </Group>
      <StackedBar label={`Agents of ${configuration.name} by desired version`} parts={parts} />
    </Stack>
  );
}

function Configurations({ summary }: { summary: Summary }) {
  const { configurations, otherConfigurations, agents } = summary;
  return (
    <Stack gap="md">
      {configurations.map((configuration) => (
        <ConfigurationVersions key={configuration.configurationId} configuration={configuration} />
      ))}
      {otherConfigurations.configurations > 0 && (
        <Text size="sm">
          {otherConfigurations.agents.toLocaleString()} agents desire {otherConfigurations.configurations} other
          configurations.
        </Text>
      )}
      {configurations.length === 0 ? (
        <Text size="sm">No agent has been given a configuration yet.</Text>
      ) : (
        agents.withoutConfiguration > 0 && (
          <Text size="sm">{agents.withoutConfiguration.toLocaleString()} agents have no desired configuration.</Text>
        )
      )}
    </Stack>
  );
}

/** A rollout's agents by state, as a bar; the rollback's once it rolls back. */
function RolloutProgress({ rollout }: { rollout: Summary['rollouts'][number] }) {
  const { progress, rollback } = rollout;
  const done = rollback
    ? { succeeded: rollback.succeeded, failed: rollback.failed, applying: rollback.applying }
    : { succeeded: progress.succeeded, failed: progress.failed, applying: progress.applying };
  const total = Math.max(1, progress.total);
  const share = (n: number) => (n / total) * 100;
  const name = rollout.name ?? rollout.id;
  const label = `${name}: ${rollout.state}, batch ${rollout.currentBatch}; ${done.succeeded} succeeded, ${done.failed} failed, ${done.applying} applying, ${progress.deferred} deferred of ${progress.total}`;
  return (
    <Stack gap={4}>
      <Group justify="space-between">
        <Anchor component={Link} to={`/rollouts/${rollout.id}`} size="sm" fw={600}>
          {name}
        </Anchor>
        <Text size="sm">
          {rollout.state}
          {rollout.state !== 'scheduled' && `, batch ${rollout.currentBatch}`}
        </Text>
      </Group>
      <Progress.Root size="lg" aria-label={label} role="img">
        <Progress.Section value={share(done.succeeded)} color="teal.7" aria-hidden />
        <Progress.Section value={share(done.failed)} color="red.8" aria-hidden />
        <Progress.Section value={share(done.applying)} color="blue.5" aria-hidden />
        <Progress.Section value={share(progress.deferred)} color="yellow.5" aria-hidden />
      </Progress.Root>
      <Text size="xs">
        {done.succeeded} succeeded, {done.failed} failed, {done.applying} applying, {progress.deferred} deferred of{' '}
        {progress.total}
        {rollback && ' (rolling back)'}
      </Text>
    </Stack>
  );
}

function RolloutsInFlight({ rollouts }: { rollouts: Summary['rollouts'] }) {
  if (rollouts.length === 0) return <Text size="sm">No rollout is in flight.</Text>;
  return (
    <Stack gap="md" data-testid="rollouts-in-flight">
      {rollouts.map((rollout) => (
        <RolloutProgress key={rollout.id} rollout={rollout} />
      ))}
    </Stack>
  );
}

function Online() {
  const online = useOnline();
  if (online.isError) return <ProblemAlert error={online.error} />;
  return (
    <Skeleton visible={online.isPending}>
      {online.data && <OnlineChart online={online.data} hours={ONLINE_HOURS} />}
    </Skeleton>
  );
}

function FleetAtAGlance() {
  const summary = useSummary();
  if (summary.isError) return <ProblemAlert error={summary.error} />;
  if (!summary.data) return <Skeleton height={320} mb="lg" />;
  const { agents, rollouts } = summary.data;
  return (
    <>
      <Figures agents={agents} />
      <SimpleGrid cols={{ base: 1, md: 2 }} mb="md">
        <Panel title="Agents by status" testId="agents-by-status">
          <ByStatus agents={agents} />
        </Panel>
        <Panel title="Online agents by health" testId="agents-by-health">
          <HealthOfOnline health={agents.health} />
        </Panel>
        <Panel title="Configurations and versions" testId="configurations-by-version">
          <Configurations summary={summary.data} />
        </Panel>
        <Panel title="Rollouts in flight">
          <RolloutsInFlight rollouts={rollouts} />
        </Panel>
      </SimpleGrid>
      <Panel title={`Agents online, last ${ONLINE_HOURS} hours`} testId="agents-online-history">
        <Online />
      </Panel>
    </>
  );
}

/**
 * The newest events: one page read newest first, then kept live from the hub (the page's one
 * subscription puts each event it announces on top: `putOnTop`), never a walk through the
 * whole log. A gap in the hub's stream (a reconnect it could not replay) reads the page again.
 */
function useLatestEvents() {
  return useQuery({
    queryKey: LATEST_KEY,
    queryFn: async () =>
      (await ok(api.GET('/api/events', { params: { query: { order: 'newest', limit: LATEST_EVENTS } } }))).items,
  });
}

function putOnTop(queryClient: QueryClient, event: CloudEvent): void {
  const put = () =>
    queryClient.setQueryData<CloudEvent[]>(LATEST_KEY, (shown) =>
      shown && !shown.some((one) => one.id === event.id)
        ? [event, ...shown].sort((a, b) => b.time.localeCompare(a.time)).slice(0, LATEST_EVENTS)
        : shown,
    );
  put();
  // A read under way (after a gap) may have been made before the event was committed: its
  // answer would replace the page without it, so the event goes on top again once it is in.
  if (queryClient.isFetching({ queryKey: LATEST_KEY }) > 0)
    void queryClient.refetchQueries({ queryKey: LATEST_KEY }, { cancelRefetch: false }).then(put);
}

function LatestEvents() {
  const events = useLatestEvents();
  if (events.isError) return <ProblemAlert error={events.error} />;
  return (
    <Table striped aria-label="Latest events" data-testid="latest-events">
      <Table.Thead>
        <Table.Tr>
          <Table.Th scope="col">Time</Table.Th>
          <Table.Th scope="col">Type</Table.Th>
          <Table.Th scope="col">Subject</Table.Th>
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        {events.data?.map((event) => (
          <Table.Tr key={event.id}>
            <Table.Td>{new Date(event.time).toLocaleString()}</Table.Td>
            <Table.Td>{event.type}</Table.Td>
            <Table.Td>
              {event.subject ? <ResourceName kind={subjectKind(event.type)} id={event.subject} /> : ''}
            </Table.Td>
          </Table.Tr>
        ))}
        {events.data?.length === 0 && <EmptyRow columns={3}>No events yet.</EmptyRow>}
      </Table.Tbody>
    </Table>
  );
}

const OVERVIEW_QUERIES = [SUMMARY_KEY];

export function OverviewPage() {
  const queryClient = useQueryClient();
  useLiveRefresh(LIVE, OVERVIEW_QUERIES, undefined, {
    onEvent: (event) => putOnTop(queryClient, event),
    gapKeys: [LATEST_KEY],
  });
  return (
    <>
      <PageTitle>Overview</PageTitle>
      <FleetAtAGlance />
      <Title order={3} size="h4" mt="lg" mb="xs">
        Latest events
      </Title>
      <LatestEvents />
    </>
  );
}
