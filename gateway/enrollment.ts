/**
 * Who may speak OpAMP. Three credentials:
 * - a client certificate our CA issued (mTLS; checked at the TLS handshake by the listener);
 * - a bootstrap token (header or `?token=`) and, once an agent has enrolled with it, the
 *   pair (token, instance uid);
 * - nothing at all, over TLS, in approval mode: the agent is held until an operator approves it.
 *
 * Two steps, because a connection knows its credential at once but the agent's instance
 * uid only with the first message:
 * 1. `checkCredential` at the upgrade / before an HTTP body is read: refuses missing,
 *    malformed, unknown and revoked tokens; an expired or spent token passes only when some
 *    agent is bound to it (only that agent will get through step 2).
 * 2. `admitAgent` with the first message: the bound agent is admitted without spending a
 *    use (even past expiry); any other uid is a new enrolment that redeems the token.
 */
import type { IncomingMessage } from 'node:http';
import type { Knex } from 'knex';
import { redeemBootstrapToken } from '../domain/tokens/bootstrap-tokens';
import { hashToken, isWellFormed } from '../domain/tokens/secret-token';
import type { AgentIdentity } from '../domain/certificates';
import {
  countPendingAgents,
  findCertificateAdmission,
  hasLiveCertificate,
  hasUsableCredential,
  insertAgent,
  lockAgentBinding,
  markCertificateUsed,
  rebindAgentToken,
  tokenHasBoundAgents,
} from '../db/repos/agents';
import {
  findBootstrapTokenById,
  findBootstrapTokenByHash,
  incomingHandoverIdOfToken,
  tokenAdmitsAgent,
  type BootstrapTokenRow,
} from '../db/repos/bootstrap-tokens';
import { ensureTenant } from '../db/repos/tenants';
import { emitEvents, type NewEvent } from '../db/repos/events';
import { ensureDefaultGroup, liveGroupIds } from '../db/repos/groups';

export const OPAMP_SOURCE = '/v1/opamp';

export type RefusalReason =
  | 'missing'
  | 'malformed'
  | 'unknown'
  | 'revoked'
  | 'expired'
  | 'exhausted'
  | 'bad-uid'
  | 'agent-revoked'
  | 'foreign-agent'
  | 'uid-bound'
  /** A handover's token names other agents (answered as an unknown token is: see listener.ts). */
  | 'uid-not-listed'
  /** The agent has connected with its certificate: its bootstrap token no longer admits it. */
  | 'certificate-required'
  | 'certificate-mismatch'
  | 'unknown-agent'
  | 'too-many-pending';

export interface Refusal {
  ok: false;
  reason: RefusalReason;
  /** The bootstrap token refused, when it was found (for the log: its id, never its value). */
  tokenId?: string;
}

export type Credential =
  | { kind: 'token'; token: string; row: BootstrapTokenRow }
  | { kind: 'certificate'; identity: AgentIdentity }
  /** No credential, over TLS, in approval mode. */
  | { kind: 'none' };

/** How agents that arrive with no credential are treated (Agents:Enrollment). */
export interface ApprovalMode {
  tenantId: string;
  maxPending: number;
}

/** The bearer token of the request, or its `token` query parameter. */
export function tokenFromRequest(req: IncomingMessage): string | undefined {
  const header = req.headers.authorization;
  if (header) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    return match ? match[1] : '';
  }
  const query = new URL(req.url ?? '/', 'http://agent').searchParams.get('token');
  return query ?? undefined;
}

export async function checkCredential(
  db: Knex,
  token: string | undefined,
): Promise<{ ok: true; credential: Credential & { kind: 'token' } } | Refusal> {
  if (token === undefined) return { ok: false, reason: 'missing' };
  // The CRC check refuses typos and probes without touching the database.
  if (!isWellFormed('svc-bt', token)) return { ok: false, reason: 'malformed' };
  const row = await findBootstrapTokenByHash(db, hashToken(token));
  if (!row) return { ok: false, reason: 'unknown' };
  if (row.revoked_at) return { ok: false, reason: 'revoked', tokenId: row.id };
  const spent = inactiveReason(row);
  if (spent && !(await tokenHasBoundAgents(db, row.id))) return { ok: false, reason: spent, tokenId: row.id };
  return { ok: true, credential: { kind: 'token', token, row } };
}

function inactiveReason(row: BootstrapTokenRow): 'expired' | 'exhausted' | undefined {
  if (row.expires_at.getTime() <= Date.now()) return 'expired';
  if (row.uses >= row.max_uses) return 'exhausted';
  return undefined;
}

