/**
 * A new draft, starting from the latest version's content (empty before the first). The
 * API parses YAML and JSON on save and answers a problem naming the line and column, shown
 * above the editor, and the cursor is put on that spot; a saved draft opens the configuration's page, where it can be published.
 */
import { Alert, Anchor, Button, Group, Skeleton, Stack } from '@mantine/core';
import { useMutation, useQuery } from '@tanstack/react-query';
import { useMemo, useRef } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { api, ApiProblem, ok } from '../../api/client';
import { may, useSession } from '../../api/session';
import { PageTitle } from '../../components/PageTitle';
import { ProblemAlert } from '../../components/ProblemAlert';
import { LazyCodeEditor } from './LazyCodeEditor';
import { positionIn } from './position';
import {
  CONFIGURATIONS_KEY,
  GitManagedNotice,
  useConfiguration,
  useRefreshConfigurations,
  type Configuration,
} from './shared';

/** The content a new draft starts from: the latest version's, or nothing before the first. */
function useStartingContent(configuration: Configuration | undefined) {
  const id = configuration?.id ?? '';
  const version = configuration?.latestVersion ?? 0;
  return useQuery({
    // Not the version page's key (`…, 'version', id, '3'`: the whole version); this is its content.
    queryKey: [...CONFIGURATIONS_KEY, 'version', id, version, 'content'],
    queryFn: async () =>
      version === 0
        ? ''
        : (await ok(api.GET('/api/configurations/{id}/versions/{version}', { params: { path: { id, version } } })))
            .content,
    enabled: configuration !== undefined,
    staleTime: Infinity, // a version never changes
  });
}

function Editor({ configuration, initial }: { configuration: Configuration; initial: string }) {
  const navigate = useNavigate();
  const refresh = useRefreshConfigurations();
  const content = useRef(initial);
  const save = useMutation({
    mutationFn: () =>
      ok(
        api.POST('/api/configurations/{id}/versions', {
          params: { path: { id: configuration.id } },
          body: { content: content.current },
        }),
      ),
    onSuccess: () => {
      refresh();
      void navigate(`/configurations/${configuration.id}`);
    },
  });
  // A YAML or JSON error names its line and column: the cursor goes there.
  const errorAt = useMemo(
    () => (save.error instanceof ApiProblem ? positionIn(save.error.detail) : undefined),
    [save.error],
  );
  return (
    <>
      {save.isError && <ProblemAlert error={save.error} mb="md" />}
      <LazyCodeEditor
        initial={initial}
        format={configuration.format}
        label={`Content of the new version (${configuration.format})`}
        onChange={(next) => {
          content.current = next;
        }}
        cursorAt={errorAt}
      />
      <Group mt="md">
        <Button loading={save.isPending} onClick={() => save.mutate()}>
          Save as draft
        </Button>
        <Button variant="default" component={Link} to={`/configurations/${configuration.id}`}>
          Cancel
        </Button>
      </Group>
    </>
  );
}

export function VersionEditorPage() {
  const { id = '' } = useParams();
  const session = useSession();
  // Read once: a refetch finding a newer version (someone else saved one) would start the
  // editor afresh from it and lose what is being typed.
  const configuration = useConfiguration(id, { staleTime: Infinity });
  const starting = useStartingContent(configuration.data);
  const data = configuration.data;
  const mayEdit = data && !data.managedBy && session.data && may(session.data, 'operate');
  const error = configuration.error ?? starting.error;
  return (
    <Stack gap={0}>
      <Anchor component={Link} to={`/configurations/${id}`} mb="md">
        ← {data?.name ?? 'The configuration'}
      </Anchor>
      <PageTitle>{data ? `New version of ${data.name}` : 'New version'}</PageTitle>
      {error && <ProblemAlert error={error} mb="md" />}
      {data && <GitManagedNotice configuration={data} />}
      {data && session.data && !may(session.data, 'operate') && (
        <Alert color="gray" variant="light" title="Read only" mb="md">
          Saving versions needs the operator or admin role.
        </Alert>
      )}
      <Skeleton visible={starting.isPending}>
        {data && mayEdit && starting.data !== undefined && <Editor configuration={data} initial={starting.data} />}
      </Skeleton>
    </Stack>
  );
}
