/** The agents of the tenant: filters and the API's cursor pages, all in the URL. */
import { Anchor, Badge, Skeleton, Stack, Table, Text } from '@mantine/core';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Link, useSearchParams } from 'react-router';
import { api, ok, type Schemas } from '../api/client';
import { useLiveRefresh } from '../api/live';
import { CursorPager } from '../components/CursorPager';
import { EmptyRow } from '../components/EmptyRow';
import { PageTitle } from '../components/PageTitle';
import { ProblemAlert } from '../components/ProblemAlert';
import { AGENT_STATUSES, agentQuery, filtersFrom, PAGE_SIZE, type AgentFilters } from './agentFilters';
import { FilterForm, type FilterField } from '../components/FilterForm';
import { ConfigurationLink } from './configurations/shared';
import { GroupLink } from './groups/shared';
import { searchConfigurations, searchGroups } from './groups/SearchSelect';

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
    queryFn: () => ok(api.GET('/api/agents', { params: { query: { ...agentQuery(filters), limit: PAGE_SIZE } } })),
    placeholderData: keepPreviousData,
  });
}

/** The agents' filters, as `GET /api/agents` takes them; the federated agents page has them too. */
export const AGENT_FILTERS: FilterField[] = [
  { name: 'q', label: 'Name or id', kind: 'text' },
  { name: 'status', label: 'Status', kind: 'choice', choices: AGENT_STATUSES },
  { name: 'label', label: 'Label', kind: 'text', placeholder: 'key:value' },
];

const nameOfGroup = async (id: string) => (await ok(api.GET('/api/groups/{id}', { params: { path: { id } } }))).name;
const nameOfConfiguration = async (id: string) =>
  (await ok(api.GET('/api/configurations/{id}', { params: { path: { id } } }))).name;

/** This installation's inventory adds what only its own objects mean: a group, a desired configuration and version. */
const INVENTORY_FILTERS: FilterField[] = [
  ...AGENT_FILTERS,
  { name: 'groupId', label: 'Group', kind: 'search', search: searchGroups, nameOf: nameOfGroup },
  {
    name: 'configurationId',
    label: 'Desired configuration',
    kind: 'search',
    search: searchConfigurations,
    nameOf: nameOfConfiguration,
  },
  { name: 'version', label: 'Version', kind: 'text', placeholder: 'with a configuration' },
];

/** Healthy, unhealthy (with the component's error), or not reported. */
function HealthCell({ health }: { health: Schemas['Agent']['health'] }) {
  if (!health) return <Text size="sm">not reported</Text>;
  if (health.healthy === true) return <Text size="sm">healthy</Text>;
  const error = typeof health.lastError === 'string' ? health.lastError : '';
  return (
    <Badge variant="filled" color="red.9" title={error}>
      unhealthy
    </Badge>
  );
}

/** What it should run against what it runs: the same version once applied, else both. */
function ConfigurationCell({ agent }: { agent: Schemas['Agent'] }) {
  const { desired, applied } = agent;
  if (!desired) return <Text size="sm">none</Text>;
  const behind = applied?.hash !== desired.hash || applied?.status !== 'APPLIED';
  return (
    <Stack gap={0}>
      <ConfigurationLink id={desired.configurationId} version={desired.version ?? 0} />
      {behind && (
        <Text size="xs">
          runs {applied?.version ? `v${applied.version}` : 'nothing of it'}
          {applied?.status && applied.status !== 'APPLIED' ? ` (${applied.status.toLowerCase()})` : ''}
        </Text>
      )}
    </Stack>
  );
}

const COLUMNS = [
  'Name',
  'Status',
  'Health',
  'Group',
  'Host',
  'Configuration (desired, and what runs when behind)',
  'Last seen',
];

function AgentRows({ agents }: { agents: Schemas['Agent'][] }) {
  if (agents.length === 0) {
    return <EmptyRow columns={COLUMNS.length}>No agent matches these filters.</EmptyRow>;
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
      <Table.Td>
        <HealthCell health={agent.health} />
      </Table.Td>
      <Table.Td>
        <GroupLink id={agent.groupId} />
      </Table.Td>
      <Table.Td>{typeof agent.description['host.name'] === 'string' ? agent.description['host.name'] : ''}</Table.Td>
      <Table.Td>
        <ConfigurationCell agent={agent} />
      </Table.Td>
      <Table.Td>{agent.lastSeenAt ? new Date(agent.lastSeenAt).toLocaleString() : 'never'}</Table.Td>
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
      <FilterForm label="Filter agents" fields={INVENTORY_FILTERS} values={filters} apply={setParams} />
      {agents.isError && <ProblemAlert error={agents.error} mb="md" />}
      <Skeleton visible={agents.isPending}>
        <Table striped highlightOnHover aria-label="Agents" data-testid="agents-table">
          <Table.Thead>
            <Table.Tr>
              {COLUMNS.map((column) => (
                <Table.Th key={column} scope="col">
                  {column}
                </Table.Th>
              ))}
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