/** The OpAMP instance uid (16 bytes) as the agent id (a UUID string). */
export function agentIdFromUid(uid: Uint8Array): string | undefined {
  if (uid.length !== 16) return undefined;
  const hex = Buffer.from(uid).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export interface Admitted {
  ok: true;
  agentId: string;
  tenantId: string;
  /** A new agent row (or a new binding) was written. */
  enrolled: boolean;
  /** Held for approval: gets neither configuration nor certificate. */
  pending: boolean;
}

export type Admission = Admitted | Refusal;

const CUT_OFF: ReadonlySet<string> = new Set(['revoked', 'handed-over']);

class Refused extends Error {
  constructor(readonly reason: RefusalReason) {
    super(reason);
  }
}

/**
 * Admits the agent with this uid on this credential, enrolling it when it is new (one use
 * of the token, the row created `enrolling` in the token's group, `agent.enrolled`). All in
 * one transaction: a refusal after the redemption rolls the use back.
 */
export async function admitAgent(
  db: Knex,
  credential: Credential,
  uid: Uint8Array,
  transport: 'websocket' | 'http',
  approval?: ApprovalMode,
  /** Reads what admission by certificate needs of the agent (the listener's batched read). */
  findAdmission: FindAdmission = (id) => findCertificateAdmission(db, id),
): Promise<Admission> {
  const agentId = agentIdFromUid(uid);
  if (!agentId) return { ok: false, reason: 'bad-uid' };
  const attempt = () => {
    switch (credential.kind) {
      case 'certificate':
        return admitByCertificate(db, credential.identity, agentId, findAdmission);
      case 'none':
        return approval
          ? holdForApproval(db, approval, agentId, transport)
          : Promise.resolve({ ok: false as const, reason: 'missing' as const });
      case 'token':
        return enrolOrAdmit(db, credential, agentId, transport);
    }
  };
  try {
    return await attempt();
  } catch (error) {
    // Two first messages of one new agent at once (an HTTP retry racing its original): the
    // loser's insert hits the primary key and rolls back; again, it finds the row.
    if ((error as { code?: string }).code !== '23505') throw error;
    return attempt();
  }
}

type FindAdmission = (agentId: string) => ReturnType<typeof findCertificateAdmission>;

/** The certificate (checked at the handshake) names the agent; its uid must be that agent's. */
async function admitByCertificate(
  db: Knex,
  identity: AgentIdentity,
  agentId: string,
  findAdmission: FindAdmission,
): Promise<Admission> {
  if (agentId !== identity.agentId) return { ok: false, reason: 'certificate-mismatch' };
  const agent = await findAdmission(agentId);
  if (!agent || agent.tenant_id !== identity.tenantId) return { ok: false, reason: 'unknown-agent' };
  if (CUT_OFF.has(agent.status) || agent.status === 'pending-approval') return { ok: false, reason: 'agent-revoked' };
  if (!agent.certificate_used_at) {
    // It keeps its certificate: from now on that is how it gets in (see enrolOrAdmit).
    await markCertificateUsed(db, agentId);
  }
  return { ok: true, agentId, tenantId: agent.tenant_id, enrolled: false, pending: false };
}

/**
 * Approval mode: an unknown agent arriving with no credential is recorded
 * `pending-approval` in the approval tenant's default group. Once approved, it is admitted
 * by its uid until it holds a certificate (then it must present it) — the operator's
 * approval is what vouches for it.
 */
async function holdForApproval(
  db: Knex,
  approval: ApprovalMode,
  agentId: string,
  transport: 'websocket' | 'http',
): Promise<Admission> {
  try {
    return await db.transaction(async (trx) => {
      const agent = await lockAgentBinding(trx, agentId);
      if (agent) {
        if (agent.status === 'pending-approval')
          return { ok: true as const, agentId, tenantId: agent.tenant_id, enrolled: false, pending: true };
        if (CUT_OFF.has(agent.status)) throw new Refused('agent-revoked');
        if (agent.enrolled_with_token_id || (await hasUsableCredential(trx, agent))) throw new Refused('uid-bound');
        return { ok: true as const, agentId, tenantId: agent.tenant_id, enrolled: false, pending: false };
      }
      if ((await countPendingAgents(trx)) >= approval.maxPending) throw new Refused('too-many-pending');
      await ensureTenant(trx, approval.tenantId);
      const group = await ensureDefaultGroup(trx, approval.tenantId);
      await insertAgent(trx, {
        id: agentId,
        tenant_id: approval.tenantId,
        group_id: group.id,
        status: 'pending-approval',
      });
      await emitEvents(trx, [
        {
          tenantId: approval.tenantId,
          type: 'agent.pending-approval',
          source: OPAMP_SOURCE,
          subject: agentId,
          data: { agentId, groupId: group.id, transport },
        },
      ]);
      return { ok: true as const, agentId, tenantId: approval.tenantId, enrolled: true, pending: true };
    });
  } catch (error) {
    if (error instanceof Refused) return { ok: false, reason: error.reason };
    throw error;
  }
}

async function enrolOrAdmit(
  db: Knex,
  credential: Credential & { kind: 'token' },
  agentId: string,
  transport: 'websocket' | 'http',
): Promise<Admission> {
  try {
    return await db.transaction(async (trx) => {
      const agent = await lockAgentBinding(trx, agentId);
      const token = await findBootstrapTokenById(trx, credential.row.id);
      if (!token || token.revoked_at) throw new Refused('revoked');
      if (!tokenAdmitsAgent(token, agentId)) throw new Refused('uid-not-listed');
      if (agent && agent.enrolled_with_token_id === token.id) {
        // A revoked agent must enroll again with another token than the one it was bound to.
        if (CUT_OFF.has(agent.status)) throw new Refused('agent-revoked');
        // An agent that moved to mTLS is its certificate now; the (maybe shared) token is not.
        if (agent.certificate_used_at && hasLiveCertificate(agent)) throw new Refused('certificate-required');
        return {
          ok: true as const,
          agentId,
          tenantId: agent.tenant_id,
          enrolled: false,
          pending: agent.status === 'pending-approval',
        };
      }
      const tenantId = token.tenant_id;
      let groupId: string;
      if (agent) {
        // A known agent enrolling again with a new token of its own tenant (e.g. after its
        // certificate was revoked); a uid of another tenant is never taken over.
        if (agent.tenant_id !== tenantId) throw new Refused('foreign-agent');
        // A handed-over agent is another installation's: it comes back only when that one
        // hands it back, with the token of a handover that names it.
        if (agent.status === 'handed-over' && !(await incomingHandoverIdOfToken(trx, token.id))) {
          throw new Refused('agent-revoked');
        }
        // Another token holder must not take over a uid whose agent can still prove itself
        // (a revoked or handed-over agent cannot: its cut-off is what sends it back to enrolment).
        if (!CUT_OFF.has(agent.status) && (await hasUsableCredential(trx, agent))) throw new Refused('uid-bound');
        await rebindAgentToken(trx, agentId, token.id);
        groupId = agent.group_id;
      } else {
        groupId = (await liveGroupIds(trx, tenantId, [token.group_id])).has(token.group_id)
          ? token.group_id
          : (await ensureDefaultGroup(trx, tenantId)).id;
        await insertAgent(trx, {
          id: agentId,
          tenant_id: tenantId,
          group_id: groupId,
          status: 'enrolling',
          enrolled_with_token_id: token.id,
        });
      }
      await emitEvents(trx, [
        {
          tenantId,
          type: 'agent.enrolled',
          source: OPAMP_SOURCE,
          subject: agentId,
          data: { agentId, tokenId: token.id, groupId, transport },
        },
        ...(await handoverReceipt(trx, token, agentId)),
      ]);
      // The use is spent last: the token row stays locked only until the commit, so agents
      // enrolling with one token (a whole fleet's) wait for each other that long and no longer.
      // A refusal here (spent, expired) rolls back everything above.
      const redeemed = await redeemBootstrapToken(trx, credential.token);
      if (!redeemed.ok) throw new Refused(redeemed.reason);
      return { ok: true as const, agentId, tenantId, enrolled: true, pending: false };
    });
  } catch (error) {
    if (error instanceof Refused) return { ok: false, reason: error.reason };
    throw error;
  }
}

/**
 * Receiver side of a handover: an agent enrolling with the token a handover's redemption
 * issued is one of that handover's agents arriving (`federation.handover.agent-received`,
 * subject the incoming handover, in the enrolment's transaction).
 */
async function handoverReceipt(trx: Knex.Transaction, token: BootstrapTokenRow, agentId: string): Promise<NewEvent[]> {
  if (token.agent_ids === null) return [];
  const handoverId = await incomingHandoverIdOfToken(trx, token.id);
  if (!handoverId) return [];
  return [
    {
      tenantId: token.tenant_id,
      type: 'federation.handover.agent-received',
      source: OPAMP_SOURCE,
      subject: handoverId,
      data: { agentId },
    },
  ];
}
