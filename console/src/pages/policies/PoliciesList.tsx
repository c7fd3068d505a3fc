/**
 * The tenant's policies, oldest first as the API lists them (built-ins included): the API's
 * filters (approval state, enabled) and cursor pages, all in the URL. Operators and admins
 * write a new one; operators also get the dry run.
 */
import { Anchor, Button, Group, Select, Skeleton, Table } from '@mantine/core';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Link, useSearchParams } from 'react-router';
import { api, ok } from '../../api/client';
import { useLiveRefresh } from '../../api/live';
import { may, useSession } from '../../api/session';
import { CursorPager } from '../../components/CursorPager';
import { EmptyRow } from '../../components/EmptyRow';
import { PageTitle } from '../../components/PageTitle';
import { ProblemAlert } from '../../components/ProblemAlert';
import { searchOf } from '../agentFilters';
import { POLICIES_KEY, POLICY_EVENTS, POLICY_STATES, PolicyBadges, type Policy, type PolicyState } from './shared';

const PAGE_SIZE = 25;
const LIST_QUERIES = [[...POLICIES_KEY, 'list']];

/** The list's filters and page, named as the API's query parameters. */
interface ListQuery {
  state?: PolicyState;
  enabled?: 'true' | 'false';
  cursor?: string;
}

function queryFrom(params: URLSearchParams): ListQuery {
  const state = POLICY_STATES.find((known) => known === params.get('state'));
  const enabled = params.get('enabled');
  return {
    state,
    enabled: enabled === 'true' || enabled === 'false' ? enabled : undefined,
    cursor: params.get('cursor') || undefined,
  };
}

function usePolicies(query: ListQuery) {
  return useQuery({
    queryKey: [...POLICIES_KEY, 'list', query],
    queryFn: () => ok(api.GET('/api/policies', { params: { query: { ...query, limit: PAGE_SIZE } } })),
    placeholderData: keepPreviousData,
  });
}

function PolicyRows({ policies }: { policies: Policy[] }) {
  if (policies.length === 0) {
    return <EmptyRow columns={4}>No policy matches these filters.</EmptyRow>;
  }
  return policies.map((policy) => (
    <Table.Tr key={policy.id}>
      <Table.Td>
        <Anchor component={Link} to={`/policies/${policy.id}`}>
          {policy.name}
        </Anchor>
      </Table.Td>
      <Table.Td>
        <PolicyBadges policy={policy} />
      </Table.Td>
      <Table.Td>{policy.author}</Table.Td>
      <Table.Td>{policy.approver ?? '—'}</Table.Td>
    </Table.Tr>
  ));
}

const STATE_CHOICES = [
  { value: 'draft', label: 'Approval pending' },
  { value: 'approved', label: 'Approved' },
];
const ENABLED_CHOICES = [
  { value: 'true', label: 'Enabled' },
  { value: 'false', label: 'Disabled' },
];

export function PoliciesPage() {
  const [params, setParams] = useSearchParams();
  const query = queryFrom(params);
  const policies = usePolicies(query);
  const session = useSession();
  const mayOperate = session.data !== undefined && may(session.data, 'operate');
  useLiveRefresh(POLICY_EVENTS, LIST_QUERIES);
  const filter = (next: Omit<ListQuery, 'cursor'>) => setParams(searchOf({ ...query, ...next, cursor: undefined }));
  return (
    <>
      <PageTitle>Policies</PageTitle>
      {mayOperate && (
        <Group mb="md">
          <Button component={Link} to="/policies/new">
            New policy
          </Button>
          <Button component={Link} to="/policies/dry-run" variant="default">
            Dry run
          </Button>
        </Group>
      )}
      <Group mb="md" role="search" aria-label="Filter policies">
        <Select
          label="Approval"
          placeholder="Any"
          data={STATE_CHOICES}
          value={query.state ?? null}
          onChange={(state) => filter({ state: POLICY_STATES.find((known) => known === state) })}
          clearable
          w={200}
        />
        <Select
          label="Enabled"
          placeholder="Any"
          data={ENABLED_CHOICES}
          value={query.enabled ?? null}
          onChange={(enabled) => filter({ enabled: enabled === 'true' || enabled === 'false' ? enabled : undefined })}
          clearable
          w={200}
        />
      </Group>
      {policies.isError && <ProblemAlert error={policies.error} mb="md" />}
      <Skeleton visible={policies.isPending}>
        <Table striped highlightOnHover aria-label="Policies">
          <Table.Thead>
            <Table.Tr>
              <Table.Th scope="col">Name</Table.Th>
              <Table.Th scope="col">State</Table.Th>
              <Table.Th scope="col">Author</Table.Th>
              <Table.Th scope="col">Approver</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            <PolicyRows policies={policies.data?.items ?? []} />
          </Table.Tbody>
        </Table>
      </Skeleton>
      <CursorPager filters={query} nextCursor={policies.data?.nextCursor} setParams={setParams} />
    </>
  );
}
