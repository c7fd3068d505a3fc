/** The tenant's rollouts, newest first: a state filter and the API's cursor pages, all in the URL. */
import { Anchor, Button, Skeleton, Table } from '@mantine/core';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Link, useSearchParams } from 'react-router';
import { api, ok, type Schemas } from '../../api/client';
import { useLiveRefresh } from '../../api/live';
import { may, useSession } from '../../api/session';
import { CursorPager } from '../../components/CursorPager';
import { EmptyRow } from '../../components/EmptyRow';
import { PageTitle } from '../../components/PageTitle';
import { ProblemAlert } from '../../components/ProblemAlert';
import { StateFilter } from '../../components/StateFilter';
import { isRolloutState, ROLLOUT_STATES, RolloutStateBadge, type RolloutState } from './rolloutStates';

const PAGE_SIZE = 25;
/** A rollout created, started or ended changes the list. */
const LIVE = ['rollout.*'];
const LIST_QUERIES = [['rollouts', 'list']];

type ListQuery = { state?: RolloutState; cursor?: string };

function queryFrom(params: URLSearchParams): ListQuery {
  const state = params.get('state');
  return { state: isRolloutState(state) ? state : undefined, cursor: params.get('cursor') || undefined };
}

function useRollouts(query: ListQuery) {
  return useQuery({
    queryKey: ['rollouts', 'list', query],
    queryFn: () => ok(api.GET('/api/rollouts', { params: { query: { ...query, limit: PAGE_SIZE } } })),
    placeholderData: keepPreviousData,
  });
}

function RolloutRows({ rollouts }: { rollouts: Schemas['RolloutSummary'][] }) {
  if (rollouts.length === 0) {
    return <EmptyRow columns={5}>No rollout matches this filter.</EmptyRow>;
  }
  return rollouts.map((rollout) => (
    <Table.Tr key={rollout.id}>
      <Table.Td>
        <Anchor component={Link} to={`/rollouts/${rollout.id}`}>
          {rollout.name ?? rollout.id}
        </Anchor>
      </Table.Td>
      <Table.Td>
        <RolloutStateBadge state={rollout.state} />
      </Table.Td>
      <Table.Td>v{rollout.version}</Table.Td>
      <Table.Td>{rollout.currentBatch}</Table.Td>
      <Table.Td>
        {rollout.createdBy}, {new Date(rollout.createdAt).toLocaleString()}
      </Table.Td>
    </Table.Tr>
  ));
}

export function RolloutsPage() {
  const [params, setParams] = useSearchParams();
  const query = queryFrom(params);
  const rollouts = useRollouts(query);
  const session = useSession();
  useLiveRefresh(LIVE, LIST_QUERIES);
  return (
    <>
      <PageTitle>Rollouts</PageTitle>
      {session.data && may(session.data, 'operate') && (
        <Button component={Link} to="/rollouts/new" mb="md">
          New rollout
        </Button>
      )}
      <StateFilter states={ROLLOUT_STATES} state={query.state} setParams={setParams} mb="md" />
      {rollouts.isError && <ProblemAlert error={rollouts.error} mb="md" />}
      <Skeleton visible={rollouts.isPending}>
        <Table striped highlightOnHover aria-label="Rollouts">
          <Table.Thead>
            <Table.Tr>
              <Table.Th scope="col">Name</Table.Th>
              <Table.Th scope="col">State</Table.Th>
              <Table.Th scope="col">Version</Table.Th>
              <Table.Th scope="col">Batch</Table.Th>
              <Table.Th scope="col">Created</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            <RolloutRows rollouts={rollouts.data?.items ?? []} />
          </Table.Tbody>
        </Table>
      </Skeleton>
      <CursorPager filters={query} nextCursor={rollouts.data?.nextCursor} setParams={setParams} />
    </>
  );
}
