/** One version as saved: its content (read only, highlighted), state, author and times. */
import { Anchor, Button, Group, Skeleton, Stack, Text } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { Link, useParams } from 'react-router';
import { api, ok } from '../../api/client';
import { useLiveRefresh } from '../../api/live';
import { may, useSession } from '../../api/session';
import { PageTitle } from '../../components/PageTitle';
import { ProblemAlert } from '../../components/ProblemAlert';
import { LazyCodeEditor } from './LazyCodeEditor';
import {
  CONFIGURATION_EVENTS,
  CONFIGURATIONS_KEY,
  PublishButton,
  StateBadge,
  useConfiguration,
  useRefreshConfigurations,
  when,
} from './shared';

export function VersionViewPage() {
  const { id = '', version: versionParam = '' } = useParams();
  const version = Number(versionParam);
  const session = useSession();
  const configuration = useConfiguration(id);
  const refresh = useRefreshConfigurations();
  const saved = useQuery({
    queryKey: [...CONFIGURATIONS_KEY, 'version', id, versionParam],
    // The API validates the number: a path that is not one is its 400 problem, shown below.
    queryFn: () => ok(api.GET('/api/configurations/{id}/versions/{version}', { params: { path: { id, version } } })),
  });
  useLiveRefresh(CONFIGURATION_EVENTS, [[...CONFIGURATIONS_KEY, 'version', id]]);
  const data = saved.data;
  const error = configuration.error ?? saved.error;
  return (
    <Stack gap={0}>
      <Anchor component={Link} to={`/configurations/${id}`} mb="md">
        ← {configuration.data?.name ?? 'The configuration'}
      </Anchor>
      <PageTitle>
        {configuration.data ? `${configuration.data.name} v${versionParam}` : `Version ${versionParam}`}
      </PageTitle>
      {error && <ProblemAlert error={error} mb="md" />}
      <Skeleton visible={saved.isPending}>
        {data && configuration.data && (
          <>
            <Group mb="md">
              <StateBadge state={data.state} />
              <Text>
                Saved by {data.author} on {when(data.createdAt)}
                {data.publishedAt && `, published by ${data.publishedBy ?? '?'} on ${when(data.publishedAt)}`}
              </Text>
              {data.state === 'draft' && session.data && may(session.data, 'operate') && (
                <PublishButton configuration={configuration.data} version={data.version} onDone={refresh} />
              )}
              {data.state === 'published' && session.data && may(session.data, 'operate') && (
                <Button
                  component={Link}
                  to={`/rollouts/new?configurationId=${encodeURIComponent(id)}&version=${data.version}`}
                >
                  Roll out this version
                </Button>
              )}
            </Group>
            <LazyCodeEditor
              initial={data.content}
              format={configuration.data.format}
              label={`Content of version ${data.version}`}
              readOnly
            />
          </>
        )}
      </Skeleton>
    </Stack>
  );
}
