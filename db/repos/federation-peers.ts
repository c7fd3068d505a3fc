import type { Db } from '../connection';

/** A federation peer: another installation this tenant calls with the `peer` PAT it issued us. */
export interface PeerRow {
  id: string;
  tenant_id: string;
  name: string;
  base_url: string;
  credential_iv: Buffer;
  credential_tag: Buffer;
  credential_ciphertext: Buffer;
  remote_installation_id: string | null;
  remote_name: string | null;
  remote_version: string | null;
  remote_agent_endpoint: string | null;
  healthy: boolean;
  last_ping_at: Date | null;
  last_seen_at: Date | null;
  last_latency_ms: number | null;
  last_error: string | null;
  created_by: string;
  row_version: number;
  created_at: Date;
  updated_at: Date;
}

export async function findPeer(db: Db, tenantId: string, id: string): Promise<PeerRow | undefined> {
  return db<PeerRow>('federation_peers').where({ tenant_id: tenantId, id }).first();
}
