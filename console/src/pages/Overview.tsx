/**
 * What the fleet looks like now: agents online and offline, the rollouts under way, and
 * the tenant's latest events. Every figure is an ordinary API call, read again as the
 * live-updates hub announces events; the latest events come from the hub itself.
 */
import { Card, SimpleGrid, Skeleton, Table, Text, Title } from '@mantine/core';
import { useQuery, useQueryClient, type QueryClient } from '@tanstack/react-query';
import { api, ok, type Schemas } from '../api/client';
import { useLiveRefresh, type CloudEvent } from '../api/live';
import { EmptyRow } from '../components/EmptyRow';
import { PageTitle } from '../components/PageTitle';
import { ProblemAlert } from '../components/ProblemAlert';

type AgentStatus = Schemas['Agent']['status'];

/** The API has no count: one page of at most this many agents is counted, more shows as "1000+". */
const COUNT_CAP = 1000;
const LATEST_EVENTS = 10;
const LATEST_KEY = ['events', 'latest'];
/** Every event may change a figure here: the page refreshes as they arrive. */
const LIVE = ['*'];
const ACTIVE_STATES = ['running', 'paused', 'rolling-back'] as const;

function useAgentCount(status: AgentStatus) {
  return useQuery({
    queryKey: ['agents', 'count', status],
    queryFn: async () => {
      const page = await ok(api.GET('/api/agents', { params: { query: { status, limit: COUNT_CAP } } }));
      return page.nextCursor ? `${COUNT_CAP}+` : String(page.items.length);
    },
  });
}

function useActiveRollouts() {
  return useQuery({
    queryKey: ['rollouts', 'active'],
    queryFn: async () => {
      const pages = await Promise.all(
        ACTIVE_STATES.map((state) => ok(api.GET('/api/rollouts', { params: { query: { state, limit: 20 } } }))),
      );
      return pages.flatMap((page) => page.items);
    },
  });
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
  queryClient.setQueryData<CloudEvent[]>(LATEST_KEY, (shown) =>
    shown && !shown.some((one) => one.id === event.id) ? [event, ...shown].slice(0, LATEST_EVENTS) : shown,
  );
}

function AgentCount({ status, label }: { status: AgentStatus; label: string }) {
  const count = useAgentCount(status);
  return (
    <Card withBorder padding="md" role="group" aria-label={`Agents ${label}`}>
      <Text size="sm" c="gray.8">
        Agents {label}
      </Text>
      {count.isError ? (
        <ProblemAlert error={count.error} />
      ) : (
        <Skeleton visible={count.isPending}>
          <Text size="xl" fw={700} data-testid={`agents-${status}`}>
            {count.data ?? '0'}
          </Text>
        </Skeleton>
      )}
    </Card>
  );
}

function ActiveRollouts() {
  const rollouts = useActiveRollouts();
  if (rollouts.isError) return <ProblemAlert error={rollouts.error} />;
  return (
    <Card withBorder padding="md" role="group" aria-label="Active rollouts">
      <Text size="sm" c="gray.8">
        Active rollouts
      </Text>
      <Skeleton visible={rollouts.isPending}>
        <Text size="xl" fw={700} data-testid="rollouts-active">
          {rollouts.data?.length ?? 0}
        </Text>
      </Skeleton>
      {rollouts.data?.map((rollout) => (
        <Text key={rollout.id} size="sm">
          {rollout.name ?? rollout.id} — {rollout.state}, batch {rollout.currentBatch}
        </Text>
      ))}
    </Card>
  );
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
            <Table.Td>{event.subject ?? ''}</Table.Td>
          </Table.Tr>
        ))}
        {events.data?.length === 0 && <EmptyRow columns={3}>No events yet.</EmptyRow>}
      </Table.Tbody>
    </Table>
  );
}

const OVERVIEW_QUERIES = [
  ['agents', 'count'],
  ['rollouts', 'active'],
];

export function OverviewPage() {
  const queryClient = useQueryClient();
  useLiveRefresh(LIVE, OVERVIEW_QUERIES, undefined, {
    onEvent: (event) => putOnTop(queryClient, event),
    gapKeys: [LATEST_KEY],
  });
  return (
    <>
      <PageTitle>Overview</PageTitle>
      <SimpleGrid cols={{ base: 1, sm: 3 }} mb="lg">
        <AgentCount status="online" label="online" />
        <AgentCount status="offline" label="offline" />
        <ActiveRollouts />
      </SimpleGrid>
      <Title order={3} size="h4" mb="xs">
        Latest events
      </Title>
      <LatestEvents />
    </>
  );
}
