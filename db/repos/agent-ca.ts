import type { Db } from '../connection';

export interface AgentCaRow {
  id: string;
  active: boolean;
  certificate_pem: string;
  key_iv: Buffer;
  key_tag: Buffer;
  key_ciphertext: Buffer;
  created_at: Date;
  retired_at: Date | null;
}

export type NewAgentCa = Pick<AgentCaRow, 'certificate_pem' | 'key_iv' | 'key_tag' | 'key_ciphertext'>;

/** Serialises CA creation across api replicas until the surrounding transaction ends. */
export async function lockAgentCa(trx: Db): Promise<void> {
  await trx.raw(`SELECT pg_advisory_xact_lock(hashtextextended('agent_ca', 0))`);
}

export async function findActiveAgentCa(db: Db): Promise<AgentCaRow | undefined> {
  return db<AgentCaRow>('agent_ca').where({ active: true }).first();
}

export async function insertAgentCa(db: Db, ca: NewAgentCa): Promise<AgentCaRow> {
  const [row] = await db<AgentCaRow>('agent_ca')
    .insert(ca as never)
    .returning('*');
  return row!;
}
