/**
 * A page of audit events, newest first as the API lists them: one line each, and under it,
 * on demand, everything the API returns for the event (hash, request id, source address…).
 */
import { ResourceName } from '../../components/ResourceName';
import { Badge, Button, Code, Group, Table, Text } from '@mantine/core';
import { useState, type ReactNode } from 'react';
import { when } from '../configurations/shared';
import classes from './details.module.css';
import type { AuditEvent } from './filters';
import { ColumnHeaders } from '../../components/ColumnHeaders';
import { EmptyRow } from '../../components/EmptyRow';

const COLUMNS = ['#', 'Time', 'Actor', 'Request', 'Status', 'Resource', 'Details'];

// Filled badges in dark shades: white text on them keeps 4.5:1 contrast on any row.
const statusColor = (status: number) => (status >= 500 ? 'red.9' : status >= 400 ? 'orange.9' : 'teal.9');

function Field({ name, children }: { name: string; children: ReactNode }) {
  return (
    <>
      <dt>{name}</dt>
      <dd>{children ?? '—'}</dd>
    </>
  );
}

/** Everything the API answers for one event, as it wrote it. */
function EventDetails({ event }: { event: AuditEvent }) {
  return (
    <dl className={classes.details}>
      <Field name="Sequence">{event.seq}</Field>
      <Field name="Id">
        <Code>{event.id}</Code>
      </Field>
      <Field name="Occurred at">{event.occurredAt}</Field>
      <Field name="Actor type">{event.actorType}</Field>
      <Field name="Actor">{event.actor}</Field>
      <Field name="Method">{event.method}</Field>
      <Field name="Path">
        <Code>{event.path}</Code>
      </Field>
      <Field name="Route">{event.route}</Field>
      <Field name="Status">{event.status}</Field>
      <Field name="Resource type">{event.resourceType}</Field>
      <Field name="Resource id">{event.resourceId}</Field>
      <Field name="Request id">{event.requestId}</Field>
      <Field name="Source address">{event.sourceAddress}</Field>
      <Field name="Hash">
        <Code className={classes.hash}>{event.hash}</Code>
      </Field>
    </dl>
  );
}

function EventRow({
  event,
  expanded,
  toggle,
  broken,
}: {
  event: AuditEvent;
  expanded: boolean;
  toggle: () => void;
  broken: boolean;
}) {
  const detailsId = `audit-event-${event.id}`;
  return (
    <>
      <Table.Tr>
        <Table.Td>
          <Group gap={4}>
            {event.seq}
            {broken && (
              <Badge variant="filled" color="red.9">
                broken
              </Badge>
            )}
          </Group>
        </Table.Td>
        <Table.Td>{when(event.occurredAt)}</Table.Td>
        <Table.Td>
          <Group gap={4}>
            {event.actor ?? '—'}
            <Badge variant="outline" color="gray.8">
              {event.actorType}
            </Badge>
          </Group>
        </Table.Td>
        <Table.Td>
          <Text span ff="monospace" size="sm">
            {event.method} {event.path}
          </Text>
        </Table.Td>
        <Table.Td>
          <Badge variant="filled" color={statusColor(event.status)}>
            {event.status}
          </Badge>
        </Table.Td>
        <Table.Td>
          {event.resourceType ?? '—'}{' '}
          {event.resourceId && <ResourceName kind={event.resourceType ?? undefined} id={event.resourceId} />}
        </Table.Td>
        <Table.Td>
          {/* Says "Details" open or closed (its name must hold its text); aria-expanded tells which. */}
          <Button
            variant="default"
            size="xs"
            aria-expanded={expanded}
            aria-controls={expanded ? detailsId : undefined}
            aria-label={`Details of event ${event.seq}`}
            onClick={toggle}
          >
            Details
          </Button>
        </Table.Td>
      </Table.Tr>
      {expanded && (
        <Table.Tr id={detailsId}>
          <Table.Td colSpan={COLUMNS.length}>
            <EventDetails event={event} />
          </Table.Td>
        </Table.Tr>
      )}
    </>
  );
}

export function AuditEventsTable({ events, brokenSeq }: { events: AuditEvent[]; brokenSeq?: number | null }) {
  const [expanded, setExpanded] = useState<ReadonlySet<string>>(new Set());
  const toggle = (id: string) =>
    setExpanded((now) => {
      const next = new Set(now);
      if (!next.delete(id)) next.add(id);
      return next;
    });
  return (
    <Table striped highlightOnHover aria-label="Audit events">
      <ColumnHeaders columns={COLUMNS} />
      <Table.Tbody>
        {events.length === 0 ? (
          <EmptyRow columns={COLUMNS.length}>No audit event matches these filters.</EmptyRow>
        ) : (
          events.map((event) => (
            <EventRow
              key={event.id}
              event={event}
              expanded={expanded.has(event.id)}
              toggle={() => toggle(event.id)}
              broken={event.seq === brokenSeq}
            />
          ))
        )}
      </Table.Tbody>
    </Table>
  );
}
