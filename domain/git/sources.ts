/**
 * What operators do to Git sources: register one, change it, pause or resume it, delete it,
 * rotate its webhook token, ask for a sync. Each operation enforces the rules of a source
 * (file:// only under Git:FileRoots, a template's groups and agents exist, credentials never
 * follow the URL to another host, unique names) and writes its `git-source.*` event, the
 * source as the API shows it. Waking the source's sync loop is the caller's, after commit.
 */
import type { Db } from '../../db/connection';
import { releaseManagedConfigurations } from '../../db/repos/configurations';
import { emitEvents, type EventType } from '../../db/repos/events';
import {
  deleteGitSource as deleteGitSourceRow,
  findGitSource,
  insertGitSource,
  lockGitSource,
  updateGitSource,
  type GitSourceRow,
  type GitSourceSettings,
  type GitSourceView,
} from '../../db/repos/git-sources';
import {
  ConflictingFieldError,
  InvalidFieldError,
  InvalidTransitionError,
  nameTaken,
  NotFoundError,
  StaleVersionError,
} from '../errors';
import { checkTarget } from '../policies/evaluate';
import { STRATEGY_DEFAULTS } from '../rollout-creation';
import type { RolloutStrategy, RolloutTarget } from '../rollouts';
import { generateToken, hashToken } from '../tokens/secret-token';
import { sealCredentials, type GitCredentials } from './credentials';
import { credentialsMismatch, fileRepositoryProblem, originOf } from './source-fields';

const SOURCE = '/api/git-sources';

export interface GitRolloutTemplate {
  target: RolloutTarget;
  strategy: RolloutStrategy;
}

/** A source's settings, as an operator sends them. */
export interface GitSourceFields {
  name: string;
  repoUrl: string;
  branch: string;
  path: string;
  /** Omitted: the installation's default. */
  pollIntervalSeconds?: number;
  autoPublish: boolean;
  rolloutTemplate: GitRolloutTemplate | null;
  /** PEM certificates trusted for this https:// source alone; null: the system's store. */
  caCertificate: string | null;
}

/** What the operations need of the installation and of the caller. */
export interface GitSourceContext {
  tenantId: string;
  /** Git:FileRoots: where a file:// repository may be (none: file:// is refused). */
  fileRoots: readonly string[];
  defaultPollIntervalSeconds: number;
  /** Secrets:EncryptionKey, which seals the credentials. */
  key: Buffer;
  /** Where the Git host posts this source's webhook (the API's URL, which the view shows). */
  webhookUrl: (sourceId: string) => string;
}

const iso = (date: Date | null) => date?.toISOString() ?? null;

/** The source's rollout template with the strategy its rollouts get (a template stored before a field existed: its default). */
function templateOf(row: GitSourceRow) {
  const template = row.rollout_template as GitRolloutTemplate | null;
  if (!template) return null;
  const { strategy } = template;
  const offlineAgents = strategy.offlineAgents ?? STRATEGY_DEFAULTS.offlineAgents;
  const lateArrivalSeconds = strategy.lateArrivalSeconds ?? STRATEGY_DEFAULTS.lateArrivalSeconds;
  return { target: template.target, strategy: { ...strategy, offlineAgents, lateArrivalSeconds } };
}

