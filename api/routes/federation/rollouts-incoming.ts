/**
 * The receiver's side of a federated rollout: what another installation calls with the
 * `peer` PAT this tenant issued it (permission `federate`), in that PAT's tenant. Each part
 * is found by the caller's key, so a retried call never creates a second version or rollout.
 */
import type { Knex } from 'knex';
import { findConfiguration } from '../../../db/repos/configurations';
import type { Format } from '../../../domain/configurations/content';
import { checkVersionContent } from '../../../domain/configurations/versions';
import { InvalidTransitionError } from '../../../domain/errors';
import { rolloutProgress } from '../../../db/repos/rollout-agents';
import { findRolloutByFederationKey, type RolloutRow } from '../../../db/repos/rollouts';
import { createIncomingRollout, createRolloutOnce, dryRunRollout } from '../../../domain/federation/incoming-rollouts';
import { judgeRollout } from '../../../domain/rollout-creation';
import { FEDERATED_ROLLOUT_OPERATIONS, ROLLOUT_TRANSITIONS, refusedOperation } from '../../../domain/rollouts';
import { route, type RouteDef } from '../../http/route';
import { contentProblemAt, problems } from '../../problems';
import { RolloutWorkflows } from '../rollouts/workflow-client';
import type { FederationRouteOptions } from '.';
import {
  incomingEvaluationSchema,
  incomingKey,
  incomingRolloutBody,
  incomingRolloutSchema,
  presentIncomingRollout,
} from './rollouts-schema';

const INCOMING = '/api/federation/incoming/rollouts';
const tag = 'federation';

/** The copy's content as a version: 413 over the limit, 400 naming why it does not parse in its format. */
const checkCopiedContent = (copy: { format: Format; content: string }) =>
  checkVersionContent(copy.format, copy.content).catch(contentProblemAt('body.configuration.content'));

export function incomingRolloutRoutes(options: FederationRouteOptions): RouteDef[] {
  const workflows = new RolloutWorkflows(options.temporal, options.settings, options.db);

  async function present(db: Knex, row: RolloutRow) {
    return presentIncomingRollout(row, (await rolloutProgress(db, row.id)).progress);
  }

  async function mustFind(db: Knex, tenantId: string, key: string): Promise<RolloutRow> {
    const row = await findRolloutByFederationKey(db, tenantId, key);
    if (!row) throw problems.notFound('federated rollout part', key);
    return row;
  }

  const configurationName = async (db: Knex, row: RolloutRow) =>
    (await findConfiguration(db, row.tenant_id, row.configuration_id))?.name ?? row.configuration_id;

  const operations = FEDERATED_ROLLOUT_OPERATIONS.map((operation) =>
    route({
      method: 'post',
      path: `${INCOMING}/{key}/${operation}`,
      summary: `A peer passes on '${operation}' to the rollout it created here`,
      tag,
      permission: 'federate',
      resource: 'rollout',
      transactional: false,
      params: incomingKey,
      response: { status: 200, description: 'The rollout in its new state.', schema: incomingRolloutSchema },
      handler: async ({ db, principal, params }) => {
        const row = await mustFind(db as Knex, principal.tenantId, params.key);
        if (!ROLLOUT_TRANSITIONS[operation].from.includes(row.state))
          throw problems.invalidTransition(refusedOperation(row.state, operation));
        await workflows.operate(row, await configurationName(db as Knex, row), { operation, actor: principal.name });
        return { body: await present(db as Knex, await mustFind(db as Knex, principal.tenantId, params.key)) };
      },
    }),
  );

  return [
    route({
      method: 'post',
      path: `${INCOMING}/evaluate`,
      summary: 'A peer’s dry run: would this installation take its part of a federated rollout?',
      tag,
      permission: 'federate',
      // Judging every target agent must not hold a pooled connection beyond its own rolled-back transaction.
      transactional: false,
      body: incomingRolloutBody,
      prepare: ({ body }) => checkCopiedContent(body.configuration),
      response: {
        status: 200,
        description:
          'Allowed: the version would be copied and the rollout created (nothing is kept). A policy deny is 422 `policy-denied`, as the rollouts API answers it.',
        schema: incomingEvaluationSchema,
      },
      handler: async ({ db, principal, body, prepared }) => ({
        body: await dryRunRollout(db as Knex, (trx) =>
          createIncomingRollout(trx, principal.tenantId, undefined, body, prepared, principal.name),
        ),
      }),
    }),
    route({
      method: 'put',
      path: `${INCOMING}/{key}`,
      summary: 'A peer creates its part of a federated rollout here (idempotent by key), and starts it',
      tag,
      permission: 'federate',
      resource: 'rollout',
      // Starting the rollout waits on Temporal: no transaction stays open across it.
      transactional: false,
      params: incomingKey,
      body: incomingRolloutBody,
      prepare: ({ body }) => checkCopiedContent(body.configuration),
      response: {
        status: 200,
        description:
          'The rollout, started: the version copied (same content hash, same version), the rollout created with the same checks as POST /api/rollouts. A repeat answers the same rollout.',
        schema: incomingRolloutSchema,
      },
      handler: async ({ db, principal, params, body, prepared }) => {
        const { row, created } = await createRolloutOnce(db as Knex, principal.tenantId, params.key, (trx) =>
          createIncomingRollout(trx, principal.tenantId, params.key, body, prepared, principal.name),
        );
        if (row.state === 'pending') {
          // A retry may come long after the call that created it: judged again, as a start is.
          if (!created) await judgeRollout(db, row);
          await workflows
            .operate(row, await configurationName(db as Knex, row), { operation: 'start', actor: principal.name })
            .catch((error: unknown) => {
              // A twin of this call (the peer retried one that was slow to answer) started it first.
              if (!(error instanceof InvalidTransitionError)) throw error;
            });
        }
        return {
          body: await present(db as Knex, await mustFind(db as Knex, principal.tenantId, params.key)),
          resourceId: row.id,
        };
      },
    }),
    route({
      method: 'get',
      path: `${INCOMING}/{key}`,
      summary: 'A peer follows the rollout it created here: state, progress, reason',
      tag,
      permission: 'federate',
      params: incomingKey,
      response: { status: 200, description: 'The rollout.', schema: incomingRolloutSchema },
      handler: async ({ db, principal, params }) => ({
        body: await present(db as Knex, await mustFind(db as Knex, principal.tenantId, params.key)),
      }),
    }),
    ...operations,
  ];
}
