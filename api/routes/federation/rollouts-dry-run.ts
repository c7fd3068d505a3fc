/**
 * Before a federated rollout is created, every installation is asked at once whether it
 * would take its part: this one by creating its rollout in a transaction that is rolled back
 * (the target, one active rollout per agent, the policies), each peer through its
 * `evaluate` endpoint. Creating answers the first refusal, a policy deny before anything
 * else, with the installation named; the dry run on its own (`POST …/dry-run`) answers every
 * installation's verdict. Nothing is created anywhere.
 */
import type { Knex } from 'knex';
import type { PeerRow } from '../../../db/repos/federation-peers';
import { DomainError } from '../../../domain/errors';
import { dryRunRollout, type CopiedConfiguration } from '../../../domain/federation/incoming-rollouts';
import { peerEndpoint } from '../../../domain/federation/peer-credentials';
import { incomingRolloutRequest, peerProblemOf } from '../../../domain/federation/rollout-calls';
import { createRollout } from '../../../domain/rollout-creation';
import { callPeer, incomingEvaluatePath, PeerCallError } from '../../../platform/peer-client';
import { encryptionKey } from '../../../platform/secrets';
import type { Outbound } from '../../../platform/outbound';
import type { Settings } from '../../../platform/settings';
import { Problem, problemOf } from '../../problems';
import type { RolloutStrategy, RolloutTarget } from '../../../domain/rollouts';

export interface PlannedInstallation {
  /** null: this installation. */
  peer: PeerRow | null;
  name: string;
  target: RolloutTarget;
  strategy: RolloutStrategy;
}

export interface PlannedVersion {
  tenantId: string;
  configurationId: string;
  version: number;
  contentHash: string;
  copy: CopiedConfiguration;
  actor: string;
}

export type Verdict = { ok: true } | { ok: false; rank: number; problem: Problem };

/** Refusals by weight: a policy deny is answered before a conflict, a conflict before a silent peer. */
const RANK = { denied: 0, refused: 1, silent: 2 };

/** What asking peers takes: their credentials' key, their deadline, and where calls may go. */
interface DryRunOptions {
  settings: Pick<Settings, 'encryptionKey' | 'isDevelopment' | 'federation'>;
  outbound: Outbound;
}

/** Every installation's verdict, in the order given, asked at once. */
export async function askEverywhere(
  db: Knex,
  options: DryRunOptions,
  planned: PlannedVersion,
  installations: PlannedInstallation[],
): Promise<Verdict[]> {
  return Promise.all(
    installations.map((installation) =>
      installation.peer
        ? askPeer(options, planned, installation, installation.peer)
        : askHere(db, planned, installation),
    ),
  );
}

/** Throws the weightiest refusal, if any installation refuses. */
export async function dryRunEverywhere(
  db: Knex,
  options: DryRunOptions,
  planned: PlannedVersion,
  installations: PlannedInstallation[],
): Promise<void> {
  const verdicts = await askEverywhere(db, options, planned, installations);
  const refusals = verdicts.flatMap((verdict) => (verdict.ok ? [] : [verdict]));
  refusals.sort((a, b) => a.rank - b.rank);
  if (refusals[0]) throw refusals[0].problem;
}

async function askHere(db: Knex, planned: PlannedVersion, installation: PlannedInstallation): Promise<Verdict> {
  try {
    await dryRunRollout(db, (trx) =>
      createRollout(trx, {
        tenantId: planned.tenantId,
        name: null,
        description: null,
        configurationId: planned.configurationId,
        version: planned.version,
        target: installation.target,
        strategy: installation.strategy,
        createdBy: planned.actor,
        judge: true,
      }).then((created) => created.row),
    );
    return { ok: true };
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    const problem = problemOf(error);
    return {
      ok: false,
      rank: problem.slug === 'policy-denied' ? RANK.denied : RANK.refused,
      problem: new Problem(problem.slug, `Installation '${installation.name}' (this one): ${problem.detail}`, {
        ...problem.extensions,
        installation: installation.name,
        peerId: null,
      }),
    };
  }
}

async function askPeer(
  { settings, outbound }: DryRunOptions,
  planned: PlannedVersion,
  installation: PlannedInstallation,
  peer: PeerRow,
): Promise<Verdict> {
  try {
    await callPeer(peerEndpoint(encryptionKey(settings), peer), 'POST', incomingEvaluatePath(), {
      body: incomingRolloutRequest(planned.copy, installation, { name: null, description: null }),
      timeoutMs: settings.federation.peerTimeoutSeconds * 1000,
      outbound,
    });
    return { ok: true };
  } catch (error) {
    if (!(error instanceof PeerCallError)) throw error;
    const named = { installation: peer.name, peerId: peer.id };
    if (error.failure !== 'refused' || !error.problem) {
      return {
        ok: false,
        rank: RANK.silent,
        problem: new Problem('unavailable', `Peer '${peer.name}' could not be asked: ${error.message}`, named),
      };
    }
    const answered = peerProblemOf(error.problem);
    const detail = typeof answered.detail === 'string' ? answered.detail : `it answered ${error.problem.status}`;
    if (error.problem.status === 422) {
      const { status: _status, type: _type, title: _title, detail: _detail, ...facts } = answered;
      return {
        ok: false,
        rank: RANK.denied,
        problem: new Problem('policy-denied', `Installation '${peer.name}': ${detail}`, { ...facts, ...named }),
      };
    }
    return {
      ok: false,
      rank: RANK.refused,
      problem: new Problem('conflict', `Installation '${peer.name}' refused the rollout: ${detail}`, {
        ...named,
        peerProblem: answered,
      }),
    };
  }
}
