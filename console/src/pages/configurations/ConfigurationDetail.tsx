/**
 * One configuration and its versions (draft or published, author, times), paged with the
 * API's cursor in the URL (`?cursor=`). Operators and admins get "New version" (unless Git
 * manages it) and "Publish" on drafts; anyone may compare two versions.
 */
import { Anchor, Button, Card, Code, Group, Skeleton, Stack, Table, Text } from '@mantine/core';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Link, useNavigate, useParams, useSearchParams } from 'react-router';
import { api, ok } from '../../api/client';
import { useLiveRefresh } from '../../api/live';
import { may, useSession } from '../../api/session';
import { EmptyRow } from '../../components/EmptyRow';
import { PageTitle } from '../../components/PageTitle';
import { ProblemAlert } from '../../components/ProblemAlert';
import { PAGE_SIZE } from './filters';
import {
  CONFIGURATION_EVENTS,
  CONFIGURATIONS_KEY,
  GitManagedNotice,
  PublishButton,
  StateBadge,
  useConfiguration,
  useRefreshConfigurations,
  VersionPairForm,
  when,
  type Configuration,
  type VersionSummary,
} from './shared';

function About({ configuration }: { configuration: Configuration }) {
  const labels = Object.entries(configuration.labels).map(([k, v]) => `${k}=${v}`);
  return (
    <Card withBorder padding="md" component="section" aria-label="About" mb="md">
      <Text>
        Format <Code>{configuration.format}</Code> · latest{' '}
        {configuration.latestVersion ? `v${configuration.latestVersion}` : 'none'} · published{' '}
        {configuration.publishedVersion ? `v${configuration.publishedVersion}` : 'none'} · labels{' '}
        {labels.join(', ') || 'none'}
      </Text>
      {configuration.description && <Text mt="xs">{configuration.description}</Text>}
    </Card>
  );
}

/** Two versions to compare (the two newest to start with): opens the side-by-side diff. */
function CompareForm({ configuration }: { configuration: Configuration }) {
  const navigate = useNavigate();
  const latest = configuration.latestVersion;
  if (latest < 2) return null;
  return (
    <VersionPairForm
      latest={latest}
      from={latest - 1}
      to={latest}
      onCompare={(from, to) =>
        void navigate(`/configurations/${configuration.id}/compare?${new URLSearchParams({ from, to })}`)
      }
    />
  );
}

function VersionRows({
  configuration,
  versions,
  mayPublish,
  refresh,
}: {
  configuration: Configuration;
  versions: VersionSummary[];
  mayPublish: boolean;
  refresh: () => void;
}) {
  if (versions.length === 0) {
    return <EmptyRow columns={5}>No version saved yet.</EmptyRow>;
  }
  return versions.map((version) => (
    <Table.Tr key={version.version}>
      <Table.Td>
        <Anchor component={Link} to={`/configurations/${configuration.id}/versions/${version.version}`}>
          v{version.version}
        </Anchor>
      </Table.Td>
      <Table.Td>
        <StateBadge state={version.state} />
      </Table.Td>
      <Table.Td>
        {version.author}
        {version.provenance && ` (commit ${version.provenance.commitSha.slice(0, 8)})`}
      </Table.Td>
      <Table.Td>{when(version.createdAt)}</Table.Td>
      <Table.Td>
        {version.state === 'published' ? (
          `${when(version.publishedAt)} by ${version.publishedBy ?? '?'}`
        ) : mayPublish ? (
          <PublishButton configuration={configuration} version={version.version} onDone={refresh} />
        ) : (
          'not yet'
        )}
      </Table.Td>
    </Table.Tr>
  ));
}

function Versions({ configuration, mayPublish }: { configuration: Configuration; mayPublish: boolean }) {
  const [params, setParams] = useSearchParams();
  const cursor = params.get('cursor') || undefined;
  const refresh = useRefreshConfigurations();
  const id = configuration.id;
  const versions = useQuery({
    queryKey: [...CONFIGURATIONS_KEY, 'versions', id, cursor],
    queryFn: () =>
      ok(
        api.GET('/api/configurations/{id}/versions', { params: { path: { id }, query: { cursor, limit: PAGE_SIZE } } }),
      ),
    placeholderData: keepPreviousData,
  });
  return (
    <>
      {versions.isError && <ProblemAlert error={versions.error} mb="md" />}
      <Skeleton visible={versions.isPending}>
        <Table striped aria-label="Versions">
          <Table.Thead>
            <Table.Tr>
              <Table.Th scope="col">Version</Table.Th>
              <Table.Th scope="col">State</Table.Th>
              <Table.Th scope="col">Author</Table.Th>
              <Table.Th scope="col">Saved</Table.Th>
              <Table.Th scope="col">Published</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            <VersionRows
              configuration={configuration}
              versions={versions.data?.items ?? []}
              mayPublish={mayPublish}
              refresh={refresh}
            />
          </Table.Tbody>
        </Table>
      </Skeleton>
      <Group mt="md">
        <Button variant="default" disabled={!cursor} onClick={() => setParams({})}>
          Newest versions
        </Button>
        <Button
          variant="default"
          disabled={!versions.data?.nextCursor}
          onClick={() => setParams({ cursor: versions.data?.nextCursor ?? '' })}
        >
          Older versions
        </Button>
      </Group>
    </>
  );
}

export function ConfigurationDetailPage() {
  const { id = '' } = useParams();
  const session = useSession();
  const configuration = useConfiguration(id);
  useLiveRefresh(CONFIGURATION_EVENTS, [CONFIGURATIONS_KEY]);
  const mayOperate = session.data ? may(session.data, 'operate') : false;
  const data = configuration.data;
  return (
    <Stack gap={0}>
      <Anchor component={Link} to="/configurations" mb="md">
        ← All configurations
      </Anchor>
      <Group justify="space-between" align="start">
        <PageTitle>{data ? data.name : 'Configuration'}</PageTitle>
        {data && mayOperate && !data.managedBy && (
          <Button component={Link} to={`/configurations/${id}/new-version`}>
            New version
          </Button>
        )}
      </Group>
      {configuration.isError && <ProblemAlert error={configuration.error} />}
      {data && (
        <>
          <GitManagedNotice configuration={data} />
          <About configuration={data} />
          <CompareForm key={data.latestVersion} configuration={data} />
          <Versions configuration={data} mayPublish={mayOperate} />
        </>
      )}
    </Stack>
  );
}
