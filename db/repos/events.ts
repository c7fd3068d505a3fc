import type { Db } from '../connection';

export const EVENTS_CHANNEL = 'fleet_events';

/**
 * Every event type the service emits: the one list, so an emitter cannot invent a type the
 * docs do not list (docs/events.md is checked against it by test/docs.unit.test.ts).
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
  'federation.peer.created',
  'federation.peer.updated',
  'federation.peer.deleted',
  'federation.peer.health-changed',
  'federation.handover.started',
  'federation.handover.agent-handed-over',
  'federation.handover.completed',
  'federation.handover.compensated',
  'federation.handover.failed',
  'federation.handover.requested',
  'federation.handover.agent-received',
  'federation.rollout.created',
  'federation.rollout.installation-updated',
  'federation.rollout.paused',
  'federation.rollout.resumed',
  'federation.rollout.completed',
  'federation.rollout.failed',
  'federation.rollout.aborted',
  'federation.rollout.rolling-back',
  'federation.rollout.rolled-back',
  'git.sync-run.started',
  'git.sync-run.succeeded',
  'git.sync-run.failed',
  'group.created',
  'group.updated',
  'group.deleted',
  'group.restored',
  'git-source.created',
  'git-source.updated',
  'git-source.deleted',
  'git-source.paused',
  'git-source.resumed',
  'git-source.webhook-token-rotated',
  'pat.created',
  'pat.revoked',
  'policy.created',
  'policy.updated',
  'policy.approved',
  'rollout.created',
  'rollout.scheduled',
  'rollout.started',
  'rollout.waiting-for-window',
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
  /** The rollout it belongs to; by default a `rollout.*` event's `data.rolloutId`. */
  rollout?: string;
}

/** The rollout an event belongs to (its `rollout` extension attribute), or null. */
function rolloutOf(event: NewEvent): string | null {
  if (event.rollout !== undefined) return event.rollout;
  const id = event.data.rolloutId;
  return event.type.startsWith('rollout.') && typeof id === 'string' ? id : null;
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
  rollout_id: string | null;
}

/**
 * Writes events in the caller's transaction and NOTIFYs each id (delivered at commit), so
 * an event exists exactly when the change that caused it does. Payloads are ids only
 * (NOTIFY payloads are capped at 8000 bytes); listeners read the rows.
 *
 * One statement however many: the columns go as six arrays, not six parameters a row (a
 * statement takes at most 65,535), so a replica stopping with 10,000 agents or a rollback
 * settling tens of thousands writes its events in one round trip.
 */
export async function emitEvents(db: Db, events: NewEvent[]): Promise<void> {
  if (events.length === 0) return;
  await db.raw(
    `WITH written AS (
       INSERT INTO events (tenant_id, type, source, subject, data, rollout_id)
       SELECT * FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::jsonb[], ?::uuid[])
       RETURNING id
     )
     SELECT count(pg_notify(?, id::text)) FROM written`,
    [
      events.map((e) => e.tenantId),
      events.map((e) => e.type),
      events.map((e) => e.source),
      // An event without a subject stores NULL (knex's types know no arrays with nulls).
      events.map((e) => e.subject ?? null) as string[],
      events.map((e) => JSON.stringify(e.data)),
      events.map(rolloutOf) as string[],
      EVENTS_CHANNEL,
    ],
  );
}

export function toCloudEvent(row: EventRow) {
  return {
    specversion: '1.0',
    id: row.id,
    source: row.source,
    type: row.type,
    subject: row.subject ?? undefined,
    rollout: row.rollout_id ?? undefined,
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

/** Events by id (as NOTIFY announces them), in the order they were written. */
export async function findEventsByIds(db: Db, ids: string[]): Promise<EventRow[]> {
  if (ids.length === 0) return [];
  return db('events').whereRaw('id = ANY(?::uuid[])', [ids]).orderBy('seq');
}

/** The position of a tenant's event; undefined when it is not (or no longer) kept. */
export async function findEventPosition(
  db: Db,
  tenantId: string,
  id: string,
): Promise<{ seq: number; time: Date } | undefined> {
  const row = await db('events').where({ tenant_id: tenantId, id }).first('seq', 'time');
  return row ? { seq: Number(row.seq), time: row.time as Date } : undefined;
}

export interface EventFilters {
  /** Type patterns: `rollout.started`, `rollout.*`, `*`. */
  types?: string[];
  /** Types the caller may not see. */
  hiddenTypePrefixes?: string[];
  subject?: string;
  /** Only the events of one rollout: its own and its agents'. */
  rollout?: string;
  /** Only events written after this one. */
  afterSeq?: number;
}

/** A tenant's events oldest first, filtered; the caller pages it (by `seq`). */
export function listEventsQuery(db: Db, tenantId: string, filters: EventFilters) {
  const query = db('events').where({ tenant_id: tenantId });
  if (filters.afterSeq !== undefined) query.where('seq', '>', filters.afterSeq);
  if (filters.subject !== undefined) query.where({ subject: filters.subject });
  if (filters.rollout !== undefined) query.where({ rollout_id: filters.rollout });
  const types = filters.types ?? ['*'];
  if (!types.includes('*')) {
    query.where((where) => {
      for (const type of types) {
        if (type.endsWith('.*')) where.orWhere('type', 'like', `${type.slice(0, -1)}%`);
        else where.orWhere({ type });
      }
    });
  }
  for (const prefix of filters.hiddenTypePrefixes ?? []) query.whereNot('type', 'like', `${prefix}%`);
  return query;
}
