/**
 * Who may speak OpAMP: a bootstrap token (header or `?token=`) and, once an agent has
 * enrolled with it, the pair (token, instance uid). Two steps, because a WebSocket knows its
 * token at the upgrade but its instance uid only with the first message:
 *
 * 1. `checkCredential` at the upgrade / before an HTTP body is read: refuses missing,
 *    malformed, unknown and revoked tokens; an expired or spent token passes only when some
 *    agent is bound to it (only that agent will get through step 2).
 * 2. `admitAgent` with the first message: the bound agent is admitted without spending a
 *    use (even past expiry); any other uid is a new enrolment that redeems the token.
 */
import type { IncomingMessage } from 'node:http';
import type { Knex } from 'knex';
import { redeemBootstrapToken } from '../auth/bootstrap-tokens';
import { hashToken, isWellFormed } from '../auth/secret-token';
import { insertAgent } from '../../db/repos/agents';
import {
  findBootstrapTokenByHash,
  findBootstrapTokenById,
  lockAgentBinding,
  rebindAgentToken,
  tokenHasBoundAgents,
  hasUsableCredential,
} from '../../db/repos/agent-status';
import { emitEvents } from '../../db/repos/events';
import { ensureDefaultGroup, liveGroupIds } from '../../db/repos/groups';
import type { BootstrapTokenRow } from '../../db/repos/tokens';

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
  | 'uid-bound';

export interface Refusal {
  ok: false;
  reason: RefusalReason;
}

export interface Credential {
  token: string;
  row: BootstrapTokenRow;
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

export async function checkCredential(db: Knex, token: string | undefined): Promise<{ ok: true; credential: Credential } | Refusal> {
  if (token === undefined) return { ok: false, reason: 'missing' };
  // The CRC check refuses typos and probes without touching the database.
  if (!isWellFormed('svc-bt', token)) return { ok: false, reason: 'malformed' };
  const row = await findBootstrapTokenByHash(db, hashToken(token));
  if (!row) return { ok: false, reason: 'unknown' };
  if (row.revoked_at) return { ok: false, reason: 'revoked' };
  const spent = inactiveReason(row);
  if (spent && !(await tokenHasBoundAgents(db, row.id))) return { ok: false, reason: spent };
  return { ok: true, credential: { token, row } };
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

export type Admission = { ok: true; agentId: string; enrolled: boolean } | Refusal;

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
export async function admitAgent(db: Knex, credential: Credential, uid: Uint8Array, transport: 'websocket' | 'http'): Promise<Admission> {
  const agentId = agentIdFromUid(uid);
  if (!agentId) return { ok: false, reason: 'bad-uid' };
  try {
    return await enrolOrAdmit(db, credential, agentId, transport);
  } catch (error) {
    // Two first messages of one new agent at once (an HTTP retry racing its original): the
    // loser's insert hits the primary key and rolls back; again, it finds the bound row.
    if ((error as { code?: string }).code !== '23505') throw error;
    return enrolOrAdmit(db, credential, agentId, transport);
  }
}

async function enrolOrAdmit(db: Knex, credential: Credential, agentId: string, transport: 'websocket' | 'http'): Promise<Admission> {
  try {
    return await db.transaction(async (trx) => {
      const agent = await lockAgentBinding(trx, agentId);
      const token = await findBootstrapTokenById(trx, credential.row.id);
      if (!token || token.revoked_at) throw new Refused('revoked');
      if (agent && agent.enrolled_with_token_id === token.id) {
        if (agent.status === 'revoked' || agent.status === 'handed-over') throw new Refused('agent-revoked');
        return { ok: true as const, agentId, enrolled: false };
      }
      const redeemed = await redeemBootstrapToken(trx, credential.token);
      if (!redeemed.ok) throw new Refused(redeemed.reason);
      const tenantId = redeemed.token.tenant_id;
      let groupId: string;
      if (agent) {
        // A known agent enrolling again with a new token of its own tenant (e.g. after its
        // certificate was revoked); a uid of another tenant is never taken over.
        if (agent.tenant_id !== tenantId) throw new Refused('foreign-agent');
        if (agent.status === 'revoked' || agent.status === 'handed-over') throw new Refused('agent-revoked');
        // Another token holder must not take over a uid whose agent can still prove itself.
        if (await hasUsableCredential(trx, agent)) throw new Refused('uid-bound');
        await rebindAgentToken(trx, agentId, token.id);
        groupId = agent.group_id;
      } else {
        groupId =
          (await liveGroupIds(trx, tenantId, [redeemed.token.group_id])).has(redeemed.token.group_id)
            ? redeemed.token.group_id
            : (await ensureDefaultGroup(trx, tenantId)).id;
        await insertAgent(trx, { id: agentId, tenant_id: tenantId, group_id: groupId, status: 'enrolling', enrolled_with_token_id: token.id });
      }
      await emitEvents(trx, [
        {
          tenantId,
          type: 'agent.enrolled',
          source: OPAMP_SOURCE,
          subject: agentId,
          data: { agentId, tokenId: token.id, groupId, transport },
        },
      ]);
      return { ok: true as const, agentId, enrolled: true };
    });
  } catch (error) {
    if (error instanceof Refused) return { ok: false, reason: error.reason };
    throw error;
  }
}
