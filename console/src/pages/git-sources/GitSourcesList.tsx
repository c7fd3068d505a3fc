/**
 * The tenant's Git sources, oldest first: state, repository and branch, the last sync's
 * result. The API's filters (`q`, `paused`) and cursor pages, all in the URL; refreshed on
 * the sources' and sync runs' events. Operators and admins register a source.
 */
import { Anchor, Button, Code, Group, Skeleton, Stack, Table, Text } from '@mantine/core';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Link, useSearchParams } from 'react-router';
import { api, ok } from '../../api/client';
import { useLiveRefresh } from '../../api/live';
import { may, useSession } from '../../api/session';
import { CursorPager } from '../../components/CursorPager';
import { EmptyRow } from '../../components/EmptyRow';
import { PageTitle } from '../../components/PageTitle';
import { FilterForm, type FilterField } from '../../components/FilterForm';
import { ProblemAlert } from '../../components/ProblemAlert';
import {
  Commit,
  GIT_EVENTS,
  GIT_SOURCES_KEY,
  PAGE_SIZE,
  RunStatusBadge,
  SourceStateBadge,
  when,
  type GitSource,
} from './shared';

const PAUSED = ['true', 'false'] as const;
type Paused = (typeof PAUSED)[number];
const FILTERS: FilterField[] = [
  { name: 'q', label: 'Name or repository', kind: 'text' },
  {
    name: 'paused',
    label: 'State',
    kind: 'choice',
    choices: [
      { value: 'false', label: 'Active' },
      { value: 'true', label: 'Paused' },
    ],
  },
];

/** The list's filters and page as the URL has them, named as the API's query parameters. */
interface SourceFilters {
  q?: string;
  paused?: Paused;
  cursor?: string;
}

const isPaused = (value: string | null): value is Paused => (PAUSED as readonly (string | null)[]).includes(value);

function filtersFrom(params: URLSearchParams): SourceFilters {
  const paused = params.get('paused');
  return {
    q: params.get('q') || undefined,
    paused: isPaused(paused) ? paused : undefined,
    cursor: params.get('cursor') || undefined,
  };
}

function LastSync({ source }: { source: GitSource }) {
  const run = source.lastRun;
  if (!run) return <>not yet</>;
  return (
    <Stack gap={2}>
      <Group gap="xs">
        <RunStatusBadge status={run.status} />
        <Commit sha={run.commitSha} />
        <Text size="sm">{when(run.finishedAt ?? run.startedAt)}</Text>
      </Group>
      {run.error && (
        <Text size="sm" c="red.9" lineClamp={2}>
          {run.error}
        </Text>
      )}
    </Stack>
  );
}

function SourceRows({ sources }: { sources: GitSource[] }) {
  if (sources.length === 0) {
    return <EmptyRow columns={5}>No Git source matches these filters.</EmptyRow>;
  }
  return sources.map((source) => (
    <Table.Tr key={source.id}>
      <Table.Td>
        <Anchor component={Link} to={`/git-sources/${source.id}`}>
          {source.name}
        </Anchor>
      </Table.Td>
      <Table.Td>
        <SourceStateBadge paused={source.paused} />
      </Table.Td>
      <Table.Td>
        <Code>{source.repoUrl}</Code>
      </Table.Td>
      <Table.Td>
        {source.branch}
        {source.path && ` · ${source.path}/`}
      </Table.Td>
      <Table.Td>
        <LastSync source={source} />
      </Table.Td>
    </Table.Tr>
  ));
}

export function GitSourcesPage() {
  const [params, setParams] = useSearchParams();
  const session = useSession();
  const filters = filtersFrom(params);
  const sources = useQuery({
    queryKey: [...GIT_SOURCES_KEY, 'list', filters],
    queryFn: () => ok(api.GET('/api/git-sources', { params: { query: { ...filters, limit: PAGE_SIZE } } })),
    placeholderData: keepPreviousData,
  });
  useLiveRefresh(GIT_EVENTS, [[...GIT_SOURCES_KEY, 'list']]);
  return (
    <>
      <Group justify="space-between" align="start">
        <PageTitle>Git sources</PageTitle>
        {session.data && may(session.data, 'operate') && (
          <Button component={Link} to="/git-sources/new">
            New Git source
          </Button>
        )}
      </Group>
      <FilterForm label="Filter Git sources" fields={FILTERS} values={filters} apply={setParams} />
      {sources.isError && <ProblemAlert error={sources.error} mb="md" />}
      <Skeleton visible={sources.isPending}>
        <Table striped highlightOnHover aria-label="Git sources">
          <Table.Thead>
            <Table.Tr>
              <Table.Th scope="col">Name</Table.Th>
              <Table.Th scope="col">State</Table.Th>
              <Table.Th scope="col">Repository</Table.Th>
              <Table.Th scope="col">Branch · path</Table.Th>
              <Table.Th scope="col">Last sync</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            <SourceRows sources={sources.data?.items ?? []} />
          </Table.Tbody>
        </Table>
      </Skeleton>
      <CursorPager filters={filters} nextCursor={sources.data?.nextCursor} setParams={setParams} />
    </>
  );
}
