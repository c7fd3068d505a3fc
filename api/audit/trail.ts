import type { Knex } from 'knex';
import type { Next } from 'koa';
import type { Logger } from 'pino';
import { insertAudit, type AuditRecord } from '../../db/repos/audit';
import type { AppContext } from '../http/context';

const FLUSH_ROWS = 500;
const FLUSH_MS = 200;

function recordOf(ctx: AppContext, status: number): AuditRecord {
  const principal = ctx.state.principal;
  return {
    tenant_id: principal?.tenantId ?? null,
    occurred_at: new Date(),
    actor_type: principal?.kind ?? 'anonymous',
    actor: principal?.name ?? null,
    actor_id: principal?.id ?? null,
    method: ctx.method,
    path: ctx.path,
    route: ctx.state.route ?? null,
    status,
    resource_type: ctx.state.resource?.type ?? null,
    resource_id: ctx.state.resource?.id ?? null,
    request_id: ctx.state.requestId,
    source_address: ctx.ip || null,
  };
}

/**
 * Every call under /api is recorded. A successful write records its row inside the route's
 * own transaction (the change and its audit row commit together); reads and refused calls
 * are queued and written in batches.
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
    flushing = flushing.then(() =>
      insertAudit(db, batch).catch((error: unknown) => {
        // Never silently: the log keeps what the table could not.
        logger.error({ err: error, records: batch }, 'audit batch could not be written');
      }),
    );
    return flushing;
  }

  function enqueue(record: AuditRecord) {
    queue.push(record);
    if (queue.length >= FLUSH_ROWS) void flush();
    else timer ??= setTimeout(() => void flush(), FLUSH_MS);
  }

  return {
    async recordInTransaction(trx: Knex.Transaction, ctx: AppContext, status: number) {
      await insertAudit(trx, [recordOf(ctx, status)]);
      ctx.state.audited = true;
    },

    middleware: async function auditEveryCall(ctx: AppContext, next: Next) {
      try {
        await next();
      } finally {
        if (!ctx.state.audited && ctx.path.startsWith('/api/')) enqueue(recordOf(ctx, ctx.status));
      }
    },

    /** Writes what is queued; call before the process exits. */
    flush,
  };
}

export type AuditTrail = ReturnType<typeof createAuditTrail>;
