/**
 * One rollout: its state and why, what it pushes to whom and how, its progress overall, per
 * batch and of its rollback, and each agent's result (the API's cursor pages, in the URL).
 * The hub's `rollout.*` events for this rollout refresh it as they arrive; operators get the
 * operations its state allows.
 */
import { Anchor, Badge, Button, Code, Group, Skeleton, Stack, Table, Text } from '@mantine/core';
import { keepPreviousData, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useParams, useSearchParams } from 'react-router';
import { api, ok, type Schemas } from '../../api/client';
import { useLiveRefresh, type CloudEvent } from '../../api/live';
import { may, useSession } from '../../api/session';
import { ColumnHeaders } from '../../components/ColumnHeaders';
import { CursorPager } from '../../components/CursorPager';
import { EmptyRow } from '../../components/EmptyRow';
import { PageTitle } from '../../components/PageTitle';
import { ProblemAlert } from '../../components/ProblemAlert';
import { StateFilter } from '../../components/StateFilter';
import { Facts, Section } from '../AgentDetail';
import { Timeline, timelineKey } from './Timeline';
import { ConfigurationLink } from '../configurations/shared';
import { RolloutOperations } from './RolloutOperations';
import { describeStrategy } from './StrategyFields';
import { RolloutTarget } from './Target';
import { RolloutStateBadge } from './rolloutStates';
import { ProgressRow, ProgressTable } from './Progress';

type Rollout = Schemas['Rollout'];
type AgentResult = Schemas['RolloutAgent'];
const AGENT_STATES: readonly AgentResult['state'][] = [
  'pending',
  'applying',
  'deferred',
  'succeeded',
  'failed',
  'skipped',
];
const AGENTS_PAGE = 25;
const LIVE = ['rollout.*'];

/** The rollout with its ETag, which every operation sends back as If-Match. */
function useRollout(id: string) {
  return useQuery({
    queryKey: ['rollouts', 'one', id],
    queryFn: async () => {
      const call = api.GET('/api/rollouts/{id}', { params: { path: { id } } });
      const rollout = await ok(call);
      return { rollout, etag: (await call).response.headers.get('ETag') };
    },
  });
}

type AgentsQuery = { state?: AgentResult['state']; cursor?: string };

function agentsQueryFrom(params: URLSearchParams): AgentsQuery {
  const state = AGENT_STATES.find((known) => known === params.get('state'));
  return { state, cursor: params.get('cursor') || undefined };
}

function useRolloutAgents(id: string, query: AgentsQuery) {
  return useQuery({
    queryKey: ['rollouts', 'agents', id, query],
    queryFn: () =>
      ok(api.GET('/api/rollouts/{id}/agents', { params: { path: { id }, query: { ...query, limit: AGENTS_PAGE } } })),
    placeholderData: keepPreviousData,
  });
}

const when = (time: string | null) => (time ? new Date(time).toLocaleString() : 'not yet');

/** What a rollback did, in words: a rollback that restored nobody says so. */
function rollbackOutcome(rollback: Rollout['rollback']): string {
  if (!rollback) return 'nothing was restored: no agent had been pushed';
  const { pending, applying, succeeded, failed, skipped } = rollback;
  const total = pending + applying + succeeded + failed + skipped;
  const counts = `${succeeded} of ${total} restored, ${failed} failed, ${skipped} skipped`;
  if (pending + applying > 0) return `${counts}, ${pending + applying} under way`;
  if (succeeded === 0) return `nothing was restored (${counts}): no agent runs the previous version because of it`;
  return counts;
}

