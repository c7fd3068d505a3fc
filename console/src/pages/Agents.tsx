/** The agents of the tenant: filters and the API's cursor pages, all in the URL. */
import { Anchor, Badge, Checkbox, Skeleton, Stack, Table, Text, UnstyledButton } from '@mantine/core';
import { keepPreviousData, useQuery, useQueryClient, type QueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useSearchParams } from 'react-router';
import { api, ok, type Schemas } from '../api/client';
import { useLiveRefresh } from '../api/live';
import { may, useSession } from '../api/session';
import { AgentBulkActions } from './AgentBulkActions';
import { CursorPager } from '../components/CursorPager';
import { EmptyRow } from '../components/EmptyRow';
import { PageTitle } from '../components/PageTitle';
import { ProblemAlert } from '../components/ProblemAlert';
import {
  AGENT_HEALTHS,
  AGENT_STATUSES,
  agentQuery,
  APPLIED_STATUSES,
  filtersFrom,
  PAGE_SIZE,
  searchOf,
  type AgentFilters,
} from './agentFilters';
import { FilterForm, type FilterField } from '../components/FilterForm';
import { ConfigurationLink, configurationQuery } from './configurations/shared';
import { GroupLink, groupQuery } from './groups/shared';
import { searchConfigurations, searchGroups } from './groups/SearchSelect';

// Filled badges in dark shades: white text on them keeps 4.5:1 contrast on any row.
const STATUS_COLORS: Record<string, string> = { online: 'teal.9', offline: 'gray.8', revoked: 'red.9' };

export function StatusBadge({ status }: { status: Schemas['Agent']['status'] }) {
  return (
    // The whole word, however narrow the column: a table squeezes a badge to its ellipsis otherwise.
    <Badge variant="filled" color={STATUS_COLORS[status] ?? 'blue.9'} miw="max-content">
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

const nameOfGroup = async (id: string, queries: QueryClient) => (await queries.fetchQuery(groupQuery(id))).group.name;
const nameOfConfiguration = async (id: string, queries: QueryClient) =>
  (await queries.fetchQuery(configurationQuery(id))).name;

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
  {
    name: 'health',
    label: 'Health',
    kind: 'choice',
    choices: AGENT_HEALTHS.map((value) => ({ value, label: value === 'unknown' ? 'not reported' : value })),
  },
  { name: 'applied', label: 'Last apply', kind: 'choice', choices: APPLIED_STATUSES },
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

/** The chosen agents of the page shown, by id (operators choose agents to act on them at once). */
interface Choosing {
  chosen: ReadonlySet<string>;
  toggle: (id: string) => void;
}

function AgentRows({ agents, choosing }: { agents: Schemas['Agent'][]; choosing?: Choosing }) {
  if (agents.length === 0) {
    return <EmptyRow columns={COLUMNS.length + (choosing ? 1 : 0)}>No agent matches these filters.</EmptyRow>;
  }
  return agents.map((agent) => (
    <Table.Tr key={agent.id}>
      {choosing && (
        <Table.Td>
          <Checkbox
            aria-label={`Choose ${agent.name}`}
            checked={choosing.chosen.has(agent.id)}
            onChange={() => choosing.toggle(agent.id)}
          />
        </Table.Td>
      )}
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

/** The Name header sorts: by id (the API's default) → A–Z → Z–A, from the first page. */
function NameHeader({ filters, setParams }: { filters: AgentFilters; setParams: (params: URLSearchParams) => void }) {
  const next = { undefined: 'name', name: '-name', '-name': undefined } as const;
  const sorted = { name: 'ascending', '-name': 'descending' } as const;
  const sort = () => setParams(searchOf({ ...filters, cursor: undefined, sort: next[`${filters.sort}`] }));
  return (
    <Table.Th scope="col" aria-sort={filters.sort ? sorted[filters.sort] : 'none'}>
      <UnstyledButton onClick={sort} fw={700} fz="sm">
        Name {filters.sort === 'name' ? '▲' : filters.sort === '-name' ? '▼' : ''}
      </UnstyledButton>
    </Table.Th>
  );
}

export function AgentsPage() {
  const [params, setParams] = useSearchParams();
  const filters = filtersFrom(params);
  const agents = useAgents(filters);
  const session = useSession();
  const queryClient = useQueryClient();
  const shown = agents.data?.items ?? [];
  // Chosen agents belong to the page shown: another page, filter or order starts afresh.
  const [chosen, setChosen] = useState<{ page: string; ids: ReadonlySet<string> }>({ page: '', ids: new Set() });
  const page = params.toString();
  const ids = chosen.page === page ? chosen.ids : new Set<string>();
  const choose = (next: Set<string>) => setChosen({ page, ids: next });
  const choosing: Choosing | undefined =
    session.data && may(session.data, 'operate')
      ? {
          chosen: ids,
          toggle: (id) => {
            const next = new Set(ids);
            if (!next.delete(id)) next.add(id);
            choose(next);
          },
        }
      : undefined;
  const chosenAgents = shown.filter((agent) => ids.has(agent.id));
  const all = shown.length > 0 && chosenAgents.length === shown.length;
  // New filters keep the order chosen in the Name header.
  const keepingOrder = (search: URLSearchParams) => {
    if (filters.sort) search.set('sort', filters.sort);
    setParams(search);
  };
  return (
    <>
      <PageTitle>Agents</PageTitle>
      <FilterForm label="Filter agents" fields={INVENTORY_FILTERS} values={filters} apply={keepingOrder} />
      {agents.isError && <ProblemAlert error={agents.error} mb="md" />}
      {session.data && choosing && (
        <AgentBulkActions
          agents={chosenAgents}
          session={session.data}
          onDone={() => {
            choose(new Set());
            void queryClient.invalidateQueries({ queryKey: ['agents'] });
          }}
        />
      )}
      <Skeleton visible={agents.isPending}>
        <Table striped highlightOnHover aria-label="Agents" data-testid="agents-table">
          <Table.Thead>
            <Table.Tr>
              {choosing && (
                <Table.Th scope="col">
                  <Checkbox
                    aria-label="Choose every agent on this page"
                    checked={all}
                    indeterminate={chosenAgents.length > 0 && !all}
                    onChange={() => choose(all ? new Set() : new Set(shown.map((agent) => agent.id)))}
                  />
                </Table.Th>
              )}
              <NameHeader filters={filters} setParams={setParams} />
              {COLUMNS.slice(1).map((column) => (
                <Table.Th key={column} scope="col">
                  {column}
                </Table.Th>
              ))}
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            <AgentRows agents={shown} choosing={choosing} />
          </Table.Tbody>
        </Table>
      </Skeleton>
      <CursorPager filters={filters} nextCursor={agents.data?.nextCursor} setParams={setParams} />
    </>
  );
}
