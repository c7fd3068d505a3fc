/** What the Git source pages share: the source query with its ETag, the live events, badges. */
import { Badge, Code } from '@mantine/core';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { api, ok, type Schemas } from '../../api/client';
import type { CloudEvent } from '../../api/live';

export type GitSource = Schemas['GitSource'];
export type SyncRun = Schemas['GitSyncRun'];
export type RunStatus = SyncRun['status'];

/** Every query of the Git source pages starts with this key: one invalidation refreshes them. */
export const GIT_SOURCES_KEY = ['git-sources'];

/** The events that change what the pages show: a source's settings and state, and its sync runs. */
export const GIT_EVENTS = ['git-source.*', 'git.sync-run.*'];

/** A source's own events: each names the source as its subject (docs/events.md). */
export const aboutSource = (id: string) => (event: CloudEvent) => event.subject === id;

export const PAGE_SIZE = 25;

/** The source with its ETag (sent back as If-Match by edit and delete). */
export async function readGitSource(id: string) {
  const call = api.GET('/api/git-sources/{id}', { params: { path: { id } } });
  const source = await ok(call);
  return { source, etag: (await call).response.headers.get('ETag') };
}

export function useGitSource(id: string, { staleTime = 0 }: { staleTime?: number } = {}) {
  return useQuery({ queryKey: [...GIT_SOURCES_KEY, 'one', id], queryFn: () => readGitSource(id), staleTime });
}

export function useRefreshGitSources(): () => void {
  const queryClient = useQueryClient();
  return () => void queryClient.invalidateQueries({ queryKey: GIT_SOURCES_KEY });
}

/** A commit as people quote it: its first 8 hex digits (the whole SHA in the title). */
export function Commit({ sha }: { sha: string | null }) {
  if (!sha) return <>none</>;
  return <Code title={sha}>{sha.slice(0, 8)}</Code>;
}

/** The API's times as this browser writes them. */
export const when = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : '—');

// Filled badges in dark shades: white text on them keeps 4.5:1 contrast on any row.
const STATUS_COLORS: Record<RunStatus, string> = { running: 'blue.9', succeeded: 'teal.9', failed: 'red.9' };

export function RunStatusBadge({ status }: { status: RunStatus }) {
  return (
    <Badge variant="filled" color={STATUS_COLORS[status]} data-testid="run-status">
      {status}
    </Badge>
  );
}

export function SourceStateBadge({ paused }: { paused: boolean }) {
  return (
    <Badge variant="filled" color={paused ? 'gray.8' : 'teal.9'} data-testid="source-state">
      {paused ? 'paused' : 'active'}
    </Badge>
  );
}
