/**
 * A rollout's progress as a table of agent counts, one row per part (overall, each batch, the
 * rollback; a federated rollout's installations): the rollout page and the federated rollout
 * page show it alike.
 */
import { Progress, Table } from '@mantine/core';
import type { ReactNode } from 'react';
import { Section } from '../AgentDetail';
import { ColumnHeaders } from '../../components/ColumnHeaders';

export const PROGRESS_COUNTS = ['total', 'pending', 'applying', 'deferred', 'succeeded', 'failed', 'skipped'] as const;

export type ProgressCounts = Partial<Record<(typeof PROGRESS_COUNTS)[number], number>>;

/** The row's counts as a bar: succeeded, failed, applying, deferred, skipped, of the total (the numbers are in the row). */
function ProgressBar({ counts }: { counts: ProgressCounts | null | undefined }) {
  // The rollback's counts have no total: theirs is their sum.
  const total = counts?.total ?? PROGRESS_COUNTS.reduce((sum, count) => sum + (counts?.[count] ?? 0), 0);
  if (!counts || total === 0) return null;
  const share = (n: number | undefined) => ((n ?? 0) / total) * 100;
  return (
    <Progress.Root size="md" miw={120} aria-hidden>
      <Progress.Section value={share(counts.succeeded)} color="teal.7" />
      <Progress.Section value={share(counts.failed)} color="red.8" />
      <Progress.Section value={share(counts.applying)} color="blue.5" />
      <Progress.Section value={share(counts.deferred)} color="yellow.5" />
      <Progress.Section value={share(counts.skipped)} color="gray.5" />
    </Progress.Root>
  );
}

/** A part's counts; a part that has reported none (a peer not asked yet) shows empty cells. */
export function ProgressRow({ name, counts }: { name: string; counts: ProgressCounts | null | undefined }) {
  return (
    <Table.Tr>
      <Table.Th scope="row">{name}</Table.Th>
      {PROGRESS_COUNTS.map((count) => (
        <Table.Td key={count}>{counts?.[count] ?? ''}</Table.Td>
      ))}
      <Table.Td>
        <ProgressBar counts={counts} />
      </Table.Td>
    </Table.Tr>
  );
}

/** The "Progress" section; its rows are `ProgressRow`s. */
export function ProgressTable({ children }: { children: ReactNode }) {
  return (
    <Section title="Progress">
      <Table aria-label="Progress">
        <ColumnHeaders
          columns={['Agents', 'Total', 'Pending', 'Applying', 'Deferred', 'Succeeded', 'Failed', 'Skipped', 'Done']}
        />
        <Table.Tbody>{children}</Table.Tbody>
      </Table>
    </Section>
  );
}
