import type { Client } from '@temporalio/client';
import type { Knex } from 'knex';
import { findConfiguration } from '../../../db/repos/configurations';
import { findRollout, listRolloutsQuery, type RolloutRow } from '../../../db/repos/rollouts';
import { isRolloutAgent, rolloutAgentsQuery, type RolloutAgentListRow } from '../../../db/repos/rollout-agents';
import { agentHistoryQuery, type AgentHistoryRow } from '../../../db/repos/agent-history';
import { agentHistoryEntrySchema, historyKeys, presentHistoryEntry } from '../agents/history';
import { createRollout } from '../../../domain/rollout-creation';
import {
  ROLLOUT_OPERATIONS,
  ROLLOUT_TRANSITIONS,
  refusedOperation,
  type RolloutOperation,
} from '../../../domain/rollouts';
import { ifMatchVersions } from '../../http/etag';
import { pageOf, pageQuery, paginate, respondPage } from '../../http/pagination';
import { route, type RouteDef } from '../../http/route';
import { z } from '../../http/zod';
import { assertPolicies } from '../../../domain/policies/evaluate';
import { problems } from '../../problems';
import { RolloutWorkflows } from './workflow-client';
import type { ResourceRouteOptions } from '../options';
import {
  createRolloutBody,
  presentRollout,
  presentRolloutSummary,
  presentRolloutAgent,
  rolloutAgentQuery,
  rolloutAgentSchema,
  rolloutListQuery,
  rolloutSchema,
  rolloutSummarySchema,
} from './schema';

const rolloutId = z.object({ id: z.uuid() });

const DESCRIPTIONS: Record<RolloutOperation, string> = {
  start:
    'Start: the approved policies judge every target agent first (422 policy-denied, the rollout stays pending); then the batches run.',
  pause: 'Pause: the batch being applied finishes, the next one waits.',
  resume: 'Resume a paused rollout.',
  abort: 'Abort: no further batch is pushed; agents already pushed keep their configuration.',
  rollback: 'Roll back: every agent this rollout pushed to gets the configuration version it had before.',
};

/** POST …/{id}/{operation}: answered at once where plainly refused; otherwise the workflow applies it. */
function operationRoute(workflows: RolloutWorkflows, operation: RolloutOperation): RouteDef {
  return route({
    method: 'post',
    path: `/api/rollouts/{id}/${operation}`,
    summary: `${operation[0]!.toUpperCase()}${operation.slice(1)} the rollout`,
    tag: 'rollouts',
    permission: 'operate',
    resource: 'rollout',
    etag: 'live',
    // The workflow makes the change in its own transaction; no connection waits on it here.
    transactional: false,
    params: rolloutId,
    response: {
      status: 200,
      description: `${DESCRIPTIONS[operation]} Answers the rollout in its new state, with its new ETag.`,
      schema: rolloutSchema,
    },
    handler: async ({ db, principal, params, ctx }) => {
      const row = await findRollout(db, principal.tenantId, params.id);
      if (!row) throw problems.notFound('rollout', params.id);
      // Answer what is plainly refused here; the workflow checks again, atomically.
      const versions = ifMatchVersions(ctx);
      if (versions && !versions.includes(Number(row.row_version))) throw problems.preconditionFailed('rollout', row.id);
      if (!ROLLOUT_TRANSITIONS[operation].from.includes(row.state)) {
        throw problems.invalidTransition(refusedOperation(row.state, operation));
      }
      if (operation === 'start') {
        await assertPolicies(db, principal.tenantId, {
          configurationId: row.configuration_id,
          version: row.version,
          target: { rolloutId: row.id },
          rollout: { batchSize: row.strategy.batchSize, batchPercent: row.strategy.batchPercent },
        });
      }
      // The configuration's name, for the workflow's summary in the Temporal UI should this start it.
      const configuration = await findConfiguration(db, principal.tenantId, row.configuration_id);
      await workflows.operate(row, configuration?.name ?? row.configuration_id, {
        operation,
        versions,
        actor: principal.name,
      });
      // The body and its ETag from one read (the workflow may have moved on since it answered).
      const updated = (await findRollout(db, principal.tenantId, row.id))!;
      return { body: await presentRollout(db, updated), rowVersion: Number(updated.row_version) };
    },
  });
}

