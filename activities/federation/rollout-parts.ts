/**
 * One installation's part of a federated rollout, as the workflow's activities act on it:
 * create (or find again) its rollout, read its state, pass an operation on. This
 * installation's part goes through the database and Temporal directly, the way POST
 * /api/rollouts + start would; a peer's through its incoming endpoints (platform/peer-client.ts).
 * Either way the key `<this installation>:<federated rollout>:<position>` finds earlier work.
 */
import { ApplicationFailure } from '@temporalio/common';
import { findConfiguration } from '../../db/repos/configurations';
import { findVersionWithContent } from '../../db/repos/configuration-versions';
import type { FederatedRolloutRow, InstallationRow } from '../../db/repos/federated-rollouts';
import { findPeer } from '../../db/repos/federation-peers';
import { rolloutProgress } from '../../db/repos/rollout-agents';
import { findRolloutByFederationKey, findRolloutById, type RolloutRow } from '../../db/repos/rollouts';
import { DomainError, InvalidTransitionError, NotFoundError, PolicyDeniedError } from '../../domain/errors';
import { createRolloutOnce } from '../../domain/federation/incoming-rollouts';
import { peerEndpoint } from '../../domain/federation/peer-credentials';
import {
  incomingRolloutRequest,
  incomingRolloutStateOf,
  peerProblemOf,
  type IncomingRolloutState,
} from '../../domain/federation/rollout-calls';
import { createRollout, judgeRollout } from '../../domain/rollout-creation';
import { ROLLOUT_TRANSITIONS, type RolloutOperation } from '../../domain/rollouts';
import { callPeer, incomingRolloutPath, PeerCallError, type PeerEndpoint } from '../../platform/peer-client';
import { encryptionKey } from '../../platform/secrets';
import { RolloutWorkflowClient } from '../../workflows/rollout-client';
import type { ActivityDeps } from '..';
import { createRolloutActivities } from '../rollouts';

/** The failure type of a peer that did not answer (Temporal retries it; the workflow gives up after a while). */
export const PEER_SILENT = 'peer-silent';

/** What an installation answered about its rollout. */
export type PartStatus = IncomingRolloutState;

export type Creation =
  | { created: true; status: PartStatus }
  /** Refused for good: a policy deny (`denied`), or another refusal (`failed`), with the problem. */
  | { created: false; state: 'denied' | 'failed'; problem: Record<string, unknown> };

export interface Part {
  create(): Promise<Creation>;
  status(): Promise<PartStatus>;
  /** Passes the operation on; the part's state after it (undefined: a local part with nothing to take it). */
  operate(operation: RolloutOperation, actor: string): Promise<PartStatus | undefined>;
}

export interface PartContext {
  rollout: FederatedRolloutRow;
  installation: InstallationRow;
  key: string;
}

export function partOf(deps: ActivityDeps, context: PartContext): Part {
  return context.installation.local ? localPart(deps, context) : peerPart(deps, context);
}

/** The problem a refusal here is stored with (the rollouts API's answer, in its words). */
function localProblemOf(error: DomainError): Record<string, unknown> {
  if (error instanceof PolicyDeniedError)
    return { status: 422, title: 'Policy denied the push', detail: error.message, ...error.facts };
  return { status: error instanceof NotFoundError ? 404 : 409, detail: error.message };
}

