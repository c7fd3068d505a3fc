import type { Db } from '../connection';
import { notifyEach } from '../notify';

export const EVENTS_CHANNEL = 'fleet_events';

/**
 * Every event type the service emits: the one list, so an emitter cannot invent a type the
 * docs do not list (docs/events.md is checked against it by test/docs.test.ts).
 */
export const EVENT_TYPES = [
  'agent.enrolled',
  'agent.pending-approval',
  'agent.approved',
  'agent.rejected',
  'agent.connected',
  'agent.disconnected',
  'agent.flapping',
  'agent.moved',
  'agent.cert-revoked',
  'bootstrap-token.issued',
  'bootstrap-token.revoked',
  'token-pool.created',
  'configuration.created',
  'configuration.updated',
  'configuration.version-saved',
  'configuration.version-published',
  'group.created',
  'group.updated',
  'group.deleted',
  'group.restored',
  'pat.created',
  'pat.revoked',
  'policy.created',
  'policy.updated',
  'policy.approved',
  'rollout.created',
  'rollout.started',
  'rollout.paused',
  'rollout.resumed',
  'rollout.progress',
  'rollout.agent-updated',
  'rollout.completed',
  'rollout.failed',
  'rollout.aborted',
  'rollout.rolling-back',
  'rollout.rolled-back',
  'tenant.updated',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/** A CloudEvents 1.0 event for the outbox; `id`, `time` and `specversion` are filled in. */
export interface NewEvent {
  tenantId: string;
  type: EventType;
  source: string;
  subject?: string;
  data: Record<string, unknown>;
}

export interface EventRow {
  seq: number;
  id: string;
  tenant_id: string;
  type: string;
  source: string;
  subject: string | null;
  time: Date;
  data: Record<string, unknown>;
}

const EVENTS_PER_INSERT = 5000;

/**
 * Writes events in the caller's transaction and NOTIFYs each id (delivered at commit), so
 * an event exists exactly when the change that caused it does. Payloads are ids only
 * (NOTIFY payloads are capped at 8000 bytes); listeners read the rows.
 */
export async function emitEvents(db: Db, events: NewEvent[]): Promise<EventRow[]> {
  const rows: EventRow[] = [];
  // Five parameters a row: a statement takes at most 65,535, and a rollback settles tens of
  // thousands of agents at once.
  for (let i = 0; i < events.length; i += EVENTS_PER_INSERT) {
    const inserted: EventRow[] = await db('events')
      .insert(
        events.slice(i, i + EVENTS_PER_INSERT).map((e) => ({
          tenant_id: e.tenantId,
          type: e.type,
          source: e.source,
          subject: e.subject ?? null,
          data: JSON.stringify(e.data),
        })),
      )
      .returning('*');
    await notifyEach(
      db,
      EVENTS_CHANNEL,
      inserted.map((r) => r.id),
    );
    rows.push(...inserted);
  }
  return rows;
}

export function toCloudEvent(row: EventRow) {
  return {
    specversion: '1.0',
    id: row.id,
    source: row.source,
    type: row.type,
    subject: row.subject ?? undefined,
    time: row.time.toISOString(),
    datacontenttype: 'application/json',
    tenant: row.tenant_id,
    data: row.data,
  };
}

/** Deletes delivered events older than `before`; the hub replays only within retention. */
export async function pruneEvents(db: Db, before: Date, batch = 10_000): Promise<number> {
  const result = await db.raw(
    'DELETE FROM events WHERE seq IN (SELECT seq FROM events WHERE time < ? ORDER BY seq LIMIT ?)',
    [before, batch],
  );
  return result.rowCount ?? 0;
}
