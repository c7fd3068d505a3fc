import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { releaseManagedConfigurations } from '../../../db/repos/configurations';
import { emitEvents, type EventType } from '../../../db/repos/events';
import {
  deleteGitSource,
  findGitSource,
  insertGitSource,
  listGitSourcesQuery,
  lockGitSource,
  updateGitSource,
  type GitSourceRow,
  type GitSourceSettings,
  type GitSourceView,
} from '../../../db/repos/git-sources';
import { listSyncRunsQuery, type SyncRunRow } from '../../../db/repos/git-sync-runs';
import { sealCredentials } from '../../../domain/git/credentials';
import { fileRepositoryProblem, originOf } from '../../../domain/git/source-fields';
import { checkTarget } from '../../../domain/policies/evaluate';
import { generateToken, hashToken } from '../../../domain/tokens/secret-token';
import { encryptionKey } from '../../../platform/secrets';
import type { Db } from '../../../db/connection';
import type { GitSyncWake } from '../../../workflows/definitions';
import type { AppContext } from '../../http/context';
import { ifMatchVersions } from '../../http/etag';
import { pageOf, paginate, respondPage } from '../../http/pagination';
import { route, type RouteDef, type RouteInput } from '../../http/route';
import { conflictOnDuplicate, problems } from '../../problems';
import type { ResourceRouteOptions } from '../options';
import {
  createSourceBody,
  credentialsMismatch,
  presentSource,
  presentSyncRun,
  sourceId,
  sourceListQuery,
  sourceSchema,
  syncRequestedSchema,
  syncRunSchema,
  syncRunsQuery,
  updateSourceBody,
  webhookTokenSchema,
  webhookUrl,
  type CredentialsBody,
} from './schema';
import { GitSyncWorkflows, type SourceRef } from './workflow-client';

const SOURCE = '/api/git-sources';
const tag = 'git-sources';

type SourceBody = {
  name: string;
  repoUrl: string;
  branch: string;
  path: string;
  pollIntervalSeconds?: number;
  autoPublish: boolean;
  rolloutTemplate: { target: { groupIds: string[]; agentIds: string[] } } | null;
};

const nameTaken = (name: string) => conflictOnDuplicate(`A Git source named '${name}' already exists.`);

async function mustFind(db: Db, tenantId: string, id: string): Promise<GitSourceView> {
  const row = await findGitSource(db, tenantId, id);
  if (!row) throw problems.notFound('Git source', id);
  return row;
}

/** Locks the source for a change: 404, then If-Match (412). */
async function lockForChange(db: Db, tenantId: string, id: string, ctx: AppContext): Promise<GitSourceRow> {
  const row = await lockGitSource(db, tenantId, id);
  if (!row) throw problems.notFound('Git source', id);
  const versions = ifMatchVersions(ctx);
  if (versions && !versions.includes(row.row_version)) throw problems.preconditionFailed('Git source', id);
  return row;
}

/** The groups and agents a rollout template names exist in the tenant (404 otherwise, as for a rollout). */
async function checkTemplate(db: Db, tenantId: string, body: SourceBody): Promise<void> {
  if (body.rolloutTemplate) await checkTarget(db, tenantId, body.rolloutTemplate.target);
}

/** A file:// repository must lie under Git:FileRoots (none: file:// is refused), 400 otherwise. */
function checkFileRoots(repoUrl: string, roots: readonly string[]): void {
  const why = fileRepositoryProblem(repoUrl, roots);
  if (why) throw problems.validation([{ path: 'body.repoUrl', message: why }]);
}

function settingsOf(body: SourceBody, defaultPollIntervalSeconds: number): GitSourceSettings {
  return {
    name: body.name,
    repo_url: body.repoUrl,
    branch: body.branch,
    path: body.path,
    poll_interval_seconds: body.pollIntervalSeconds ?? defaultPollIntervalSeconds,
    auto_publish: body.autoPublish,
    rollout_template: body.rolloutTemplate,
  };
}

/**
 * The credentials a PUT leaves: omitted keeps the stored ones, but never for a repository
 * on another origin (they would be sent to a host the operator who stored them never named,
 * and nobody can read them to check): such a PUT must send them again, or null.
 */
