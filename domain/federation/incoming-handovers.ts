/**
 * A handover, receiver side: what a sending installation (with the `peer` PAT this tenant
 * issued it) does here. It asks for a handover of named agents and gets a single-use
 * handover token; it redeems the token into a bootstrap token that admits exactly those
 * agents; it cancels agents that have not arrived. The rules of each are here; the api adds
 * where the agents enrol (endpoint, CA).
 */
import type { Db } from '../../db/connection';
import { emitEvents } from '../../db/repos/events';
import { ensureDefaultGroup } from '../../db/repos/groups';
import {
  findIncomingByTokenHash,
  incomingAgents,
  insertIncomingHandover,
  lockIncomingHandover,
  redeemIncomingToken,
  reissueIncomingToken,
  restartIncomingHandover,
  setIncomingBootstrapToken,
  setIncomingState,
  unlistIncomingAgents,
  unlistTokenAgents,
  type IncomingHandoverRow,
} from '../../db/repos/incoming-handovers';
import { DomainError, NotFoundError, refuseDuplicate } from '../errors';
import { issueBootstrapToken, revokeBootstrapToken } from '../tokens/bootstrap-tokens';
import { generateToken, hashToken, isWellFormed } from '../tokens/secret-token';

const SOURCE = '/api/federation/incoming/handovers';
/** A handover token is redeemed within the hour or never. */
const HANDOVER_TOKEN_TTL_MS = 3600_000;

/**
 * One answer for a handover token that is unknown, expired, replaced by a newer one or of
 * another tenant: a caller cannot tell which (no oracle). A spent one is a conflict: only
 * its holder can know it.
 */
const unknownToken = () =>
  new NotFoundError('handover token', '', 'No handover token like this: unknown, expired, or replaced by a newer one.');

const sameAgents = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && [...a].sort().join() === [...b].sort().join();

/**
 * A repeated request may only be the same one, from the same tenant, before it was
 * cancelled, and, once redeemed, only while no agent has used the bootstrap token: a sender
 * whose redeem answer was lost (a timeout, a worker that died) asks again and the handover
 * starts over; once an agent enrolled with it, the offer is out and it cannot.
 */
async function refuseOtherRequest(
  db: Db,
  existing: IncomingHandoverRow,
  tenantId: string,
  agentIds: readonly string[],
): Promise<void> {
  if (existing.tenant_id !== tenantId)
    throw new DomainError(`Handover id '${existing.id}' is taken; the sender must choose another id.`);
  if (!sameAgents(existing.agent_ids, agentIds))
    throw new DomainError(`Handover '${existing.id}' was asked for other agents; a retry must name the same ones.`);
  if (existing.state === 'cancelled')
    throw new DomainError(`Handover '${existing.id}' was cancelled already; its token was single use.`);
  if (existing.state === 'redeemed' && (await incomingAgents(db, existing)).some((agent) => agent.bound))
    throw new DomainError(`Handover '${existing.id}' was redeemed and its agents are arriving; it cannot start over.`);
}

/** The redeem's bootstrap token (which no agent used) is revoked, and a fresh handover token issued. */
async function startOver(
  db: Db,
  existing: IncomingHandoverRow,
  issued: Parameters<typeof restartIncomingHandover>[2],
): Promise<void> {
  if (existing.bootstrap_token_id) await revokeBootstrapToken(db, existing.tenant_id, existing.bootstrap_token_id);
  await restartIncomingHandover(db, existing.id, issued);
}

/**
 * A peer asks to hand these agents over (`id`: the sender's handover id). Answers a
 * single-use handover token, valid an hour, shown this once; a repeated request before
 * redeem replaces it (`repeated`).
 */
export async function requestIncomingHandover(
  db: Db,
  request: { id: string; tenantId: string; requestedBy: string; agentIds: string[]; deadlineSeconds: number },
): Promise<{ token: string; expiresAt: Date; repeated: boolean }> {
  const token = generateToken('svc-ho');
  const issued = {
    token_hash: hashToken(token),
    token_expires_at: new Date(Date.now() + HANDOVER_TOKEN_TTL_MS),
    deadline_at: new Date(Date.now() + request.deadlineSeconds * 1000),
  };
  const existing = await lockIncomingHandover(db, request.id);
  if (existing) {
    await refuseOtherRequest(db, existing, request.tenantId, request.agentIds);
    if (existing.state === 'issued') await reissueIncomingToken(db, existing.id, issued);
    else await startOver(db, existing, issued);
    return { token, expiresAt: issued.token_expires_at, repeated: true };
  }
  const row = await insertIncomingHandover(db, {
    id: request.id,
    tenant_id: request.tenantId,
    requested_by: request.requestedBy,
    agent_ids: request.agentIds,
    ...issued,
  }).catch(
    refuseDuplicate(() => new DomainError(`Handover '${request.id}' is being asked for by another call; retry.`)),
  );
  await emitEvents(db, [
    {
      tenantId: row.tenant_id,
      type: 'federation.handover.requested',
      source: SOURCE,
      subject: row.id,
      data: { id: row.id, requestedBy: row.requested_by, agentIds: row.agent_ids },
    },
  ]);
  return { token, expiresAt: issued.token_expires_at, repeated: false };
}

