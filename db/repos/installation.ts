import type { Db } from '../connection';

/**
 * This installation's id, created on first use and then kept: what peers know it by
 * (GET /api/federation/ping) and what keys the work a peer asks of it.
 */
export async function installationId(db: Db): Promise<string> {
  await db.raw('INSERT INTO installation DEFAULT VALUES ON CONFLICT (singleton) DO NOTHING');
  const row = await db('installation').first('id');
  return (row as { id: string }).id;
}