function credentialsOnUpdate(current: GitSourceRow, repoUrl: string, sent: CredentialsBody | null | undefined) {
  if (sent !== undefined) return sent;
  if (current.credentials_kind === null) return undefined;
  const why =
    originOf(current.repo_url) !== originOf(repoUrl)
      ? 'are required when repoUrl moves to another host: stored credentials never follow the URL; send them again, or null'
      : credentialsMismatch(repoUrl, current.credentials_kind);
  // The stored credentials make this body wrong (another body is fine for another source): 409.
  if (why) throw problems.conflictOn('body.credentials', why);
  return undefined;
}

/** A sync of a moved source (another repository, branch or directory) must not be skipped as "already at this tip". */
function movedSource(current: GitSourceRow, settings: GitSourceSettings) {
  const moved =
    current.repo_url !== settings.repo_url || current.branch !== settings.branch || current.path !== settings.path;
  return moved ? { last_synced_sha: null, last_synced_at: null } : {};
}

type GitSourceRouteOptions = ResourceRouteOptions & { workflows: GitSyncWorkflows };
type SourceRouteKit = ReturnType<typeof sourceRouteKit>;

/** What the routes of Git sources share: how a source reads, and what a change does next. */
function sourceRouteKit(options: GitSourceRouteOptions) {
  const { settings, baseUrl, workflows, logger } = options;
  const present = (row: GitSourceView) => presentSource(row, baseUrl);
  const key = () => encryptionKey(settings);

  async function announce(db: Db, row: GitSourceView, type: EventType) {
    await emitEvents(db, [{ tenantId: row.tenant_id, type, source: SOURCE, subject: row.id, data: present(row) }]);
  }

  /** After commit: the loop reads the source again. A failure leaves the change in place (the next wake-up repairs it). */
  const wakeAfterCommit = (input: Pick<RouteInput<unknown, unknown, unknown>, 'afterCommit'>, source: SourceRef) =>
    input.afterCommit(() => wakeOrWarn(workflows, logger, source, { reason: 'source-changed' }));

  return { present, key, announce, wakeAfterCommit };
}

export function gitSourcesRoutes(options: GitSourceRouteOptions): RouteDef[] {
  const kit = sourceRouteKit(options);
  return [...sourceRoutes(options, kit), setPaused(kit, true), setPaused(kit, false), ...syncRoutes(options)];
}

