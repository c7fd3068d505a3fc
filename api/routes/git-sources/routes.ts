import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { findGitSource, listGitSourcesQuery, type GitSourceView } from '../../../db/repos/git-sources';
import { listSyncRunsQuery, type SyncRunRow } from '../../../db/repos/git-sync-runs';
import {
  changeGitSource,
  deleteGitSource,
  registerGitSource,
  rotateWebhookToken,
  setGitSourcePaused,
  sourceToSync,
  type GitSourceContext,
} from '../../../domain/git/sources';
import { encryptionKey } from '../../../platform/secrets';
import type { GitSyncWake } from '../../../workflows/definitions';
import type { Principal } from '../../auth/principal';
import { ifMatchVersions } from '../../http/etag';
import { pageOf, paginate, respondPage } from '../../http/pagination';
import { route, type RouteDef, type RouteInput } from '../../http/route';
import { problems } from '../../problems';
import type { ResourceRouteOptions } from '../options';
import {
  createSourceBody,
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
} from './schema';
import { GitSyncWorkflows, type SourceRef } from './workflow-client';

const SOURCE = '/api/git-sources';
const tag = 'git-sources';

type GitSourceRouteOptions = ResourceRouteOptions & { workflows: GitSyncWorkflows };
type SourceRouteKit = ReturnType<typeof sourceRouteKit>;

/** What the routes of Git sources share: the operations' context, how a source reads, and what a change does next. */
function sourceRouteKit(options: GitSourceRouteOptions) {
  const { settings, baseUrl, workflows, logger } = options;
  const present = (row: GitSourceView) => presentSource(row, baseUrl);

  const contextOf = (principal: Principal): GitSourceContext => ({
    tenantId: principal.tenantId,
    fileRoots: settings.git.fileRoots,
    defaultPollIntervalSeconds: settings.git.defaultPollIntervalSeconds,
    key: encryptionKey(settings),
    webhookUrl: (id) => webhookUrl(baseUrl, id),
  });

  /** After commit: the loop reads the source again. A failure leaves the change in place (the next wake-up repairs it). */
  const wakeAfterCommit = (input: Pick<RouteInput<unknown, unknown, unknown>, 'afterCommit'>, source: SourceRef) =>
    input.afterCommit(() => wakeOrWarn(workflows, logger, source, { reason: 'source-changed' }));

  return { present, contextOf, wakeAfterCommit };
}

export function gitSourcesRoutes(options: GitSourceRouteOptions): RouteDef[] {
  const kit = sourceRouteKit(options);
  return [...sourceRoutes(options, kit), setPaused(kit, true), setPaused(kit, false), ...syncRoutes(options)];
}

/** Sources themselves: list, register, read, change and delete. */
function sourceRoutes(options: GitSourceRouteOptions, kit: SourceRouteKit): RouteDef[] {
  const { baseUrl, workflows, logger } = options;
  const { present, contextOf, wakeAfterCommit } = kit;
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
        const { credentials, ...fields } = body;
        const row = await registerGitSource(db, contextOf(principal), {
          id: randomUUID(),
          createdBy: principal.name,
          fields,
          credentials,
        });
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
        const row = await findGitSource(db, principal.tenantId, params.id);
        if (!row) throw problems.notFound('Git source', params.id);
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
        const { credentials, ...fields } = body;
        const versions = ifMatchVersions(ctx);
        const row = await changeGitSource(db, contextOf(principal), { id: params.id, versions, fields, credentials });
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
        await deleteGitSource(db, principal.tenantId, { id: params.id, versions: ifMatchVersions(ctx) });
        afterCommit(() =>
          workflows
            .ended(params.id)
            .catch((error: unknown) =>
              logger.warn(
                { err: error, sourceId: params.id },
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
function setPaused({ present, contextOf, wakeAfterCommit }: SourceRouteKit, paused: boolean): RouteDef {
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
      const versions = ifMatchVersions(ctx);
      const row = await setGitSourcePaused(db, contextOf(principal), { id: params.id, versions, paused });
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
        const row = await sourceToSync(db, principal.tenantId, params.id);
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
        const request = { id: params.id, versions: ifMatchVersions(ctx) };
        const { token, row } = await rotateWebhookToken(db, principal.tenantId, request);
        return {
          status: 201,
          body: { token, createdAt: row.webhook_token_created_at!.toISOString(), url: webhookUrl(baseUrl, row.id) },
          rowVersion: row.row_version,
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
        if (!(await findGitSource(db, principal.tenantId, params.id))) throw problems.notFound('Git source', params.id);
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
