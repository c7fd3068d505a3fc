import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { findConfiguration } from '../../../db/repos/configurations';
import { findVersionWithContent } from '../../../db/repos/configuration-versions';
import {
  findFederatedRollout,
  listFederatedRolloutsQuery,
  listInstallations,
  type FederatedRolloutRow,
} from '../../../db/repos/federated-rollouts';
import { findPeer } from '../../../db/repos/federation-peers';
import { createFederatedRollout, transitionFederatedRollout } from '../../../domain/federation/federated-rollouts';
import {
  FEDERATED_ROLLOUT_OPERATIONS,
  FEDERATED_TRANSITIONS,
  refusedFederatedOperation,
  type FederatedRolloutOperation,
} from '../../../domain/rollouts';
import { ifMatchVersions } from '../../http/etag';
import { pageOf, pageQuery, paginate, respondPage } from '../../http/pagination';
import { route, type RouteDef } from '../../http/route';
import type { z } from '../../http/zod';
import { problemDocument } from '../../middleware/problems';
import { problems } from '../../problems';
import type { FederationRouteOptions } from '.';
import { askEverywhere, dryRunEverywhere, type PlannedInstallation, type PlannedVersion } from './rollouts-dry-run';
import { incomingRolloutRoutes } from './rollouts-incoming';
import {
  createFederatedRolloutBody,
  federatedDryRunSchema,
  federatedRolloutId,
  federatedRolloutListQuery,
  federatedRolloutSchema,
  federatedRolloutSummarySchema,
  presentFederatedRollout,
  presentFederatedRolloutSummary,
} from './rollouts-schema';
import { FederatedRolloutWorkflows } from './rollouts-workflow-client';

const SOURCE = '/api/federation/rollouts';
const tag = 'federation';

const DESCRIPTIONS: Record<FederatedRolloutOperation, string> = {
  pause: 'Pause every installation’s rollout; no further installation starts.',
  resume: 'Resume every paused installation’s rollout (and try again a peer that stopped answering).',
  abort: 'Abort every installation’s rollout; the installations not started yet never start.',
  rollback: 'Roll back every installation’s rollout that started.',
};

type CreateBody = z.output<typeof createFederatedRolloutBody>;

/** Temporal did not take the workflow: the federated rollout ends failed at once (503), by the hand of who created it. */
async function giveUp(db: Knex, logger: Logger, row: FederatedRolloutRow, error: unknown): Promise<never> {
  const reason = `its workflow could not be started (${(error as Error).message}); nothing was rolled out`;
  logger.warn({ err: error, federatedRolloutId: row.id }, 'federated rollout not started');
  const failed = { federatedRolloutId: row.id, from: ['running' as const], to: 'failed' as const, reason };
  await db.transaction((trx) => transitionFederatedRollout(trx, { ...failed, actor: row.created_by }));
  throw problems.unavailable(`Temporal did not take the federated rollout (${(error as Error).message}). Retry.`);
}

/** What a body asks for, checked here: a published version of one of this tenant's configurations, known peers. */
async function plan(db: Knex, installationName: string, tenantId: string, body: CreateBody, actor: string) {
  const configuration = await findConfiguration(db, tenantId, body.configurationId);
  if (!configuration) throw problems.notFound('configuration', body.configurationId);
  const version = await findVersionWithContent(db, configuration.id, body.version);
  if (!version) throw problems.notFound('configuration version', `${configuration.id}/${body.version}`);
  if (version.state !== 'published')
    throw problems.conflict(
      `Version ${body.version} of configuration '${configuration.name}' is a draft; publish it before rolling it out.`,
    );
  const planned: PlannedVersion = {
    tenantId,
    configurationId: configuration.id,
    version: version.version,
    contentHash: version.content_hash,
    copy: { name: configuration.name, format: configuration.format, content: version.content },
    actor,
  };
  return { planned, installations: await plannedInstallations(db, installationName, tenantId, body) };
}

async function detail(db: Knex, row: FederatedRolloutRow) {
  return presentFederatedRollout(row, await listInstallations(db, row.id));
}

/** Each installation of the body with its peer (404 for one that is not this tenant's). */
async function plannedInstallations(
  db: Knex,
  installationName: string,
  tenantId: string,
  body: CreateBody,
): Promise<PlannedInstallation[]> {
  return Promise.all(
    body.installations.map(async (installation) => {
      if (installation.peerId === 'local') return { peer: null, name: installationName, ...installation };
      const peer = await findPeer(db, tenantId, installation.peerId.toLowerCase());
      if (!peer) throw problems.notFound('federation peer', installation.peerId);
      return { peer, name: peer.name, ...installation };
    }),
  );
}

/** POST …/{id}/{operation}: the workflow makes the change and passes it on to every installation. */
function operationRoute(workflows: FederatedRolloutWorkflows, operation: FederatedRolloutOperation): RouteDef {
  return route({
    method: 'post',
    path: `${SOURCE}/{id}/${operation}`,
    summary: `${operation[0]!.toUpperCase()}${operation.slice(1)} the federated rollout on every installation`,
    tag,
    permission: 'operate',
    resource: 'federated-rollout',
    etag: 'live',
    // The workflow makes the change and passes it on; no connection waits on it here.
    transactional: false,
    params: federatedRolloutId,
    response: {
      status: 200,
      description: `${DESCRIPTIONS[operation]} Answers the federated rollout in its new state, with its new ETag.`,
      schema: federatedRolloutSchema,
    },
    handler: async ({ db, principal, params, ctx }) => {
      const row = await findFederatedRollout(db, principal.tenantId, params.id);
      if (!row) throw problems.notFound('federated rollout', params.id);
      const versions = ifMatchVersions(ctx);
      if (versions && !versions.includes(Number(row.row_version)))
        throw problems.preconditionFailed('federated rollout', row.id);
      if (!FEDERATED_TRANSITIONS[operation].from.includes(row.state))
        throw problems.invalidTransition(refusedFederatedOperation(row.state, operation));
      await workflows.operate(row, { operation, versions, actor: principal.name });
      const updated = (await findFederatedRollout(db, principal.tenantId, row.id))!;
      return { body: await detail(db as Knex, updated), rowVersion: Number(updated.row_version) };
    },
  });
}

