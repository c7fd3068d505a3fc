/**
 * Any two versions side by side (`/configurations/{id}/compare?from=1&to=2`): the API's
 * unified diff laid out in two columns, and for YAML and JSON its key-level changes.
 */
import { Anchor, Code, Skeleton, Stack, Table, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { Link, useParams, useSearchParams } from 'react-router';
import { api, ok, type Schemas } from '../../api/client';
import { EmptyRow } from '../../components/EmptyRow';
import { PageTitle } from '../../components/PageTitle';
import { ProblemAlert } from '../../components/ProblemAlert';
import { versionFrom } from './filters';
import { CONFIGURATIONS_KEY, useConfiguration, VersionPairForm } from './shared';
import { sideBySide, type Cell, type DiffRow } from './sideBySide';
import classes from './diff.module.css';

type Change = NonNullable<Schemas['ConfigurationComparison']['changes']>[number];

const SIDE_CLASS: Record<DiffRow['kind'], { left?: string; right?: string }> = {
  same: {},
  hunk: {},
  changed: { left: classes.removed, right: classes.added },
  removed: { left: classes.removed },
  added: { right: classes.added },
};

function Side({ cell, className, mark }: { cell?: Cell; className?: string; mark: string }) {
  return (
    <>
      <Table.Td className={`${classes.number} ${className ?? ''}`}>{cell?.line}</Table.Td>
      <Table.Td className={`${classes.code} ${className ?? ''}`}>
        {cell && <span className={classes.mark}>{className ? mark : ''}</span>}
        {cell?.text}
      </Table.Td>
    </>
  );
}

/** A unified diff in two columns headed `left` and `right` (an agent's page shows its drift so too). */
export function SideBySide({
  left,
  right,
  unifiedDiff,
  same = 'The two versions have the same content.',
}: {
  left: string;
  right: string;
  unifiedDiff: string;
  same?: string;
}) {
  const rows = sideBySide(unifiedDiff);
  if (rows.length === 0) return <Text mb="md">{same}</Text>;
  return (
    <Table aria-label="Side-by-side diff" withColumnBorders mb="lg" className={classes.table}>
      <Table.Thead>
        <Table.Tr>
          <Table.Th scope="col" colSpan={2}>
            {left}
          </Table.Th>
          <Table.Th scope="col" colSpan={2}>
            {right}
          </Table.Th>
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        {rows.map((row, i) =>
          row.kind === 'hunk' ? (
            <Table.Tr key={i} className={classes.hunk}>
              <Table.Td colSpan={4}>⋯</Table.Td>
            </Table.Tr>
          ) : (
            <Table.Tr key={i} data-kind={row.kind}>
              <Side cell={row.left} className={SIDE_CLASS[row.kind].left} mark="−" />
              <Side cell={row.right} className={SIDE_CLASS[row.kind].right} mark="+" />
            </Table.Tr>
          ),
        )}
      </Table.Tbody>
    </Table>
  );
}

const shown = (value: unknown) => (value === undefined ? '' : JSON.stringify(value));

function KeyChanges({ changes }: { changes: Change[] }) {
  return (
    <>
      <Title order={3} size="h4" mb="xs">
        Changed keys
      </Title>
      <Table striped aria-label="Changed keys">
        <Table.Thead>
          <Table.Tr>
            <Table.Th scope="col">Change</Table.Th>
            <Table.Th scope="col">Key</Table.Th>
            <Table.Th scope="col">From</Table.Th>
            <Table.Th scope="col">To</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {changes.length === 0 && <EmptyRow columns={4}>No key changed.</EmptyRow>}
          {changes.map((change) => (
            <Table.Tr key={`${change.op} ${change.path}`}>
              <Table.Td>{change.op}</Table.Td>
              <Table.Td>
                <Code>{change.path || '(the whole document)'}</Code>
              </Table.Td>
              <Table.Td>{shown(change.from)}</Table.Td>
              <Table.Td>{shown(change.to)}</Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </>
  );
}

export function CompareVersionsPage() {
  const { id = '' } = useParams();
  const [params, setParams] = useSearchParams();
  const from = versionFrom(params, 'from');
  const to = versionFrom(params, 'to');
  const configuration = useConfiguration(id);
  const comparison = useQuery({
    queryKey: [...CONFIGURATIONS_KEY, 'compare', id, from, to],
    queryFn: () =>
      ok(
        api.GET('/api/configurations/{id}/versions/compare', {
          params: { path: { id }, query: { from: from!, to: to! } },
        }),
      ),
    enabled: from !== undefined && to !== undefined,
    staleTime: Infinity, // versions never change
  });
  const name = configuration.data?.name;
  return (
    <Stack gap={0}>
      <Anchor component={Link} to={`/configurations/${id}`} mb="md">
        ← {name ?? 'The configuration'}
      </Anchor>
      <PageTitle>{name ? `Compare versions of ${name}` : 'Compare versions'}</PageTitle>
      {configuration.isError && <ProblemAlert error={configuration.error} mb="md" />}
      {configuration.data && (
        <VersionPairForm
          key={`${from}-${to}`}
          latest={configuration.data.latestVersion}
          from={from}
          to={to}
          onCompare={(left, right) => setParams({ from: left, to: right })}
        />
      )}
      {comparison.isError && <ProblemAlert error={comparison.error} mb="md" />}
      {(from === undefined || to === undefined) && <Text>Choose two versions to compare.</Text>}
      {comparison.isFetching && !comparison.data && <Skeleton height={200} />}
      {comparison.data && (
        <>
          <SideBySide
            left={`Version ${comparison.data.from}`}
            right={`Version ${comparison.data.to}`}
            unifiedDiff={comparison.data.unifiedDiff}
          />
          {comparison.data.changes && <KeyChanges changes={comparison.data.changes} />}
        </>
      )}
    </Stack>
  );
}
