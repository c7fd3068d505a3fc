/** The agents of the tenant: filters and the API's cursor pages, all in the URL. */
import { Anchor, Badge, Skeleton, Table } from '@mantine/core';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Link, useSearchParams } from 'react-router';
import { api, ok, type Schemas } from '../api/client';
import { useLiveRefresh } from '../api/live';
import { CursorPager } from '../components/CursorPager';
import { EmptyRow } from '../components/EmptyRow';
import { PageTitle } from '../components/PageTitle';
import { ProblemAlert } from '../components/ProblemAlert';
import { AGENT_STATUSES, filtersFrom, PAGE_SIZE, type AgentFilters } from './agentFilters';
import { FilterForm, type FilterField } from '../components/FilterForm';

// Filled badges in dark shades: white text on them keeps 4.5:1 contrast on any row.
const STATUS_COLORS: Record<string, string> = { online: 'teal.9', offline: 'gray.8', revoked: 'red.9' };

export function StatusBadge({ status }: { status: Schemas['Agent']['status'] }) {
  return (
    <Badge variant="filled" color={STATUS_COLORS[status] ?? 'blue.9'}>
      {status}
    </Badge>
  );
}

/** Every change of an agent: enrolled, connected, disconnected, moved, approved, revoked… */
export const AGENT_EVENTS = ['agent.*'];

function useAgents(filters: AgentFilters) {
  // The page shown is read again as agents change (at most once a second).
  useLiveRefresh(AGENT_EVENTS, [['agents', filters]]);
  return useQuery({
    queryKey: ['agents', filters],
    queryFn: () => ok(api.GET('/api/agents', { params: { query: { ...filters, limit: PAGE_SIZE } } })),
    placeholderData: keepPreviousData,
  });
}

/** The agents' filters, as `GET /api/agents` takes them; the federated agents page has them too. */
export const AGENT_FILTERS: FilterField[] = [
  { name: 'q', label: 'Name or id', kind: 'text' },
  { name: 'status', label: 'Status', kind: 'choice', choices: AGENT_STATUSES },
  { name: 'label', label: 'Label', kind: 'text', placeholder: 'key:value' },
];

function AgentRows({ agents }: { agents: Schemas['Agent'][] }) {
  if (agents.length === 0) {
    return <EmptyRow columns={4}>No agent matches these filters.</EmptyRow>;
  }
  return agents.map((agent) => (
    <Table.Tr key={agent.id}>
      <Table.Td>
        <Anchor component={Link} to={`/agents/${agent.id}`}>
          {agent.name}
        </Anchor>
      </Table.Td>
      <Table.Td>
        <StatusBadge status={agent.status} />
      </Table.Td>
      <Table.Td>{agent.lastSeenAt ? new Date(agent.lastSeenAt).toLocaleString() : 'never'}</Table.Td>
      <Table.Td>{agent.desired ? `v${agent.desired.version ?? '?'}` : 'none'}</Table.Td>
    </Table.Tr>
  ));
}

export function AgentsPage() {
  const [params, setParams] = useSearchParams();
  const filters = filtersFrom(params);
  const agents = useAgents(filters);
  return (
    <>
      <PageTitle>Agents</PageTitle>
      <FilterForm label="Filter agents" fields={AGENT_FILTERS} values={filters} apply={setParams} />
      {agents.isError && <ProblemAlert error={agents.error} mb="md" />}
      <Skeleton visible={agents.isPending}>
        <Table striped highlightOnHover aria-label="Agents" data-testid="agents-table">
          <Table.Thead>
            <Table.Tr>
              <Table.Th scope="col">Name</Table.Th>
              <Table.Th scope="col">Status</Table.Th>
              <Table.Th scope="col">Last seen</Table.Th>
              <Table.Th scope="col">Desired</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            <AgentRows agents={agents.data?.items ?? []} />
          </Table.Tbody>
        </Table>
      </Skeleton>
      <CursorPager filters={filters} nextCursor={agents.data?.nextCursor} setParams={setParams} />
    </>
  );
}