/** Federation: federated rollouts, and the receiver side a peer calls (docs/federation.md). */
export function federatedRolloutRoutes(options: FederationRouteOptions): RouteDef[] {
  const workflows = new FederatedRolloutWorkflows(options.temporal, options.settings, options.db);
  const installationName = options.settings.federation.installationName;
  const operations = FEDERATED_ROLLOUT_OPERATIONS.map((operation) => operationRoute(workflows, operation));

  return [
    route({
      method: 'get',
      path: SOURCE,
      summary: 'List federated rollouts',
      tag,
      permission: 'read',
      query: pageQuery.extend(federatedRolloutListQuery.shape).strict(),
      response: {
        status: 200,
        description: 'A page of federated rollouts, newest first.',
        schema: pageOf(federatedRolloutSummarySchema),
      },
      handler: async ({ db, principal, query, ctx }) => {
        const page = await paginate<FederatedRolloutRow>(
          listFederatedRolloutsQuery(db, principal.tenantId, query),
          query,
          {
            columns: [
              { column: 'created_at', type: 'timestamp' },
              { column: 'id', type: 'uuid' },
            ],
            direction: 'desc',
          },
        );
        return { body: respondPage(ctx, options.baseUrl, page, presentFederatedRolloutSummary) };
      },
    }),
    route({
      method: 'post',
      path: `${SOURCE}/dry-run`,
      summary: 'Ask every installation whether it would take its part, creating nothing',
      tag,
      permission: 'operate',
      // Peers are asked over the network: no connection waits meanwhile.
      transactional: false,
      body: createFederatedRolloutBody,
      response: {
        status: 200,
        description:
          "Each installation's verdict, in the order given: what creating it would meet there now (200 also when one refuses).",
        schema: federatedDryRunSchema,
      },
      handler: async ({ db, principal, body, ctx }) => {
        const { planned, installations } = await plan(
          db as Knex,
          installationName,
          principal.tenantId,
          body,
          principal.name,
        );
        const verdicts = await askEverywhere(db as Knex, options, planned, installations);
        const answers = installations.map((installation, position) => {
          const verdict = verdicts[position]!;
          return {
            installation: installation.name,
            peerId: installation.peer?.id ?? null,
            allowed: verdict.ok,
            problem: verdict.ok ? null : problemDocument(verdict.problem, options.settings.errorsBaseUrl, ctx.path),
          };
        });
        return { body: { allowed: answers.every((answer) => answer.allowed), installations: answers } };
      },
    }),
    route({
      method: 'post',
      path: SOURCE,
      summary: 'Create a federated rollout: a configuration version rolled out on several installations',
      tag,
      permission: 'operate',
      resource: 'federated-rollout',
      etag: 'live',
      // Every installation is asked first (peers over the network): no connection waits meanwhile.
      transactional: false,
      body: createFederatedRolloutBody,
      response: {
        status: 201,
        description:
          'The federated rollout, running: every installation accepted it in a dry run (else 422 policy-denied, 409 or 503 naming the installation, and nothing is created).',
        schema: federatedRolloutSchema,
      },
      handler: async ({ db, principal, body }) => {
        const tenantId = principal.tenantId;
        const { planned, installations } = await plan(db as Knex, installationName, tenantId, body, principal.name);
        await dryRunEverywhere(db as Knex, options, planned, installations);
        const row = await (db as Knex).transaction((trx) =>
          createFederatedRollout(
            trx,
            {
              id: randomUUID(),
              tenant_id: tenantId,
              configuration_id: planned.configurationId,
              version: planned.version,
              content_hash: planned.contentHash,
              name: body.name ?? null,
              description: body.description ?? null,
              mode: body.mode,
              created_by: principal.name,
            },
            installations.map((installation) => ({
              local: installation.peer === null,
              peer_id: installation.peer?.id ?? null,
              installation_name: installation.name,
              target: installation.target,
              strategy: installation.strategy,
            })),
          ),
        );
        // Committed first, so no connection waits on Temporal. One that does not take the
        // workflow leaves a federated rollout nothing drives: it ends failed at once, and the
        // answer says so (nothing was rolled out anywhere yet).
        await workflows.start(row).catch((error: unknown) => giveUp(db as Knex, options.logger, row, error));
        return {
          status: 201,
          body: await detail(db as Knex, row),
          rowVersion: Number(row.row_version),
          resourceId: row.id,
          headers: { Location: `${SOURCE}/${row.id}` },
        };
      },
    }),
    route({
      method: 'get',
      path: `${SOURCE}/{id}`,
      summary: 'One federated rollout: its state and each installation’s part, as that installation reports it',
      tag,
      permission: 'read',
      resource: 'federated-rollout',
      etag: 'live',
      params: federatedRolloutId,
      response: { status: 200, description: 'The federated rollout.', schema: federatedRolloutSchema },
      handler: async ({ db, principal, params }) => {
        const row = await findFederatedRollout(db, principal.tenantId, params.id);
        if (!row) throw problems.notFound('federated rollout', params.id);
        return { body: await detail(db as Knex, row), rowVersion: Number(row.row_version) };
      },
    }),
    ...operations,
    ...incomingRolloutRoutes(options),
  ];
}