/** How a source reads, in the API and in its events; never its credentials or webhook token. */
export function gitSourceView(row: GitSourceView, webhookUrl: string) {
  const run = row.last_run;
  return {
    id: row.id,
    name: row.name,
    repoUrl: row.repo_url,
    branch: row.branch,
    path: row.path,
    pollIntervalSeconds: row.poll_interval_seconds,
    autoPublish: row.auto_publish,
    paused: row.paused,
    credentials: row.credentials_kind ? { kind: row.credentials_kind, configured: true as const } : null,
    caCertificate: row.ca_certificate,
    webhook: {
      url: webhookUrl,
      configured: row.webhook_token_hash !== null,
      createdAt: iso(row.webhook_token_created_at),
    },
    rolloutTemplate: templateOf(row),
    lastSyncedSha: row.last_synced_sha,
    lastSyncedAt: iso(row.last_synced_at),
    lastRun: run && {
      id: run.id,
      trigger: run.trigger,
      commitSha: run.commit_sha,
      status: run.status,
      error: run.error,
      startedAt: new Date(run.started_at).toISOString(),
      finishedAt: run.finished_at === null ? null : new Date(run.finished_at).toISOString(),
    },
    createdBy: row.created_by,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

async function announce(db: Db, context: GitSourceContext, type: EventType, row: GitSourceView) {
  const data = gitSourceView(row, context.webhookUrl(row.id));
  await emitEvents(db, [{ tenantId: row.tenant_id, type, source: SOURCE, subject: row.id, data }]);
}

async function mustFind(db: Db, tenantId: string, id: string): Promise<GitSourceView> {
  const row = await findGitSource(db, tenantId, id);
  if (!row) throw new NotFoundError('Git source', id);
  return row;
}

/** Locks the source for a change: not found, then If-Match (`versions`). */
async function lockForChange(db: Db, tenantId: string, id: string, versions: number[] | undefined) {
  const row = await lockGitSource(db, tenantId, id);
  if (!row) throw new NotFoundError('Git source', id);
  if (versions && !versions.includes(row.row_version)) throw new StaleVersionError('Git source', id);
  return row;
}

/** A file:// repository lies under Git:FileRoots. */
function checkFileRoots(context: GitSourceContext, repoUrl: string): void {
  const why = fileRepositoryProblem(repoUrl, context.fileRoots);
  if (why) throw new InvalidFieldError('repoUrl', why);
}

/** The groups and agents a rollout template names exist in the tenant (as for a rollout). */
async function checkTemplate(db: Db, context: GitSourceContext, fields: GitSourceFields): Promise<void> {
  if (fields.rolloutTemplate) await checkTarget(db, context.tenantId, fields.rolloutTemplate.target);
}

function settingsOf(fields: GitSourceFields, context: GitSourceContext): GitSourceSettings {
  return {
    name: fields.name,
    repo_url: fields.repoUrl,
    branch: fields.branch,
    path: fields.path,
    poll_interval_seconds: fields.pollIntervalSeconds ?? context.defaultPollIntervalSeconds,
    auto_publish: fields.autoPublish,
    rollout_template: fields.rolloutTemplate,
    ca_certificate: fields.caCertificate,
  };
}

export async function registerGitSource(
  db: Db,
  context: GitSourceContext,
  request: { id: string; createdBy: string; fields: GitSourceFields; credentials: GitCredentials | null },
): Promise<GitSourceView> {
  checkFileRoots(context, request.fields.repoUrl);
  await checkTemplate(db, context, request.fields);
  const row = await insertGitSource(db, {
    id: request.id, // chosen before the insert: the sealed credentials are bound to it
    tenant_id: context.tenantId,
    created_by: request.createdBy,
    ...settingsOf(request.fields, context),
    ...sealCredentials(context.key, request.id, request.credentials),
  }).catch(nameTaken('Git source', request.fields.name));
  await announce(db, context, 'git-source.created', row);
  return row;
}

/**
 * The credentials a change leaves: omitted keeps the stored ones, but never for a repository
 * on another origin (they would be sent to a host the operator who stored them never named,
 * and nobody can read them to check): such a change must send them again, or null.
 */
function credentialsOnChange(current: GitSourceRow, repoUrl: string, sent: GitCredentials | null | undefined) {
  if (sent !== undefined) return sent;
  if (current.credentials_kind === null) return undefined;
  const why =
    originOf(current.repo_url) !== originOf(repoUrl)
      ? 'are required when repoUrl moves to another host: stored credentials never follow the URL; send them again, or null'
      : credentialsMismatch(repoUrl, current.credentials_kind);
  // The stored credentials make this request wrong (it would be fine for another source).
  if (why) throw new ConflictingFieldError('credentials', why);
  return undefined;
}

/** A sync of a moved source (another repository, branch or directory) must not be skipped as "already at this tip". */
function movedSource(current: GitSourceRow, settings: GitSourceSettings) {
  const moved =
    current.repo_url !== settings.repo_url || current.branch !== settings.branch || current.path !== settings.path;
  return moved ? { last_synced_sha: null, last_synced_at: null } : {};
}

/** Replaces a source's settings; `credentials` omitted keeps them (same host), null removes them. */
export async function changeGitSource(
  db: Db,
  context: GitSourceContext,
  request: { id: string; versions?: number[]; fields: GitSourceFields; credentials?: GitCredentials | null },
): Promise<GitSourceView> {
  const { id, fields } = request;
  const current = await lockForChange(db, context.tenantId, id, request.versions);
  checkFileRoots(context, fields.repoUrl);
  const credentials = credentialsOnChange(current, fields.repoUrl, request.credentials);
  await checkTemplate(db, context, fields);
  const settings = settingsOf(fields, context);
  await updateGitSource(db, context.tenantId, id, {
    ...settings,
    ...movedSource(current, settings),
    ...(credentials === undefined ? {} : sealCredentials(context.key, id, credentials)),
  }).catch(nameTaken('Git source', fields.name));
  const row = await mustFind(db, context.tenantId, id);
  await announce(db, context, 'git-source.updated', row);
  return row;
}

/** Pauses or resumes a source; idempotent (no event when it already was). */
export async function setGitSourcePaused(
  db: Db,
  context: GitSourceContext,
  request: { id: string; versions?: number[]; paused: boolean },
): Promise<GitSourceView> {
  const { id, paused } = request;
  const current = await lockForChange(db, context.tenantId, id, request.versions);
  const changed = current.paused !== paused;
  if (changed) await updateGitSource(db, context.tenantId, id, { paused });
  const row = await mustFind(db, context.tenantId, id);
  if (changed) await announce(db, context, paused ? 'git-source.paused' : 'git-source.resumed', row);
  return row;
}

/** Deletes a source and its sync runs; the configurations it managed stay, no longer managed. */
export async function deleteGitSource(
  db: Db,
  tenantId: string,
  request: { id: string; versions?: number[] },
): Promise<void> {
  const row = await lockForChange(db, tenantId, request.id, request.versions);
  const released = await releaseManagedConfigurations(db, row.id);
  await deleteGitSourceRow(db, row.id);
  const data = { id: row.id, name: row.name, releasedConfigurations: released };
  await emitEvents(db, [{ tenantId, type: 'git-source.deleted', source: SOURCE, subject: row.id, data }]);
}

/** Generates the source's webhook token, replacing any: the token in clear, shown once; only its hash is kept. */
export async function rotateWebhookToken(
  db: Db,
  tenantId: string,
  request: { id: string; versions?: number[] },
): Promise<{ token: string; row: GitSourceRow }> {
  const current = await lockForChange(db, tenantId, request.id, request.versions);
  const token = generateToken('svc-wh');
  const row = (await updateGitSource(db, tenantId, request.id, {
    webhook_token_hash: hashToken(token),
    webhook_token_created_at: new Date(),
  }))!;
  const data = {
    id: row.id,
    name: row.name,
    createdAt: row.webhook_token_created_at!.toISOString(),
    replaced: current.webhook_token_hash !== null,
  };
  await emitEvents(db, [{ tenantId, type: 'git-source.webhook-token-rotated', source: SOURCE, subject: row.id, data }]);
  return { token, row };
}

/** The source an operator asks to sync now; a paused one syncs nothing until resumed. */
export async function sourceToSync(db: Db, tenantId: string, id: string): Promise<GitSourceView> {
  const row = await mustFind(db, tenantId, id);
  if (row.paused) throw new InvalidTransitionError(`Git source '${row.name}' is paused; resume it to sync.`);
  return row;
}
