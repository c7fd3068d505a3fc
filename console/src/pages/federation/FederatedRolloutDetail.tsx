/**
 * One federated rollout: its state and why, each installation's part (its state, its rollout
 * and version there, why it was refused or could not be reached) and progress per
 * installation and over all of them, refreshed live on its `federation.rollout.*` events.
 * Operators get the operations its state allows, each after a confirmation, with `If-Match`.
 */
import { Anchor, Badge, Code, Skeleton, Stack, Table } from '@mantine/core';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useParams } from 'react-router';
import { api, ok, type Schemas } from '../../api/client';
import { useLiveRefresh, type CloudEvent } from '../../api/live';
import { may, useSession } from '../../api/session';
import { ColumnHeaders } from '../../components/ColumnHeaders';
import { PageTitle } from '../../components/PageTitle';
import { ProblemAlert } from '../../components/ProblemAlert';
import { Facts, Section } from '../AgentDetail';
import { ConfigurationLink } from '../configurations/shared';
import { OperationButtons, target, type Operation } from '../rollouts/RolloutOperations';
import { isRolloutState, RolloutStateBadge } from '../rollouts/rolloutStates';
import { FEDERATION_KEY, FederationNav, when } from './shared';
import { PROGRESS_COUNTS, ProgressRow, ProgressTable, type ProgressCounts } from '../rollouts/Progress';

type FederatedRollout = Schemas['FederatedRollout'];
type Part = FederatedRollout['installations'][number];
type State = FederatedRollout['state'];
const LIVE = ['federation.rollout.*'];

const rolloutKey = (id: string) => [...FEDERATION_KEY, 'rollouts', 'one', id];

/** The federated rollout with its ETag, which every operation sends back as If-Match. */
function useFederatedRollout(id: string) {
  return useQuery({
    queryKey: rolloutKey(id),
    queryFn: async () => {
      const call = api.GET('/api/federation/rollouts/{id}', { params: { path: { id } } });
      const rollout = await ok(call);
      return { rollout, etag: (await call).response.headers.get('ETag') };
    },
  });
}

const OPERATIONS: readonly Operation<State>[] = [
  {
    label: 'Pause',
    from: ['running'],
    question: 'Pause the federated rollout? Every installation’s rollout is paused and no further installation starts.',
    send: (id, etag) => ok(api.POST('/api/federation/rollouts/{id}/pause', target(id, etag))),
  },
  {
    label: 'Resume',
    from: ['paused'],
    question:
      'Resume the federated rollout? Every installation’s rollout resumes; a peer that stopped answering is tried again.',
    send: (id, etag) => ok(api.POST('/api/federation/rollouts/{id}/resume', target(id, etag))),
  },
  {
    label: 'Abort',
    from: ['running', 'paused'],
    question:
      'Abort the federated rollout? Every installation’s rollout is aborted; installations not started never start.',
    danger: true,
    send: (id, etag) => ok(api.POST('/api/federation/rollouts/{id}/abort', target(id, etag))),
  },
  {
    label: 'Roll back',
    from: ['running', 'paused', 'completed', 'failed', 'aborted'],
    question: 'Roll back the federated rollout? Every installation’s rollout that started is rolled back.',
    danger: true,
    send: (id, etag) => ok(api.POST('/api/federation/rollouts/{id}/rollback', target(id, etag))),
  },
];

function RolloutFacts({ rollout }: { rollout: FederatedRollout }) {
  return (
    <Section title="Federated rollout">
      <Facts
        rows={[
          ['State', <RolloutStateBadge key="state" state={rollout.state} />],
          ['Reason', <span key="reason">{rollout.reason ?? 'none'}</span>],
          ['Description', rollout.description ?? 'none'],
          [
            'Configuration',
            <ConfigurationLink key="configuration" id={rollout.configurationId} version={rollout.version} />,
          ],
          ['Mode', rollout.mode === 'sequential' ? 'sequential (in the order listed)' : 'parallel (all at once)'],
          ['Created', `${rollout.createdBy}, ${when(rollout.createdAt)}`],
          ['Finished', when(rollout.finishedAt, 'not yet')],
          ['Id', <Code key="id">{rollout.id}</Code>],
        ]}
      />
    </Section>
  );
}

