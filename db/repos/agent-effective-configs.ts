/** The effective configuration each agent last reported, as kept (redacted): `agent_effective_configs`. */
import type { Db } from '../connection';
import type { KeptEffectiveConfig, KeptFile } from '../../domain/effective-config';

export interface EffectiveConfigRow {
  agent_id: string;
  hash: string;
  files: KeptFile[];
  kept: boolean;
  redacted: number;
  reported_at: Date;
}

/** The hash kept for the agent (undefined: none yet): whether a report brings anything new. */
export async function keptEffectiveHash(db: Db, agentId: string): Promise<string | undefined> {
  const row = await db('agent_effective_configs').where({ agent_id: agentId }).first('hash');
  return row?.hash;
}

/** keptEffectiveHash for many agents in one statement, by agent id (none kept: left out). */
export async function keptEffectiveHashes(db: Db, agentIds: string[]): Promise<Map<string, string>> {
  const rows: Array<{ agent_id: string; hash: string }> = await db('agent_effective_configs')
    .select('agent_id', 'hash')
    .whereRaw('agent_id = ANY(?::uuid[])', [agentIds]);
  return new Map(rows.map((row) => [row.agent_id, row.hash]));
}

/** Keeps the agent's effective configuration, unless the one kept has this hash already. */
export async function keepEffectiveConfig(
  db: Db,
  agent: { tenantId: string; agentId: string; hash: string },
  config: KeptEffectiveConfig,
): Promise<void> {
  await db.raw(
    `INSERT INTO agent_effective_configs (agent_id, tenant_id, hash, files, kept, redacted)
     VALUES (?, ?, ?, ?::jsonb, ?, ?)
     ON CONFLICT (agent_id) DO UPDATE
        SET hash = excluded.hash, files = excluded.files, kept = excluded.kept, redacted = excluded.redacted,
            reported_at = now()
      WHERE agent_effective_configs.hash IS DISTINCT FROM excluded.hash`,
    [agent.agentId, agent.tenantId, agent.hash, JSON.stringify(config.files), config.kept, config.redacted],
  );
}

export async function findEffectiveConfig(
  db: Db,
  tenantId: string,
  agentId: string,
): Promise<EffectiveConfigRow | undefined> {
  return db('agent_effective_configs')
    .where({ tenant_id: tenantId, agent_id: agentId })
    .first('agent_id', 'hash', 'files', 'kept', 'redacted', 'reported_at');
}
