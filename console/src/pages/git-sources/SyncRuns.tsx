/**
 * A source's sync runs, newest first, in the API's cursor pages (`?cursor=` in the URL): when
 * and why each ran, its outcome, the commit, the files it changed (each linking to its
 * configuration), the files it refused and why a failed run failed.
 */
import { Anchor, Button, Code, Group, List, Skeleton, Table, Text } from '@mantine/core';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Link, useSearchParams } from 'react-router';
import { api, ok } from '../../api/client';
import { ColumnHeaders } from '../../components/ColumnHeaders';
import { EmptyRow } from '../../components/EmptyRow';
import { ProblemAlert } from '../../components/ProblemAlert';
import { Section } from '../AgentDetail';
import { Commit, GIT_SOURCES_KEY, PAGE_SIZE, RunStatusBadge, when, type SyncRun } from './shared';

/** One entry of a run's `changes` (docs/gitops.md, What a run records); the schema leaves it open. */
interface Change {
  path: string;
  configurationId?: string;
  name?: string;
  change: string;
  version?: number;
}

const text = (value: unknown) => (typeof value === 'string' ? value : undefined);

function changeOf(entry: Record<string, unknown>): Change {
  return {
    path: text(entry.path) ?? '?',
    configurationId: text(entry.configurationId),
    name: text(entry.name),
    change: text(entry.change) ?? 'changed',
    version: typeof entry.version === 'number' ? entry.version : undefined,
  };
}

function Changes({ run }: { run: SyncRun }) {
  if (run.changes.length === 0) return <>none</>;
  return (
    <List size="sm" listStyleType="none" spacing={2}>
      {run.changes.map(changeOf).map((change) => (
        <List.Item key={`${change.change} ${change.path}`}>
          {change.change}{' '}
          {change.configurationId ? (
            <Anchor component={Link} to={`/configurations/${change.configurationId}`}>
              {change.name ?? change.path}
            </Anchor>
          ) : (
            <Code>{change.path}</Code>
          )}
          {change.version !== undefined && ` v${change.version}`}
        </List.Item>
      ))}
    </List>
  );
}

function Errors({ run }: { run: SyncRun }) {
  if (!run.error && run.fileErrors.length === 0) return <>none</>;
  return (
    <>
      {run.error && (
        <Text size="sm" c="red.9">
          {run.error}
        </Text>
      )}
      <List size="sm" listStyleType="none" spacing={2}>
        {run.fileErrors.map((fileError) => (
          <List.Item key={fileError.path}>
            <Code>{fileError.path}</Code>: {fileError.error}
          </List.Item>
        ))}
      </List>
    </>
  );
}

function RunRows({ runs }: { runs: SyncRun[] }) {
  if (runs.length === 0) {
    return <EmptyRow columns={7}>No sync run yet.</EmptyRow>;
  }
  return runs.map((run) => (
    <Table.Tr key={run.id} data-run={run.id}>
      <Table.Td>{when(run.startedAt)}</Table.Td>
      <Table.Td>{run.trigger}</Table.Td>
      <Table.Td>
        <RunStatusBadge status={run.status} />
      </Table.Td>
      <Table.Td>
        <Commit sha={run.commitSha} />
      </Table.Td>
      <Table.Td>
        <Changes run={run} />
      </Table.Td>
      <Table.Td>
        <Errors run={run} />
      </Table.Td>
      <Table.Td>{run.durationMs === null ? '' : `${(run.durationMs / 1000).toFixed(1)} s`}</Table.Td>
    </Table.Tr>
  ));
}

export function SyncRuns({ sourceId }: { sourceId: string }) {
  const [params, setParams] = useSearchParams();
  const cursor = params.get('cursor') || undefined;
  const runs = useQuery({
    queryKey: [...GIT_SOURCES_KEY, 'runs', sourceId, cursor],
    queryFn: () =>
      ok(
        api.GET('/api/git-sources/{id}/sync-runs', {
          params: { path: { id: sourceId }, query: { cursor, limit: PAGE_SIZE } },
        }),
      ),
    placeholderData: keepPreviousData,
  });
  return (
    <Section title="Sync runs">
      {runs.isError && <ProblemAlert error={runs.error} mb="sm" />}
      <Skeleton visible={runs.isPending}>
        <Table striped aria-label="Sync runs">
          <ColumnHeaders columns={['Started', 'Trigger', 'Outcome', 'Commit', 'Files changed', 'Errors', 'Took']} />
          <Table.Tbody>
            <RunRows runs={runs.data?.items ?? []} />
          </Table.Tbody>
        </Table>
      </Skeleton>
      <Group mt="sm">
        <Button variant="default" disabled={!cursor} onClick={() => setParams({})}>
          Newest runs
        </Button>
        <Button
          variant="default"
          disabled={!runs.data?.nextCursor}
          onClick={() => setParams({ cursor: runs.data?.nextCursor ?? '' })}
        >
          Older runs
        </Button>
      </Group>
    </Section>
  );
}
