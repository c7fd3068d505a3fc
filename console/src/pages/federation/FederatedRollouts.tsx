/** The tenant's federated rollouts, newest first: a state filter and the API's cursor pages, all in the URL. */
import { Anchor, Button, Group, Skeleton, Table } from '@mantine/core';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Link, useSearchParams } from 'react-router';
import { api, ok, type Schemas } from '../../api/client';
import { useLiveRefresh } from '../../api/live';
import { may, useSession } from '../../api/session';
import { ColumnHeaders } from '../../components/ColumnHeaders';
import { CursorPager } from '../../components/CursorPager';
import { EmptyRow } from '../../components/EmptyRow';
import { PageTitle } from '../../components/PageTitle';
import { ProblemAlert } from '../../components/ProblemAlert';
import { StateFilter } from '../../components/StateFilter';
import { RolloutStateBadge } from '../rollouts/rolloutStates';
import { FEDERATION_KEY, FederationNav, PAGE_SIZE, when } from './shared';

type State = Schemas['FederatedRollout']['state'];

export const FEDERATED_ROLLOUT_STATES: readonly State[] = [
  'running',
  'paused',
  'completed',
  'failed',
  'aborted',
  'rolling-back',
  'rolled-back',
];

const isState = (value: string | null): value is State =>
  (FEDERATED_ROLLOUT_STATES as readonly (string | null)[]).includes(value);

/** A federated rollout created, changing state or ending changes the list. */
const LIVE = ['federation.rollout.*'];
const LIST_KEY = [...FEDERATION_KEY, 'rollouts', 'list'];

function RolloutRows({ rollouts }: { rollouts: Schemas['FederatedRolloutSummary'][] }) {
  if (rollouts.length === 0) {
    return <EmptyRow columns={5}>No federated rollout matches this filter.</EmptyRow>;
  }
  return rollouts.map((rollout) => (
    <Table.Tr key={rollout.id}>
      <Table.Td>
        <Anchor component={Link} to={`/federation/rollouts/${rollout.id}`}>
          {rollout.name ?? rollout.id}
        </Anchor>
      </Table.Td>
      <Table.Td>
        <RolloutStateBadge state={rollout.state} />
      </Table.Td>
      <Table.Td>{rollout.mode}</Table.Td>
      <Table.Td>v{rollout.version}</Table.Td>
      <Table.Td>
        {rollout.createdBy}, {when(rollout.createdAt)}
      </Table.Td>
    </Table.Tr>
  ));
}

export function FederatedRolloutsPage() {
  const [params, setParams] = useSearchParams();
  const stateParam = params.get('state');
  const query = { state: isState(stateParam) ? stateParam : undefined, cursor: params.get('cursor') || undefined };
  const rollouts = useQuery({
    queryKey: [...LIST_KEY, query],
    queryFn: () => ok(api.GET('/api/federation/rollouts', { params: { query: { ...query, limit: PAGE_SIZE } } })),
    placeholderData: keepPreviousData,
  });
  const session = useSession();
  useLiveRefresh(LIVE, [LIST_KEY]);
  return (
    <>
      <PageTitle>Federated rollouts</PageTitle>
      <FederationNav />
      <Group justify="space-between" align="end" mb="md">
        <StateFilter states={FEDERATED_ROLLOUT_STATES} state={query.state} setParams={setParams} />
        {session.data && may(session.data, 'operate') && (
          <Button component={Link} to="/federation/rollouts/new">
            New federated rollout
          </Button>
        )}
      </Group>
      {rollouts.isError && <ProblemAlert error={rollouts.error} mb="md" />}
      <Skeleton visible={rollouts.isPending}>
        <Table striped highlightOnHover aria-label="Federated rollouts">
          <ColumnHeaders columns={['Name', 'State', 'Mode', 'Version', 'Created']} />
          <Table.Tbody>
            <RolloutRows rollouts={rollouts.data?.items ?? []} />
          </Table.Tbody>
        </Table>
      </Skeleton>
      <CursorPager filters={query} nextCursor={rollouts.data?.nextCursor} setParams={setParams} />
    </>
  );
}
