/** Postgres' unique_violation: an INSERT or UPDATE hit a unique index (a taken name). */
export function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: string } | null)?.code === '23505';
}

/** Connection errors and SQLSTATEs of a database that is gone, restarting, or full of connections. */
const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  '57P01',
  '57P02',
  '57P03',
  '53300',
  '08000',
  '08001',
  '08003',
  '08006',
]);

/**
 * What node-postgres says, without a code, of a pooled connection the database dropped (a
 * restart, a failover): the first queries after it fail so before the pool opens new ones.
 * Knex puts the statement before the message (`select … - Connection terminated unexpectedly`).
 */
const DROPPED_CONNECTION =
  /(^|- )(Connection terminated|Client has encountered a connection error and is not queryable|Client was closed and is not queryable)/;

/** The database went away or is full: the caller should retry, it did nothing wrong. */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const { code, name, message } = error as { code?: string; name?: string; message?: string };
  return (
    name === 'KnexTimeoutError' ||
    (code !== undefined && UNREACHABLE.has(code)) ||
    (code === undefined && typeof message === 'string' && DROPPED_CONNECTION.test(message))
  );
}