function RolloutFacts({ rollout }: { rollout: Rollout }) {
  return (
    <Section title="Rollout">
      <Facts
        rows={[
          ['State', <RolloutStateBadge key="state" state={rollout.state} />],
          // Only when there is one: a rollout an operator paused has none to give.
          ...(rollout.reason ? [['Reason', rollout.reason] as [string, string]] : []),
          ...(rollout.rollback || rollout.state === 'rolled-back'
            ? [['Rollback', rollbackOutcome(rollout.rollback)] as [string, string]]
            : []),
          ['Description', rollout.description ?? 'none'],
          [
            'Configuration',
            <ConfigurationLink key="configuration" id={rollout.configurationId} version={rollout.version} />,
          ],
          ['Target', <RolloutTarget key="target" target={rollout.target} />],
          ['Strategy', describeStrategy(rollout.strategy)],
          ['Current batch', String(rollout.currentBatch)],
          ['Created', `${rollout.createdBy}, ${when(rollout.createdAt)}`],
          ...(rollout.startAt ? [['Starts at', when(rollout.startAt)] as [string, string]] : []),
          ...(rollout.nextWindowAt
            ? [['Next batch', `when a window opens, ${when(rollout.nextWindowAt)}`] as [string, string]]
            : []),
          ['Started', when(rollout.startedAt)],
          ['Finished', when(rollout.finishedAt)],
          ['Id', <Code key="id">{rollout.id}</Code>],
        ]}
      />
    </Section>
  );
}

function Progress({ rollout }: { rollout: Rollout }) {
  return (
    <ProgressTable>
      <ProgressRow name="All" counts={rollout.progress} />
      {rollout.batches.map((batch) => (
        <ProgressRow key={batch.batch} name={`Batch ${batch.batch}`} counts={batch} />
      ))}
      {rollout.rollback && <ProgressRow name="Rollback" counts={rollout.rollback} />}
    </ProgressTable>
  );
}

// Filled badges in dark shades (white text at 4.5:1); deferred and failed stand out.
const STATE_COLORS: Partial<Record<AgentResult['state'], string>> = {
  succeeded: 'teal.9',
  failed: 'red.9',
  deferred: 'yellow.9',
  applying: 'blue.9',
  skipped: 'gray.8',
};

/** Failed by the health gate: unhealthy or disconnecting after it applied (the reason says which). */
const byHealthGate = (agent: AgentResult) =>
  agent.state === 'failed' && /^(unhealthy for|disconnected)/.test(agent.error ?? '');

function AgentState({ agent }: { agent: AgentResult }) {
  return (
    <Group gap={4} wrap="nowrap">
      <Badge variant="filled" color={STATE_COLORS[agent.state] ?? 'dark.6'} miw="max-content">
        {agent.state}
      </Badge>
      {byHealthGate(agent) && (
        <Badge variant="outline" color="red.9" miw="max-content">
          health gate
        </Badge>
      )}
    </Group>
  );
}