/** Sources themselves: list, register, read, change and delete. */
function sourceRoutes(options: GitSourceRouteOptions, kit: SourceRouteKit): RouteDef[] {
  const { settings, baseUrl, workflows, logger } = options;
  const { present, key, announce, wakeAfterCommit } = kit;
  return [
    route({
      method: 'get',
      path: SOURCE,
      summary: 'List Git sources',
      tag,
      permission: 'read',
      query: sourceListQuery,
      response: { status: 200, description: 'A page of sources, oldest first.', schema: pageOf(sourceSchema) },
      handler: async ({ db, principal, query, ctx }) => {
        const filters = { q: query.q, paused: query.paused === undefined ? undefined : query.paused === 'true' };
        const page = await paginate<GitSourceView>(listGitSourcesQuery(db, principal.tenantId, filters), query, {
          columns: [
            { column: 'git_sources.created_at', type: 'timestamp' },
            { column: 'git_sources.id', type: 'uuid' },
          ],
          direction: 'asc',
        });
        return { body: respondPage(ctx, baseUrl, page, present) };
      },
    }),
    route({
      method: 'post',
      path: SOURCE,
      summary: 'Register a Git source; its sync loop starts at once',
      tag,
      permission: 'operate',
      resource: 'git-source',
      etag: 'live',
      body: createSourceBody,
      response: { status: 201, description: 'The source.', schema: sourceSchema },
      handler: async (input) => {
        const { db, principal, body } = input;
        checkFileRoots(body.repoUrl, settings.git.fileRoots);
        await checkTemplate(db, principal.tenantId, body);
        const id = randomUUID(); // before the insert: the sealed credentials are bound to it
        const row = await insertGitSource(db, {
          id,
          tenant_id: principal.tenantId,
          created_by: principal.name,
          ...settingsOf(body, settings.git.defaultPollIntervalSeconds),
          ...sealCredentials(key(), id, body.credentials),
        }).catch(nameTaken(body.name));
        await announce(db, row, 'git-source.created');
        wakeAfterCommit(input, row);
        return {
          status: 201,
          body: present(row),
          rowVersion: row.row_version,
          resourceId: row.id,
          headers: { Location: `${SOURCE}/${row.id}` },
        };
      },
    }),
    route({
      method: 'get',
      path: `${SOURCE}/{id}`,
      summary: 'One Git source',
      tag,
      permission: 'read',
      resource: 'git-source',
      etag: 'live',
      params: sourceId,
      response: { status: 200, description: 'The source.', schema: sourceSchema },
      handler: async ({ db, principal, params }) => {
        const row = await mustFind(db, principal.tenantId, params.id);
        return { body: present(row), rowVersion: row.row_version };
      },
    }),
    route({
      method: 'put',
      path: `${SOURCE}/{id}`,
      summary: "Replace a source's settings (credentials: omitted kept, null removed, an object replaced)",
      tag,
      permission: 'operate',
      resource: 'git-source',
      etag: 'live',
      params: sourceId,
      body: updateSourceBody,
      response: { status: 200, description: 'The updated source.', schema: sourceSchema },
      handler: async (input) => {
        const { db, principal, params, body, ctx } = input;
        const tenantId = principal.tenantId;
        const current = await lockForChange(db, tenantId, params.id, ctx);
        checkFileRoots(body.repoUrl, settings.git.fileRoots);
        const credentials = credentialsOnUpdate(current, body.repoUrl, body.credentials);
        await checkTemplate(db, tenantId, body);
        const changes = settingsOf(body, settings.git.defaultPollIntervalSeconds);
        await updateGitSource(db, tenantId, params.id, {
          ...changes,
          ...movedSource(current, changes),
          ...(credentials === undefined ? {} : sealCredentials(key(), params.id, credentials)),
        }).catch(nameTaken(body.name));
        const row = await mustFind(db, tenantId, params.id);
        await announce(db, row, 'git-source.updated');
        wakeAfterCommit(input, row);
        return { body: present(row), rowVersion: row.row_version };
      },
    }),
    route({
      method: 'delete',
      path: `${SOURCE}/{id}`,
      summary: 'Delete a source; the configurations it managed stay, no longer managed',
      tag,
      permission: 'operate',
      resource: 'git-source',
      etag: 'live',
      params: sourceId,
      response: { status: 204, description: 'Deleted, with its sync runs; its loop ends.' },
      handler: async ({ db, principal, params, ctx, afterCommit }) => {
        const row = await lockForChange(db, principal.tenantId, params.id, ctx);
        const released = await releaseManagedConfigurations(db, row.id);
        await deleteGitSource(db, row.id);
        await emitEvents(db, [
          {
            tenantId: row.tenant_id,
            type: 'git-source.deleted',
            source: SOURCE,
            subject: row.id,
            data: { id: row.id, name: row.name, releasedConfigurations: released },
          },
        ]);
        afterCommit(() =>
          workflows
            .ended(row.id)
            .catch((error: unknown) =>
              logger.warn(
                { err: error, sourceId: row.id },
                'git-sync loop not told of the deletion; it ends at its next poll',
              ),
            ),
        );
        return { status: 204 };
      },
    }),
  ];
}

/** Pause and resume: idempotent, 200 with the source either way. */
function setPaused({ present, announce, wakeAfterCommit }: SourceRouteKit, paused: boolean): RouteDef {
  return route({
    method: 'post',
    path: `/api/git-sources/{id}/${paused ? 'pause' : 'resume'}`,
    summary: paused
      ? 'Pause a source: no poll or webhook makes a sync run (idempotent)'
      : 'Resume a paused source (idempotent)',
    tag,
    permission: 'operate',
    resource: 'git-source',
    etag: 'live',
    params: sourceId,
    response: { status: 200, description: 'The source.', schema: sourceSchema },
    handler: async (input) => {
      const { db, principal, params, ctx } = input;
      const current = await lockForChange(db, principal.tenantId, params.id, ctx);
      const changed = current.paused !== paused;
      if (changed) await updateGitSource(db, principal.tenantId, params.id, { paused });
      const row = await mustFind(db, principal.tenantId, params.id);
      if (changed) await announce(db, row, paused ? 'git-source.paused' : 'git-source.resumed');
      wakeAfterCommit(input, row); // unchanged too: it restarts a loop that was lost
      return { body: present(row), rowVersion: row.row_version };
    },
  });
}

