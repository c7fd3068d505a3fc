/**
 * A rollout's timeline: what happened to it, when, by whose hand and why — created,
 * scheduled, started, waiting for a window, each batch done (with its counts), paused,
 * resumed, aborted, rolled back — from its own events (`GET /api/events?rollout=`, the
 * agents' own results left out: they are the table below). Events age out after the
 * installation's retention; the rollout's state and counts above do not.
 */
import { Table, Text } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { api, ok, type Schemas } from '../../api/client';
import { EmptyRow } from '../../components/EmptyRow';
import { Section } from '../AgentDetail';

type CloudEvent = Schemas['CloudEvent'];

const TIMELINE_TYPES = [
  'rollout.created',
  'rollout.scheduled',
  'rollout.started',
  'rollout.waiting-for-window',
  'rollout.paused',
  'rollout.resumed',
  'rollout.progress',
  'rollout.completed',
  'rollout.failed',
  'rollout.aborted',
  'rollout.rolling-back',
  'rollout.rolled-back',
].join(',');

/** The most a timeline shows (a rollout of 100 batches has some 110 entries). */
const ENTRIES = 500;

export const timelineKey = (id: string) => ['rollouts', 'timeline', id];

type Progress = { succeeded?: number; failed?: number; skipped?: number; deferred?: number; total?: number };

/** What the entry says, in words: the state's change by whom, a batch's outcome. */
function whatHappened(event: CloudEvent): string {
  const data = event.data as {
    actor?: string;
    batch?: number;
    progress?: Progress;
    opensAt?: string;
    startAt?: string;
  };
  const by = data.actor && data.actor !== 'workflow' ? ` by ${data.actor}` : '';
  switch (event.type) {
    case 'rollout.created':
      return 'created';
    case 'rollout.scheduled':
      return `scheduled${by} to start at ${data.startAt ? new Date(data.startAt).toLocaleString() : '?'}`;
    case 'rollout.waiting-for-window':
      return `batch ${data.batch ?? '?'} waits for a window, which opens at ${data.opensAt ? new Date(data.opensAt).toLocaleString() : '?'}`;
    case 'rollout.progress': {
      const p = data.progress ?? {};
      return `batch ${data.batch ?? '?'} done: ${p.succeeded ?? 0} succeeded, ${p.failed ?? 0} failed, ${p.deferred ?? 0} deferred, ${p.skipped ?? 0} skipped of ${p.total ?? 0} so far`;
    }
    default:
      return `${event.type.slice('rollout.'.length)}${by}`;
  }
}

export function Timeline({ id }: { id: string }) {
  const events = useQuery({
    queryKey: timelineKey(id),
    queryFn: () =>
      ok(api.GET('/api/events', { params: { query: { rollout: id, type: TIMELINE_TYPES, limit: ENTRIES } } })),
  });
  const entries = events.data?.items ?? [];
  return (
    <Section title="Timeline">
      <Table striped aria-label="Timeline">
        <Table.Thead>
          <Table.Tr>
            <Table.Th scope="col">When</Table.Th>
            <Table.Th scope="col">What</Table.Th>
            <Table.Th scope="col">Why</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {entries.length === 0 && <EmptyRow columns={3}>{events.isPending ? 'Reading…' : 'No event kept.'}</EmptyRow>}
          {entries.map((event) => (
            <Table.Tr key={event.id}>
              <Table.Td>
                <Text size="sm">{new Date(event.time).toLocaleString()}</Text>
              </Table.Td>
              <Table.Td>{whatHappened(event)}</Table.Td>
              <Table.Td>{typeof event.data.reason === 'string' ? event.data.reason : ''}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Section>
  );
}
