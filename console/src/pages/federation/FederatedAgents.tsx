/**
 * The agents of the tenant's peers, merged by the API (GET /api/federation/agents): the
 * filters of the agents list and the API's opaque cursor, all in the URL. How each peer
 * answered this page is shown as it is: a peer that failed, timed out, could not be reached
 * or was skipped is a line of the page, not a failure of it (the other peers' agents show).
 */
import { Alert, Anchor, Badge, Code, Skeleton, Table, Text } from '@mantine/core';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Link, useSearchParams } from 'react-router';
import { api, ok, type Schemas } from '../../api/client';
import { ColumnHeaders } from '../../components/ColumnHeaders';
import { CursorPager } from '../../components/CursorPager';
import { EmptyRow } from '../../components/EmptyRow';
import { PageTitle } from '../../components/PageTitle';
import { ProblemAlert } from '../../components/ProblemAlert';
import { AGENT_FILTERS, StatusBadge } from '../Agents';
import { agentQuery, filtersFrom } from '../agentFilters';
import { FEDERATION_KEY, FederationNav, PAGE_SIZE, when } from './shared';
import { FilterForm } from '../../components/FilterForm';

type Outcome = Schemas['FederatedPeerOutcome'];

// Filled badges in dark shades: white text on them keeps 4.5:1 contrast on any row.
const OUTCOME_COLORS: Record<Outcome['status'], string> = {
  ok: 'teal.9',
  failed: 'red.9',
  timeout: 'red.9',
  unreachable: 'red.9',
  skipped: 'gray.8',
};

/** How each peer answered this page: what a client that needs every agent must check. */
function PeerAnswers({ peers }: { peers: Outcome[] }) {
  const missing = peers.filter((peer) => peer.status !== 'ok');
  return (
    <>
      {missing.length > 0 && (
        <Alert variant="default" title="Not every peer answered" role="status" mb="sm">
          This page lacks the agents of {missing.map((peer) => peer.name).join(', ')}. The other peers’ agents are
          shown; the next page asks a peer that failed again from where it was.
        </Alert>
      )}
      <Table aria-label="Peer answers" mb="md">
        <ColumnHeaders columns={['Peer', 'Answer', 'Error']} />
        <Table.Tbody>
          {peers.length === 0 && (
            <Table.Tr>
              <Table.Td colSpan={3}>
                No peer:{' '}
                <Anchor component={Link} to="/federation" underline="always">
                  pair with another installation
                </Anchor>{' '}
                to list its agents here.
              </Table.Td>
            </Table.Tr>
          )}
          {peers.map((peer) => (
            <Table.Tr key={peer.id}>
              <Table.Th scope="row">{peer.name}</Table.Th>
              <Table.Td>
                <Badge variant="filled" color={OUTCOME_COLORS[peer.status]}>
                  {peer.status}
                </Badge>
              </Table.Td>
              <Table.Td>{peer.error ?? ''}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </>
  );
}

function AgentRows({ agents }: { agents: Schemas['FederatedAgent'][] }) {
  if (agents.length === 0) {
    return <EmptyRow columns={5}>No agent of an answering peer matches these filters.</EmptyRow>;
  }
  return agents.map((agent) => (
    <Table.Tr key={`${agent.peer.id}/${agent.id}`}>
      <Table.Td>{agent.name}</Table.Td>
      <Table.Td>{agent.peer.name}</Table.Td>
      <Table.Td>
        <StatusBadge status={agent.status} />
      </Table.Td>
      <Table.Td>{when(agent.lastSeenAt)}</Table.Td>
      <Table.Td>
        <Code>{agent.id}</Code>
      </Table.Td>
    </Table.Tr>
  ));
}

export function FederatedAgentsPage() {
  const [params, setParams] = useSearchParams();
  const filters = filtersFrom(params);
  const agents = useQuery({
    queryKey: [...FEDERATION_KEY, 'agents', filters],
    queryFn: () =>
      ok(api.GET('/api/federation/agents', { params: { query: { ...agentQuery(filters), limit: PAGE_SIZE } } })),
    placeholderData: keepPreviousData,
  });
  return (
    <>
      <PageTitle>Federated agents</PageTitle>
      <FederationNav />
      <Text size="sm" mb="md">
        The agents of this installation’s peers, as each lists them. This installation’s own agents are under{' '}
        <Anchor component={Link} to="/agents" underline="always">
          Agents
        </Anchor>
        .
      </Text>
      <FilterForm label="Filter federated agents" fields={AGENT_FILTERS} values={filters} apply={setParams} />
      {agents.isError && <ProblemAlert error={agents.error} mb="md" />}
      <Skeleton visible={agents.isPending}>
        <PeerAnswers peers={agents.data?.peers ?? []} />
        <Table striped highlightOnHover aria-label="Federated agents">
          <ColumnHeaders columns={['Name', 'Peer', 'Status', 'Last seen', 'Id']} />
          <Table.Tbody>
            <AgentRows agents={agents.data?.items ?? []} />
          </Table.Tbody>
        </Table>
      </Skeleton>
      <CursorPager filters={filters} nextCursor={agents.data?.nextCursor} setParams={setParams} />
    </>
  );
}
