/**
 * One handover: its state and why, how many of its agents are in each state, and each
 * agent's state and error (the API's cursor pages, filtered by state, in the URL). Refreshed
 * live on this handover's `federation.handover.*` events (their subject is the handover).
 */
import { Anchor, Code, Skeleton, Stack, Table } from '@mantine/core';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Link, useParams, useSearchParams } from 'react-router';
import { api, ok, type Schemas } from '../../api/client';
import { useLiveRefresh, type CloudEvent } from '../../api/live';
import { ColumnHeaders } from '../../components/ColumnHeaders';
import { CursorPager } from '../../components/CursorPager';
import { EmptyRow } from '../../components/EmptyRow';
import { PageTitle } from '../../components/PageTitle';
import { ProblemAlert } from '../../components/ProblemAlert';
import { StateFilter } from '../../components/StateFilter';
import { Facts, Section } from '../AgentDetail';
import { HANDOVER_EVENTS, HandoverStateBadge } from './Handovers';
import { FEDERATION_KEY, FederationNav, PAGE_SIZE, when } from './shared';

type Handover = Schemas['Handover'];
type AgentState = Schemas['HandoverAgent']['state'];
const AGENT_STATES: readonly AgentState[] = ['pending', 'offered', 'handed-over', 'withdrawn', 'missing', 'skipped'];
const COUNTS = ['total', 'pending', 'offered', 'handedOver', 'withdrawn', 'missing', 'skipped'] as const;

const handoverKey = (id: string) => [...FEDERATION_KEY, 'handovers', 'one', id];
const agentsKey = (id: string) => [...FEDERATION_KEY, 'handovers', 'agents', id];

function HandoverFacts({ handover }: { handover: Handover }) {
  return (
    <Section title="Handover">
      <Facts
        rows={[
          ['State', <HandoverStateBadge key="state" state={handover.state} />],
          ['Reason', <span key="reason">{handover.reason ?? 'none'}</span>],
          [
            'Peer',
            handover.peerId ? (
              <Anchor key="peer" component={Link} to={`/federation/peers/${handover.peerId}`}>
                {handover.peerName}
              </Anchor>
            ) : (
              `${handover.peerName} (unpaired since)`
            ),
          ],
          ['Deadline', `${handover.deadlineSeconds} s`],
          ['Created', `${handover.createdBy}, ${when(handover.createdAt)}`],
          ['Finished', when(handover.finishedAt, 'not yet')],
          ['Id', <Code key="id">{handover.id}</Code>],
        ]}
      />
    </Section>
  );
}

function Counts({ counts }: { counts: Handover['counts'] }) {
  return (
    <Section title="Agents by state">
      <Table aria-label="Agents by state">
        <ColumnHeaders columns={['Total', 'Pending', 'Offered', 'Handed over', 'Withdrawn', 'Skipped']} />
        <Table.Tbody>
          <Table.Tr>
            {COUNTS.map((count) => (
              <Table.Td key={count}>{counts[count]}</Table.Td>
            ))}
          </Table.Tr>
        </Table.Tbody>
      </Table>
    </Section>
  );
}

function HandoverAgents({ id }: { id: string }) {
  const [params, setParams] = useSearchParams();
  const query = {
    state: AGENT_STATES.find((state) => state === params.get('state')),
    cursor: params.get('cursor') || undefined,
  };
  const agents = useQuery({
    queryKey: [...agentsKey(id), query],
    queryFn: () =>
      ok(
        api.GET('/api/federation/handovers/{id}/agents', {
          params: { path: { id }, query: { ...query, limit: PAGE_SIZE } },
        }),
      ),
    placeholderData: keepPreviousData,
  });
  const rows = agents.data?.items ?? [];
  return (
    <Section title="Agents">
      <StateFilter label="Agent state" states={AGENT_STATES} state={query.state} setParams={setParams} mb="sm" />
      {agents.isError && <ProblemAlert error={agents.error} mb="sm" />}
      <Table striped aria-label="Handover agents">
        <ColumnHeaders columns={['Agent', 'State', 'Error', 'Updated']} />
        <Table.Tbody>
          {rows.length === 0 && <EmptyRow columns={4}>No agent of this handover matches.</EmptyRow>}
          {rows.map((agent) => (
            <Table.Tr key={agent.agentId}>
              <Table.Td>
                <Anchor component={Link} to={`/agents/${agent.agentId}`}>
                  {agent.agentId}
                </Anchor>
              </Table.Td>
              <Table.Td>{agent.state}</Table.Td>
              <Table.Td>{agent.error ?? ''}</Table.Td>
              <Table.Td>{when(agent.updatedAt)}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
      <CursorPager filters={query} nextCursor={agents.data?.nextCursor} setParams={setParams} />
    </Section>
  );
}

export function HandoverDetailPage() {
  const { id = '' } = useParams();
  const found = useQuery({
    queryKey: handoverKey(id),
    queryFn: () => ok(api.GET('/api/federation/handovers/{id}', { params: { path: { id } } })),
  });
  useLiveRefresh(HANDOVER_EVENTS, [handoverKey(id), agentsKey(id)], (event: CloudEvent) => event.subject === id);
  const handover = found.data;
  return (
    <Stack gap="md">
      <Anchor component={Link} to="/federation/handovers">
        ← All handovers
      </Anchor>
      <PageTitle>{handover ? `Handover to ${handover.peerName}` : 'Handover'}</PageTitle>
      <FederationNav />
      {found.isError && <ProblemAlert error={found.error} />}
      <Skeleton visible={found.isPending}>
        {handover && (
          <Stack gap="md">
            <HandoverFacts handover={handover} />
            <Counts counts={handover.counts} />
          </Stack>
        )}
      </Skeleton>
      {handover && <HandoverAgents id={id} />}
    </Stack>
  );
}
