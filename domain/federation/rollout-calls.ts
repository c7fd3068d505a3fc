/**
 * What one installation asks of another for a federated rollout (docs/federation.md): the
 * key that makes every call idempotent, chosen by the caller.
 */
import type { InstallationRow } from '../../db/repos/federated-rollouts';
import { isUuid } from '../../db/uuid';
import type { PeerProblem } from '../../platform/peer-client';
import { ROLLOUT_STATES } from '../rollouts';
import type { IncomingRollout } from './incoming-rollouts';

/** `<origin installation id>:<federated rollout id>:<position>` (rollouts.federation_key on the receiver). */
export const federationKey = (originInstallationId: string, federatedRolloutId: string, position: number) =>
  `${originInstallationId}:${federatedRolloutId}:${position}`;

/** What the receiver answers about its rollout (PUT and GET of the incoming rollout). */
export interface IncomingRolloutState {
  rolloutId: string;
  configurationId: string;
  version: number;
  state: string;
  reason: string | null;
  progress: Record<string, number>;
}

/** The body of the dry run and of the creation: the version's name, format and content travel, not its id. */
export function incomingRolloutRequest(
  configuration: IncomingRollout['configuration'],
  installation: Pick<InstallationRow, 'target' | 'strategy'>,
  rollout: { name: string | null; description: string | null },
): IncomingRollout {
  return {
    configuration,
    target: installation.target,
    strategy: installation.strategy,
    name: rollout.name,
    description: rollout.description,
  };
}

/** How much of a peer's problem is kept: it is another installation's word, stored and shown here. */
const MAX_TEXT = 1000;
const MAX_LISTED = 100;

const text = (value: unknown) => (typeof value === 'string' ? value.slice(0, MAX_TEXT) : undefined);

function listed(value: unknown): Array<Record<string, string | undefined>> | undefined {
  if (!Array.isArray(value)) return undefined;
  return value.slice(0, MAX_LISTED).map((item: Record<string, unknown> | null) => {
    const entry = typeof item === 'object' && item !== null ? item : {};
    return Object.fromEntries(Object.entries(entry).map(([key, member]) => [key.slice(0, 100), text(member)]));
  });
}

/**
 * The part of a peer's RFC 9457 problem passed on and stored (status, type, title, detail,
 * the policy and agent a deny names, its violations), each member checked and cut to size.
 */
export function peerProblemOf(problem: PeerProblem): Record<string, unknown> {
  const kept: Record<string, unknown> = {
    status: problem.status,
    type: text(problem.type),
    title: text(problem.title),
    detail: text(problem.detail),
    policyId: text(problem.policyId),
    agentId: text(problem.agentId),
    violations: listed(problem.violations),
    violationCount: typeof problem.violationCount === 'number' ? problem.violationCount : undefined,
    errors: listed(problem.errors),
  };
  return Object.fromEntries(Object.entries(kept).filter(([, value]) => value !== undefined));
}

const ANSWERED_STATES = new Set<string>(ROLLOUT_STATES);

/** A peer's answer about its rollout, if it is one (another installation's word, checked like any input). */
export function incomingRolloutStateOf(body: unknown): IncomingRolloutState | undefined {
  const answer = body as Partial<Record<keyof IncomingRolloutState, unknown>> | undefined;
  if (typeof answer !== 'object' || answer === null) return undefined;
  const progress = answer.progress as Record<string, unknown> | undefined;
  const valid =
    typeof answer.rolloutId === 'string' &&
    isUuid(answer.rolloutId) &&
    typeof answer.configurationId === 'string' &&
    isUuid(answer.configurationId) &&
    Number.isSafeInteger(answer.version) &&
    typeof answer.state === 'string' &&
    ANSWERED_STATES.has(answer.state) &&
    (answer.reason === null || typeof answer.reason === 'string') &&
    typeof progress === 'object' &&
    progress !== null &&
    Object.keys(progress).length <= 20 &&
    Object.values(progress).every((n) => Number.isSafeInteger(n));
  if (!valid) return undefined;
  return {
    rolloutId: answer.rolloutId as string,
    configurationId: answer.configurationId as string,
    version: answer.version as number,
    state: answer.state as string,
    reason: (answer.reason as string | null)?.slice(0, MAX_TEXT) ?? null,
    progress: Object.fromEntries(Object.entries(progress).map(([key, n]) => [key.slice(0, 50), n as number])),
  };
}