/** What happened to one agent in this rollout, in order (`GET …/agents/{agentId}/history`), read when opened. */
function AgentHistory({ rolloutId, agentId }: { rolloutId: string; agentId: string }) {
  const history = useQuery({
    queryKey: ['rollouts', 'agents', rolloutId, 'history', agentId],
    queryFn: () =>
      ok(
        api.GET('/api/rollouts/{id}/agents/{agentId}/history', {
          params: { path: { id: rolloutId, agentId }, query: { limit: 100 } },
        }),
      ),
  });
  if (history.isError) return <ProblemAlert error={history.error} />;
  if (!history.data) return <Text size="sm">Reading its history…</Text>;
  return (
    <Table aria-label="Agent history" withRowBorders={false}>
      <Table.Tbody>
        {history.data.items.map((entry) => (
          <Table.Tr key={`${entry.at} ${entry.kind}`}>
            <Table.Td>{new Date(entry.at).toLocaleString()}</Table.Td>
            <Table.Td>{entry.kind}</Table.Td>
            <Table.Td>{entry.version !== null ? `v${entry.version}` : ''}</Table.Td>
            <Table.Td>{entry.batch !== null ? `batch ${entry.batch}` : ''}</Table.Td>
            <Table.Td>{entry.detail ?? ''}</Table.Td>
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  );
}

function AgentRows({ rolloutId, agents }: { rolloutId: string; agents: AgentResult[] }) {
  const [open, setOpen] = useState<string | null>(null);
  if (agents.length === 0) {
    return <EmptyRow columns={7}>No agent of this rollout matches.</EmptyRow>;
  }
  return agents.flatMap((agent) => [
    <Table.Tr key={agent.agentId}>
      <Table.Td>
        {/* By name, with the id: agents of one fleet often share a name (a host name, a role). */}
        <Anchor component={Link} to={`/agents/${agent.agentId}`}>
          {agent.agentName ?? agent.agentId}
        </Anchor>
        {agent.agentName !== null && (
          <Text size="xs" ff="monospace">
            {agent.agentId}
          </Text>
        )}
      </Table.Td>
      <Table.Td>{agent.batch ?? ''}</Table.Td>
      <Table.Td>
        <AgentState agent={agent} />
      </Table.Td>
      <Table.Td>{agent.error ?? ''}</Table.Td>
      <Table.Td>{agent.previous ? `v${agent.previous.version}` : 'none'}</Table.Td>
      <Table.Td>
        {agent.rollback ? `${agent.rollback.state}${agent.rollback.error ? `: ${agent.rollback.error}` : ''}` : ''}
      </Table.Td>
      <Table.Td>
        <Button
          variant="default"
          size="compact-sm"
          aria-expanded={open === agent.agentId}
          aria-label={`History of ${agent.agentName ?? agent.agentId}`}
          onClick={() => setOpen(open === agent.agentId ? null : agent.agentId)}
        >
          History
        </Button>
      </Table.Td>
    </Table.Tr>,
    ...(open === agent.agentId
      ? [
          <Table.Tr key={`${agent.agentId}-history`}>
            <Table.Td colSpan={7}>
              <AgentHistory rolloutId={rolloutId} agentId={agent.agentId} />
            </Table.Td>
          </Table.Tr>,
        ]
      : []),
  ]);
}

function AgentResults({ id }: { id: string }) {
  const [params, setParams] = useSearchParams();
  const query = agentsQueryFrom(params);
  const agents = useRolloutAgents(id, query);
  return (
    <Section title="Agents">
      <StateFilter label="Agent state" states={AGENT_STATES} state={query.state} setParams={setParams} mb="sm" />
      {agents.isError && <ProblemAlert error={agents.error} mb="sm" />}
      <Table striped aria-label="Agent results">
        <ColumnHeaders columns={['Agent', 'Batch', 'State', 'Error', 'Previous', 'Rollback', 'History']} />
        <Table.Tbody>
          <AgentRows rolloutId={id} agents={agents.data?.items ?? []} />
        </Table.Tbody>
      </Table>
      <CursorPager filters={query} nextCursor={agents.data?.nextCursor} setParams={setParams} mt="sm" />
    </Section>
  );
}

export function RolloutDetailPage() {
  const { id = '' } = useParams();
  const session = useSession();
  const queryClient = useQueryClient();
  const found = useRollout(id);
  const queries = [['rollouts', 'one', id], ['rollouts', 'agents', id], timelineKey(id)];
  useLiveRefresh(LIVE, queries, (event: CloudEvent) => event.subject === id || event.data.rolloutId === id);
  const refresh = () => void queryClient.invalidateQueries({ queryKey: ['rollouts'] });
  const rollout = found.data?.rollout;
  return (
    <Stack gap="md">
      <Anchor component={Link} to="/rollouts">
        ← All rollouts
      </Anchor>
      <PageTitle>{rollout ? (rollout.name ?? `Rollout ${rollout.id}`) : 'Rollout'}</PageTitle>
      {found.isError && <ProblemAlert error={found.error} />}
      <Skeleton visible={found.isPending}>
        {rollout && session.data && may(session.data, 'operate') && (
          <RolloutOperations id={rollout.id} state={rollout.state} etag={found.data?.etag ?? null} onDone={refresh} />
        )}
        {rollout && (
          <Stack gap="md">
            <RolloutFacts rollout={rollout} />
            <Progress rollout={rollout} />
            <Timeline id={rollout.id} />
          </Stack>
        )}
      </Skeleton>
      {rollout && <AgentResults id={id} />}
    </Stack>
  );
}