/** A source's syncing: sync now, its webhook token, its sync runs. */
function syncRoutes(options: GitSourceRouteOptions): RouteDef[] {
  const { baseUrl, workflows } = options;
  return [
    route({
      method: 'post',
      path: `${SOURCE}/{id}/sync`,
      summary: 'Force a sweep (a sync run with trigger manual, even at an already synced tip)',
      tag,
      permission: 'operate',
      resource: 'git-source',
      transactional: false, // waits on Temporal: no transaction held meanwhile
      params: sourceId,
      response: {
        status: 202,
        description: 'The sweep is requested; its run appears in sync-runs.',
        schema: syncRequestedSchema,
      },
      handler: async ({ db, principal, params }) => {
        const row = await mustFind(db, principal.tenantId, params.id);
        if (row.paused) throw problems.invalidTransition(`Git source '${row.name}' is paused; resume it to sync.`);
        await workflows.wake(row, { reason: 'manual' });
        const syncRuns = `${SOURCE}/${row.id}/sync-runs`;
        return {
          status: 202,
          body: { sourceId: row.id, trigger: 'manual', syncRuns },
          headers: { Location: syncRuns },
        };
      },
    }),
    route({
      method: 'post',
      path: `${SOURCE}/{id}/webhook-token`,
      summary:
        "Generate or rotate the source's webhook token (shown once; the previous one stops working at once); admin only, as are all secrets",
      tag,
      permission: 'admin',
      resource: 'git-source',
      // The row version alone: a digest of this body would be one of the secret, in a header.
      etag: true,
      params: sourceId,
      response: { status: 201, description: 'The token, shown this once.', schema: webhookTokenSchema },
      handler: async ({ db, principal, params, ctx }) => {
        const current = await lockForChange(db, principal.tenantId, params.id, ctx);
        const token = generateToken('svc-wh');
        const updated = (await updateGitSource(db, principal.tenantId, params.id, {
          webhook_token_hash: hashToken(token),
          webhook_token_created_at: new Date(),
        }))!;
        const createdAt = updated.webhook_token_created_at!.toISOString();
        await emitEvents(db, [
          {
            tenantId: updated.tenant_id,
            type: 'git-source.webhook-token-rotated',
            source: SOURCE,
            subject: updated.id,
            data: { id: updated.id, name: updated.name, createdAt, replaced: current.webhook_token_hash !== null },
          },
        ]);
        return {
          status: 201,
          body: { token, createdAt, url: webhookUrl(baseUrl, updated.id) },
          rowVersion: updated.row_version,
          headers: { 'Cache-Control': 'no-store' },
        };
      },
    }),
    route({
      method: 'get',
      path: `${SOURCE}/{id}/sync-runs`,
      summary: "A source's sync runs, newest first",
      tag,
      permission: 'read',
      resource: 'git-source',
      params: sourceId,
      query: syncRunsQuery,
      response: { status: 200, description: 'A page of sync runs.', schema: pageOf(syncRunSchema) },
      handler: async ({ db, principal, params, query, ctx }) => {
        await mustFind(db, principal.tenantId, params.id);
        const page = await paginate<SyncRunRow>(listSyncRunsQuery(db, principal.tenantId, params.id), query, {
          columns: [
            { column: 'started_at', type: 'timestamp' },
            { column: 'id', type: 'uuid' },
          ],
          direction: 'desc',
        });
        return { body: respondPage(ctx, baseUrl, page, presentSyncRun) };
      },
    }),
  ];
}

/** Wakes a loop after a committed change; Temporal being away is logged, not the caller's failure. */
async function wakeOrWarn(workflows: GitSyncWorkflows, logger: Logger, source: SourceRef, wake: GitSyncWake) {
  await workflows
    .wake(source, wake)
    .catch((error: unknown) =>
      logger.warn(
        { err: error, sourceId: source.id },
        'git-sync loop not woken; it reads the source at its next wake-up (a change, sync or webhook starts it)',
      ),
    );
}
