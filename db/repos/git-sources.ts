import type { Db } from '../connection';

export type GitCredentialsKind = 'https' | 'ssh';

export interface GitSourceRow {
  id: string;
  tenant_id: string;
  name: string;
  repo_url: string;
  branch: string;
  path: string;
  poll_interval_seconds: number;
  auto_publish: boolean;
  paused: boolean;
  credentials_kind: GitCredentialsKind | null;
  credentials_iv: Buffer | null;
  credentials_tag: Buffer | null;
  credentials_ciphertext: Buffer | null;
  webhook_token_hash: Buffer | null;
  webhook_token_created_at: Date | null;
  rollout_template: unknown;
  last_synced_sha: string | null;
  last_synced_at: Date | null;
  created_by: string;
  row_version: number;
  created_at: Date;
  updated_at: Date;
}

export async function findGitSource(db: Db, tenantId: string, id: string): Promise<GitSourceRow | undefined> {
  return db<GitSourceRow>('git_sources').where({ tenant_id: tenantId, id }).first();
}

/** The source a webhook names, whatever its tenant (the webhook's token decides who may call). */
export async function findGitSourceById(db: Db, id: string): Promise<GitSourceRow | undefined> {
  return db<GitSourceRow>('git_sources').where({ id }).first();
}

/** Records the commit a sync run applied, so the next wake-up at the same tip does nothing. */
export async function markGitSourceSynced(db: Db, id: string, sha: string): Promise<void> {
  await db('git_sources').where({ id }).update({ last_synced_sha: sha, last_synced_at: db.fn.now() });
}