/**
 * Redeems a handover token (once) into a bootstrap token that admits exactly the handover's
 * agents, into the tenant's `default` group, until the handover's deadline.
 */
export async function redeemHandoverToken(
  db: Db,
  request: { tenantId: string; token: string; redeemedBy: string },
): Promise<{ handover: IncomingHandoverRow; bootstrapToken: string; expiresAt: Date }> {
  if (!isWellFormed('svc-ho', request.token)) throw unknownToken();
  const hash = hashToken(request.token);
  const row = await redeemIncomingToken(db, request.tenantId, hash);
  if (!row) {
    const spent = await findIncomingByTokenHash(db, request.tenantId, hash);
    if (spent && spent.state !== 'issued')
      throw new DomainError(`The handover token of '${spent.id}' was ${spent.state} already; it is single use.`);
    throw unknownToken();
  }
  const expiresAt = row.deadline_at ?? row.token_expires_at!;
  const { row: issued, token: bootstrapToken } = await issueBootstrapToken(db, {
    tenant_id: row.tenant_id,
    name: `handover ${row.id}`,
    group_id: (await ensureDefaultGroup(db, row.tenant_id)).id,
    pool_id: null,
    expires_at: expiresAt,
    max_uses: row.agent_ids.length,
    created_by: request.redeemedBy,
    agent_ids: row.agent_ids,
  });
  await setIncomingBootstrapToken(db, row.id, issued.id);
  return { handover: row, bootstrapToken, expiresAt };
}

/**
 * The sender gives up on `agentIds` (all: every one not arrived): the handover no longer
 * admits them. Idempotent. Answers the handover's state, who was cancelled and who had
 * arrived already.
 */
export async function cancelIncomingAgents(
  db: Db,
  request: { tenantId: string; id: string; agentIds?: string[] },
): Promise<{ state: IncomingHandoverRow['state']; cancelled: string[]; alreadyEnrolled: string[] }> {
  const row = await lockIncomingHandover(db, request.id);
  if (!row || row.tenant_id !== request.tenantId) throw new NotFoundError('incoming handover', request.id);
  const agents = await incomingAgents(db, row);
  const named = request.agentIds ?? row.agent_ids;
  const known = new Set(row.agent_ids);
  const strangers = named.filter((id) => !known.has(id));
  if (strangers.length > 0) throw new DomainError(`Not agents of this handover: ${strangers.slice(0, 10).join(', ')}.`);
  const arrived = new Set(agents.filter((agent) => agent.bound).map((agent) => agent.id));
  const cancelled = named.filter((id) => !arrived.has(id));
  const state = await stopAdmitting(db, row, cancelled, arrived.size);
  return { state, cancelled, alreadyEnrolled: named.filter((id) => arrived.has(id)) };
}

/**
 * Stops admitting `cancelled` (none of which has arrived). Before redeem they leave the
 * request; after, they leave the bootstrap token's list, which is revoked once it lists
 * nobody and nobody authenticates with it. The handover is cancelled once it admits nobody.
 */
async function stopAdmitting(
  db: Db,
  row: IncomingHandoverRow,
  cancelled: string[],
  arrived: number,
): Promise<IncomingHandoverRow['state']> {
  if (row.state === 'cancelled' || cancelled.length === 0) return row.state;
  let admitted: number;
  if (row.bootstrap_token_id) {
    admitted = await unlistTokenAgents(db, row.bootstrap_token_id, cancelled);
    if (admitted === 0 && arrived === 0) await revokeBootstrapToken(db, row.tenant_id, row.bootstrap_token_id);
  } else {
    await unlistIncomingAgents(db, row.id, cancelled);
    admitted = new Set(row.agent_ids).size - new Set(cancelled).size;
  }
  if (admitted > 0) return row.state;
  await setIncomingState(db, row.id, 'cancelled');
  return 'cancelled';
}
