import type { Db } from '../connection';

export interface ConsoleSessionRow {
  id: string;
  secret_hash: Buffer;
  tenant_id: string;
  subject: string;
  display_name: string | null;
  roles: string[];
  created_at: Date;
  last_seen_at: Date;
  expires_at: Date;
}

export type NewConsoleSession = Pick<
  ConsoleSessionRow,
  'secret_hash' | 'tenant_id' | 'subject' | 'display_name' | 'roles' | 'expires_at'
>;

export async function insertConsoleSession(db: Db, session: NewConsoleSession): Promise<ConsoleSessionRow> {
  const [row] = await db<ConsoleSessionRow>('console_sessions').insert(session).returning('*');
  return row!;
}

/**
 * The live session with this secret hash: not past its absolute expiry, and seen within
 * `idleMinutes`. Its last-seen time moves on at most once a minute (a busy page does not
 * write a row per request).
 */
export async function touchConsoleSession(
  db: Db,
  secretHash: Buffer,
  idleMinutes: number,
): Promise<ConsoleSessionRow | undefined> {
  const { rows } = await db.raw<{ rows: ConsoleSessionRow[] }>(
    `WITH live AS (
       SELECT * FROM console_sessions
        WHERE secret_hash = ? AND expires_at > now() AND last_seen_at > now() - make_interval(mins => ?)
     ), touched AS (
       UPDATE console_sessions s SET last_seen_at = now()
         FROM live WHERE s.id = live.id AND live.last_seen_at < now() - interval '1 minute'
     )
     SELECT * FROM live`,
    [secretHash, idleMinutes],
  );
  return rows[0];
}

export async function deleteConsoleSession(db: Db, secretHash: Buffer): Promise<ConsoleSessionRow | undefined> {
  const [row] = await db<ConsoleSessionRow>('console_sessions').where({ secret_hash: secretHash }).delete('*');
  return row;
}

/** Forgets sessions past their absolute expiry (idle ones are refused when read, and expire too). */
export async function deleteExpiredConsoleSessions(db: Db): Promise<number> {
  return db('console_sessions').where('expires_at', '<=', db.fn.now()).delete();
}

export async function findConsoleSession(db: Db, secretHash: Buffer): Promise<ConsoleSessionRow | undefined> {
  return db<ConsoleSessionRow>('console_sessions').where({ secret_hash: secretHash }).first();
}
