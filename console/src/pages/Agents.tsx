/** The agents of the tenant: filters and the API's cursor pages, all in the URL. */
import { Anchor, Badge, Button, Group, Select, Skeleton, Table, TextInput } from '@mantine/core';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { Link, useSearchParams } from 'react-router';
import { api, ok, type Schemas } from '../api/client';
import { CursorPager } from '../components/CursorPager';
import { EmptyRow } from '../components/EmptyRow';
import { PageTitle } from '../components/PageTitle';
import { ProblemAlert } from '../components/ProblemAlert';
import { AGENT_STATUSES, filtersFrom, PAGE_SIZE, searchOf, type AgentFilters } from './agentFilters';

// Filled badges in dark shades: white text on them keeps 4.5:1 contrast on any row.
const STATUS_COLORS: Record<string, string> = { online: 'teal.9', offline: 'gray.8', revoked: 'red.9' };

export function StatusBadge({ status }: { status: Schemas['Agent']['status'] }) {
  return (
    <Badge variant="filled" color={STATUS_COLORS[status] ?? 'blue.9'}>
      {status}
    </Badge>
  );
}

function useAgents(filters: AgentFilters) {
  return useQuery({
    queryKey: ['agents', filters],
    queryFn: () => ok(api.GET('/api/agents', { params: { query: { ...filters, limit: PAGE_SIZE } } })),
    placeholderData: keepPreviousData,
  });
}

/** The agents' filters, applied together from the first page; the federated agents page has them too. */
export function AgentFilterForm({
  filters,
  apply,
  name = 'Filter agents',
}: {
  filters: AgentFilters;
  apply: (next: AgentFilters) => void;
  /** The search form's accessible name. */
  name?: string;
}) {
  const [q, setQ] = useState(filters.q ?? '');
  const [label, setLabel] = useState(filters.label ?? '');
  const [status, setStatus] = useState<string | null>(filters.status ?? null);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    apply(filtersFrom(searchOf({ q, label, status: (status ?? undefined) as AgentFilters['status'] })));
  };
  return (
    <form onSubmit={submit} role="search" aria-label={name}>
      <Group align="end" mb="md">
        <TextInput label="Name or id" value={q} onChange={(e) => setQ(e.currentTarget.value)} />
        <Select
          label="Status"
          placeholder="Any"
          clearable
          data={AGENT_STATUSES as string[]}
          value={status}
          onChange={setStatus}
        />
        <TextInput
          label="Label"
          placeholder="key:value"
          value={label}
          onChange={(e) => setLabel(e.currentTarget.value)}
        />
        <Button type="submit">Apply filters</Button>
      </Group>
    </form>
  );
}

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
  const { cursor: _cursor, ...withoutCursor } = filters;
  return (
    <>
      <PageTitle>Agents</PageTitle>
      {/* Drawn anew when the filters in the URL change (back, forward, a link), not when only the page does. */}
      <AgentFilterForm
        key={searchOf(withoutCursor).toString()}
        filters={filters}
        apply={(next) => setParams(searchOf(next))}
      />
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