export function rolloutsRoutes(options: ResourceRouteOptions & { temporal?: Client }): RouteDef[] {
  const workflows = new RolloutWorkflows(options.temporal, options.settings, options.db);

  const operations = ROLLOUT_OPERATIONS.map((operation) => operationRoute(workflows, operation));

  return [
    route({
      method: 'get',
      path: '/api/rollouts',
      summary: 'List rollouts',
      tag: 'rollouts',
      permission: 'read',
      query: pageQuery.extend(rolloutListQuery.shape).strict(),
      response: { status: 200, description: 'A page of rollouts, newest first.', schema: pageOf(rolloutSummarySchema) },
      handler: async ({ db, principal, query, ctx }) => {
        const page = await paginate<RolloutRow>(listRolloutsQuery(db, principal.tenantId, query), query, {
          columns: [
            { column: 'created_at', type: 'timestamp' },
            { column: 'id', type: 'uuid' },
          ],
          direction: 'desc',
        });
        return { body: respondPage(ctx, options.baseUrl, page, presentRolloutSummary) };
      },
    }),
    route({
      method: 'post',
      path: '/api/rollouts',
      summary: 'Create a rollout',
      tag: 'rollouts',
      permission: 'operate',
      resource: 'rollout',
      etag: 'live',
      body: createRolloutBody,
      response: {
        status: 201,
        description: 'The rollout, pending; its workflow is started and waits for `start`.',
        schema: rolloutSchema,
      },
      handler: async ({ db, principal, body, afterCommit }) => {
        const { row, configuration, view } = await createRollout(db as Knex.Transaction, {
          tenantId: principal.tenantId,
          name: body.name ?? null,
          description: body.description ?? null,
          configurationId: body.configurationId,
          version: body.version,
          target: body.target,
          strategy: body.strategy,
          startAt: body.startAt ? new Date(body.startAt) : null,
          createdBy: principal.name,
          judge: false, // judged when started
        });
        // Started once the rollout is committed, so no connection waits on Temporal. If it
        // cannot start now, the first operation starts it (update-with-start).
        afterCommit(() =>
          workflows
            .start(row, configuration.name)
            .catch((error: unknown) =>
              options.logger.warn(
                { err: error, rolloutId: row.id },
                'rollout workflow not started; the first operation starts it',
              ),
            ),
        );
        return {
          status: 201,
          body: view,
          rowVersion: Number(row.row_version),
          resourceId: row.id,
          headers: { Location: `/api/rollouts/${row.id}` },
        };
      },
    }),
    route({
      method: 'get',
      path: '/api/rollouts/{id}',
      summary: 'One rollout: state, progress, batches',
      tag: 'rollouts',
      permission: 'read',
      resource: 'rollout',
      etag: 'live',
      params: rolloutId,
      response: { status: 200, description: 'The rollout.', schema: rolloutSchema },
      handler: async ({ db, principal, params }) => {
        const row = await findRollout(db, principal.tenantId, params.id);
        if (!row) throw problems.notFound('rollout', params.id);
        return { body: await presentRollout(db, row), rowVersion: Number(row.row_version) };
      },
    }),
    route({
      method: 'get',
      path: '/api/rollouts/{id}/agents',
      summary: "The rollout's agents and their results",
      tag: 'rollouts',
      permission: 'read',
      resource: 'rollout',
      params: rolloutId,
      query: pageQuery.extend(rolloutAgentQuery.shape).strict(),
      response: { status: 200, description: 'A page of the agents, by id.', schema: pageOf(rolloutAgentSchema) },
      handler: async ({ db, principal, params, query, ctx }) => {
        const row = await findRollout(db, principal.tenantId, params.id);
        if (!row) throw problems.notFound('rollout', params.id);
        const page = await paginate<RolloutAgentListRow>(rolloutAgentsQuery(db, row.id, query), query, {
          columns: [{ column: 'rollout_agents.agent_id', type: 'uuid' }],
          direction: 'asc',
        });
        return { body: respondPage(ctx, options.baseUrl, page, presentRolloutAgent) };
      },
    }),
    route({
      method: 'get',
      path: '/api/rollouts/{id}/agents/{agentId}/history',
      summary: "One agent's history in the rollout: its push, its reports, the rollout's verdicts, its rollback",
      tag: 'rollouts',
      permission: 'read',
      resource: 'rollout',
      params: rolloutId.extend({ agentId: z.guid() }),
      query: pageQuery.strict(),
      response: {
        status: 200,
        description: 'A page of entries, oldest first.',
        schema: pageOf(agentHistoryEntrySchema),
      },
      handler: async ({ db, principal, params, query, ctx }) => {
        const row = await findRollout(db, principal.tenantId, params.id);
        if (!row) throw problems.notFound('rollout', params.id);
        if (!(await isRolloutAgent(db, row.id, params.agentId)))
          throw problems.notFound('agent of this rollout', params.agentId);
        const history = agentHistoryQuery(db, principal.tenantId, params.agentId, { rolloutId: row.id });
        const page = await paginate<AgentHistoryRow>(history, query, historyKeys('asc'));
        return { body: respondPage(ctx, options.baseUrl, page, presentHistoryEntry) };
      },
    }),
    ...operations,
  ];
}