/** A part's state: its rollout's there, or why it has none (`denied`, `unreachable`). */
function PartState({ state }: { state: Part['state'] }) {
  if (isRolloutState(state)) return <RolloutStateBadge state={state} />;
  return (
    <Badge variant="filled" color="red.9" data-testid="rollout-state">
      {state}
    </Badge>
  );
}

/** Why a part was refused or could not be reached, as its installation's problem said it. */
function problemText(problem: Part['problem']): string {
  if (!problem) return '';
  return [problem.title, problem.detail].filter((text) => typeof text === 'string').join(': ');
}

function PartRollout({ part }: { part: Part }) {
  if (!part.rolloutId) return <>not created</>;
  if (!part.local) return <Code>{part.rolloutId}</Code>;
  return (
    <Anchor component={Link} to={`/rollouts/${part.rolloutId}`}>
      {part.rolloutId}
    </Anchor>
  );
}

function Installations({ parts }: { parts: Part[] }) {
  return (
    <Section title="Installations">
      <Table aria-label="Installations">
        <ColumnHeaders columns={['Installation', 'State', 'Rollout there', 'Version there', 'Problem']} />
        <Table.Tbody>
          {parts.map((part) => (
            <Table.Tr key={part.position}>
              <Table.Th scope="row">{part.local ? `${part.name} (this installation)` : part.name}</Table.Th>
              <Table.Td>
                <PartState state={part.state} />
              </Table.Td>
              <Table.Td>
                <PartRollout part={part} />
              </Table.Td>
              <Table.Td>{part.version === null ? '' : `v${part.version}`}</Table.Td>
              <Table.Td>{problemText(part.problem)}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Section>
  );
}

/** Every installation's counts added up (an installation that has reported none adds nothing). */
function overall(parts: Part[]): ProgressCounts {
  const sum: ProgressCounts = {};
  for (const count of PROGRESS_COUNTS)
    sum[count] = parts.reduce((total, part) => total + (part.progress?.[count] ?? 0), 0);
  return sum;
}

function Progress({ parts }: { parts: Part[] }) {
  return (
    <ProgressTable>
      <ProgressRow name="All installations" counts={overall(parts)} />
      {parts.map((part) => (
        <ProgressRow key={part.position} name={part.name} counts={part.progress} />
      ))}
    </ProgressTable>
  );
}

export function FederatedRolloutDetailPage() {
  const { id = '' } = useParams();
  const session = useSession();
  const queryClient = useQueryClient();
  const found = useFederatedRollout(id);
  useLiveRefresh(LIVE, [rolloutKey(id)], (event: CloudEvent) => event.subject === id);
  const refresh = () => void queryClient.invalidateQueries({ queryKey: [...FEDERATION_KEY, 'rollouts'] });
  const shown = found.data;
  return (
    <Stack gap="md">
      <Anchor component={Link} to="/federation/rollouts">
        ← All federated rollouts
      </Anchor>
      <PageTitle>
        {shown ? (shown.rollout.name ?? `Federated rollout ${shown.rollout.id}`) : 'Federated rollout'}
      </PageTitle>
      <FederationNav />
      {found.isError && <ProblemAlert error={found.error} />}
      <Skeleton visible={found.isPending}>
        {shown && session.data && may(session.data, 'operate') && (
          <OperationButtons
            operations={OPERATIONS}
            id={shown.rollout.id}
            state={shown.rollout.state}
            etag={shown.etag}
            onDone={refresh}
          />
        )}
        {shown && (
          <Stack gap="md">
            <RolloutFacts rollout={shown.rollout} />
            <Installations parts={shown.rollout.installations} />
            <Progress parts={shown.rollout.installations} />
          </Stack>
        )}
      </Skeleton>
    </Stack>
  );
}
