/** The agents of the tenant: filters and the API's cursor pages, all in the URL. */
import { Anchor, Badge, Button, Group, Select, Skeleton, Table, TextInput } from '@mantine/core';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { Link, useSearchParams } from 'react-router';
import { api, ok, type Schemas } from '../api/client';
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

function Filters({ filters, apply }: { filters: AgentFilters; apply: (next: AgentFilters) => void }) {
  const [q, setQ] = useState(filters.q ?? '');
  const [label, setLabel] = useState(filters.label ?? '');
  const [status, setStatus] = useState<string | null>(filters.status ?? null);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    apply(filtersFrom(searchOf({ q, label, status: (status ?? undefined) as AgentFilters['status'] })));
  };
  return (
    <form onSubmit={submit} role="search" aria-label="Filter agents">
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
    return (
      <Table.Tr>
        <Table.Td colSpan={4}>No agent matches these filters.</Table.Td>
      </Table.Tr>
    );
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
      <Filters key={searchOf(withoutCursor).toString()} filters={filters} apply={(next) => setParams(searchOf(next))} />
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
      <Group mt="md">
        <Button variant="default" disabled={!filters.cursor} onClick={() => setParams(searchOf(withoutCursor))}>
          First page
        </Button>
        <Button
          variant="default"
          disabled={!agents.data?.nextCursor}
          onClick={() => setParams(searchOf({ ...filters, cursor: agents.data?.nextCursor ?? undefined }))}
        >
          Next page
        </Button>
      </Group>
    </>
  );
}