function localPart({ db, settings, temporal }: ActivityDeps, { rollout, installation, key }: PartContext): Part {
  const transitions = createRolloutActivities(db);

  async function statusOf(row: RolloutRow): Promise<PartStatus> {
    const { progress } = await rolloutProgress(db, row.id);
    return {
      rolloutId: row.id,
      configurationId: row.configuration_id,
      version: row.version,
      state: row.state,
      reason: row.reason,
      progress: { ...progress },
    };
  }

  /** This installation's rollout is started and operated as the api does it. */
  function workflows(): RolloutWorkflowClient {
    if (!temporal) throw new Error('this worker has no Temporal client to start rollouts with');
    return new RolloutWorkflowClient(temporal, settings.temporal.taskQueue);
  }

  const configurationName = async (row: RolloutRow) =>
    (await findConfiguration(db, row.tenant_id, row.configuration_id))?.name ?? row.configuration_id;

  return {
    async create() {
      try {
        const { row, created } = await createRolloutOnce(db, rollout.tenant_id, key, (trx) =>
          createRollout(trx, {
            tenantId: rollout.tenant_id,
            name: rollout.name,
            description: rollout.description,
            configurationId: rollout.configuration_id,
            version: rollout.version,
            target: installation.target,
            strategy: installation.strategy,
            createdBy: rollout.created_by,
            federationKey: key,
            judge: true,
          }).then((created) => created.row),
        );
        if (row.state === 'pending') {
          if (!created) await judgeRollout(db, row); // a retry long after: judged again, as a start is
          await transitions.transitionRollout({
            rolloutId: row.id,
            from: ['pending'],
            to: 'running',
            actor: rollout.created_by,
          });
        }
        const now = (await findRolloutById(db, row.id))!;
        // Kept when it runs already (a retry after the start), so the rollout has exactly one.
        if (now.state === 'running') await workflows().start(now, await configurationName(now));
        return { created: true, status: await statusOf(now) };
      } catch (error) {
        if (!(error instanceof DomainError)) throw error;
        return {
          created: false,
          state: error instanceof PolicyDeniedError ? 'denied' : 'failed',
          problem: localProblemOf(error),
        };
      }
    },
    async status() {
      const row = await findRolloutByFederationKey(db, rollout.tenant_id, key);
      if (!row) throw new Error(`rollout ${key} is not in the database`);
      return statusOf(row);
    },
    async operate(operation, actor) {
      const row = await findRolloutByFederationKey(db, rollout.tenant_id, key);
      if (!row) return undefined;
      if (ROLLOUT_TRANSITIONS[operation].from.includes(row.state)) {
        // Refused meanwhile (the part moved on since it was read): there is nothing to pass on.
        await workflows()
          .operate(row, await configurationName(row), { operation, actor })
          .catch((error: unknown) => {
            if (!(error instanceof InvalidTransitionError)) throw error;
          });
      }
      return statusOf((await findRolloutByFederationKey(db, rollout.tenant_id, key))!);
    },
  };
}

function peerPart({ db, settings, outbound }: ActivityDeps, { rollout, installation, key }: PartContext): Part {
  const timeoutMs = settings.federation.peerTimeoutSeconds * 1000;

  async function endpoint(): Promise<PeerEndpoint> {
    const peer = installation.peer_id ? await findPeer(db, rollout.tenant_id, installation.peer_id) : undefined;
    if (!peer)
      throw ApplicationFailure.nonRetryable(
        `peer '${installation.installation_name}' was deleted; its part cannot be reached`,
        'peer-deleted',
      );
    return peerEndpoint(encryptionKey(settings), peer);
  }

  /** A peer that does not answer, fails, or answers nonsense is retried; one that refuses is not. */
  async function call(method: string, path: string, body?: unknown): Promise<PartStatus> {
    let answer: unknown;
    try {
      answer = await callPeer<unknown>(await endpoint(), method, path, { body, timeoutMs, outbound });
    } catch (error) {
      if (error instanceof PeerCallError && error.failure !== 'refused')
        throw ApplicationFailure.retryable(error.message, PEER_SILENT);
      throw error;
    }
    const status = incomingRolloutStateOf(answer);
    if (!status)
      throw ApplicationFailure.retryable(
        `peer '${installation.installation_name}': ${method} ${path} answered something that is not its rollout's state`,
        PEER_SILENT,
      );
    return status;
  }

  return {
    async create() {
      const version = (await findVersionWithContent(db, rollout.configuration_id, rollout.version))!;
      const configuration = (await findConfiguration(db, rollout.tenant_id, rollout.configuration_id))!;
      const copy = { name: configuration.name, format: configuration.format, content: version.content };
      try {
        const status = await call('PUT', incomingRolloutPath(key), incomingRolloutRequest(copy, installation, rollout));
        return { created: true, status };
      } catch (error) {
        if (!(error instanceof PeerCallError && error.problem)) throw error;
        return {
          created: false,
          state: error.problem.status === 422 ? 'denied' : 'failed',
          problem: peerProblemOf(error.problem),
        };
      }
    },
    async status() {
      try {
        return await call('GET', incomingRolloutPath(key));
      } catch (error) {
        // Followed, a refusal (a revoked credential, a rollout it lost) is silence too: the
        // federated rollout pauses with it, and the operator's resume asks again.
        if (error instanceof PeerCallError) throw ApplicationFailure.retryable(error.message, PEER_SILENT);
        throw error;
      }
    },
    async operate(operation) {
      return call('POST', `${incomingRolloutPath(key)}/${operation}`);
    },
  };
}
