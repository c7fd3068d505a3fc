import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { appendAuditCalls, insertAudit, type AuditRecord } from '../../db/repos/audit';
import type { AppContext } from '../http/context';

const FLUSH_ROWS = 500;
const FLUSH_MS = 200;
/** `/API/TENANT` is no route, but it is a call to the API all the same. */
const API_PATH = /^\/api\//i;

/**
 * Postgres text cannot hold NUL, nor JSON text a lone surrogate: a caller-chosen value
 * must not make a row unwritable or a link unreadable.
 */
function text(value: string | undefined | null): string | null {
  if (value == null) return null;
  const withoutNul = value.includes('\u0000') ? value.replaceAll('\u0000', '\uFFFD') : value;
  return withoutNul.isWellFormed() ? withoutNul : withoutNul.toWellFormed();
}

function recordOf(ctx: AppContext, status: number): AuditRecord {
  const principal = ctx.state.principal;
  const caller = ctx.state.caller;
  return {
    tenant_id: principal?.tenantId ?? caller?.tenantId ?? null,
    occurred_at: new Date(),
    actor_type: principal?.kind ?? caller?.type ?? 'anonymous',
    actor: text(principal?.name ?? caller?.name),
    actor_id: text(principal?.id ?? caller?.id),
    method: ctx.method,
    path: text(ctx.path)!,
    route: ctx.state.route ?? null,
    status,
    resource_type: ctx.state.resource?.type ?? null,
    resource_id: text(ctx.state.resource?.id),
    request_id: ctx.state.requestId,
    source_address: ctx.ip || null,
  };
}

/**
 * Every call under /api is recorded. A successful write records its row inside the route's
 * own transaction (the change and its audit row commit together); reads and refused calls
 * are queued and written in batches, one chain link per tenant and batch.
 */
export function createAuditTrail(db: Knex, logger: Logger) {
  let queue: AuditRecord[] = [];
  let timer: NodeJS.Timeout | undefined;
  let flushing: Promise<void> = Promise.resolve();

  function flush(): Promise<void> {
    if (timer) clearTimeout(timer);
    timer = undefined;
    const batch = queue;
    queue = [];
    if (batch.length === 0) return flushing;
    flushing = flushing.then(() => write(batch));
    return flushing;
  }

  /** One bad row must not cost the batch: on failure, each row is tried on its own. */
  async function write(batch: AuditRecord[]): Promise<void> {
    try {
      await appendAuditCalls(db, batch);
    } catch (error) {
      if (batch.length === 1) {
        // Never silently: the log keeps what the table could not.
        logger.error({ err: error, record: batch[0] }, 'audit row could not be written');
        return;
      }
      for (const record of batch) await write([record]);
    }
  }

  function enqueue(record: AuditRecord) {
    queue.push(record);
    if (queue.length >= FLUSH_ROWS) void flush();
    else timer ??= setTimeout(() => void flush(), FLUSH_MS);
  }

  /** Writes the call's row in the route's transaction; the route marks it audited after commit. */
  async function recordInTransaction(trx: Knex.Transaction, ctx: AppContext, status: number) {
    await insertAudit(trx, [recordOf(ctx, status)]);
  }

  /** Queues the row of a call no Koa route answers (the hub's upgrades), as it is given. */
  function recordCall(record: Omit<AuditRecord, 'occurred_at'>) {
    enqueue({
      ...record,
      occurred_at: new Date(),
      actor: text(record.actor),
      actor_id: text(record.actor_id),
      path: text(record.path)!,
    });
  }

  /** Queues the row of a call under /api (any case) that its route did not record itself; run once it is answered. */
  function recordAnswered(ctx: AppContext) {
    if (!ctx.state.audited && API_PATH.test(ctx.path)) enqueue(recordOf(ctx, ctx.status));
  }

  // Plain functions, not methods: the app hands them on unbound.
  return {
    recordInTransaction,
    recordAnswered,
    recordCall,
    /** Writes what is queued; call before the process exits. */
    flush,
  };
}

export type AuditTrail = ReturnType<typeof createAuditTrail>;
