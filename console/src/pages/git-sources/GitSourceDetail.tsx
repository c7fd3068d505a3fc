/**
 * One Git source: what it tracks and how, its state and last sync, its webhook, and its sync
 * runs (paged, `?cursor=` in the URL). The hub's events of this source (its settings and its
 * runs) refresh the page as they arrive, so a forced sync's run shows up live. Operators get
 * the operations; admins also the webhook token.
 */
import { Anchor, Code, Skeleton, Stack } from '@mantine/core';
import { Link, useParams } from 'react-router';
import { useLiveRefresh } from '../../api/live';
import { may, useSession } from '../../api/session';
import { PageTitle } from '../../components/PageTitle';
import { ProblemAlert } from '../../components/ProblemAlert';
import { Facts, Section } from '../AgentDetail';
import { describeStrategy } from '../rollouts/StrategyFields';
import { RolloutTarget } from '../rollouts/Target';
import { SourceOperations } from './SourceOperations';
import { SyncRuns } from './SyncRuns';
import { Webhook } from './WebhookToken';
import {
  aboutSource,
  Commit,
  GIT_EVENTS,
  GIT_SOURCES_KEY,
  RunStatusBadge,
  SourceStateBadge,
  useGitSource,
  useRefreshGitSources,
  when,
  type GitSource,
} from './shared';

function credentialsOf({ credentials }: GitSource): string {
  return credentials ? `${credentials.kind} (stored encrypted, never shown)` : 'none';
}

/** The rollout each published version gets: whom it targets and how. */
function Template({ source: { rolloutTemplate } }: { source: GitSource }) {
  if (!rolloutTemplate) return 'none';
  return (
    <Stack gap={2}>
      <span>a rollout for each published version, started at once:</span>
      <RolloutTarget target={rolloutTemplate.target} />
      <span>{describeStrategy(rolloutTemplate.strategy)}</span>
    </Stack>
  );
}

function SourceFacts({ source }: { source: GitSource }) {
  const run = source.lastRun;
  return (
    <Section title="Source">
      <Facts
        rows={[
          ['State', <SourceStateBadge key="state" paused={source.paused} />],
          ['Repository', <Code key="repo">{source.repoUrl}</Code>],
          ['Branch', source.branch],
          ['Path', source.path ? `${source.path}/` : 'the repository root'],
          ['Poll interval', `${source.pollIntervalSeconds} s`],
          ['Synced versions', source.autoPublish ? 'published at once' : 'drafts, to be published'],
          ['Rollout template', <Template key="template" source={source} />],
          ['Credentials', credentialsOf(source)],
          ['Synced commit', <Commit key="synced" sha={source.lastSyncedSha} />],
          ['Synced at', when(source.lastSyncedAt)],
          [
            'Last run',
            run ? (
              <span key="last">
                <RunStatusBadge status={run.status} /> {run.trigger}, {when(run.startedAt)}
              </span>
            ) : (
              'none yet'
            ),
          ],
          ['Created', `${source.createdBy}, ${when(source.createdAt)}`],
          ['Id', <Code key="id">{source.id}</Code>],
        ]}
      />
    </Section>
  );
}

export function GitSourceDetailPage() {
  const { id = '' } = useParams();
  const session = useSession();
  const found = useGitSource(id);
  const refresh = useRefreshGitSources();
  useLiveRefresh(
    GIT_EVENTS,
    [
      [...GIT_SOURCES_KEY, 'one', id],
      [...GIT_SOURCES_KEY, 'runs', id],
    ],
    aboutSource(id),
  );
  const source = found.data?.source;
  const mayOperate = session.data ? may(session.data, 'operate') : false;
  const mayRotate = session.data ? may(session.data, 'admin') : false;
  return (
    <Stack gap="md">
      <Anchor component={Link} to="/git-sources">
        ← All Git sources
      </Anchor>
      <PageTitle>{source ? source.name : 'Git source'}</PageTitle>
      {found.isError && <ProblemAlert error={found.error} />}
      <Skeleton visible={found.isPending}>
        {source && (
          <Stack gap="md">
            {mayOperate && <SourceOperations source={source} etag={found.data?.etag ?? null} onDone={refresh} />}
            <SourceFacts source={source} />
            <Webhook source={source} mayRotate={mayRotate} onDone={refresh} />
          </Stack>
        )}
      </Skeleton>
      {source && <SyncRuns sourceId={id} />}
    </Stack>
  );
}
