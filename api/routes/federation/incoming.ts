import { readFile } from 'node:fs/promises';
import type { Db } from '../../../db/connection';
import { findActiveAgentCa } from '../../../db/repos/agent-ca';
import { issueBootstrapToken, revokeBootstrapToken } from '../../../domain/tokens/bootstrap-tokens';
import { emitEvents } from '../../../db/repos/events';
import { ensureDefaultGroup } from '../../../db/repos/groups';
import {
  findIncomingByTokenHash,
  findIncomingHandover,
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
} from '../../../db/repos/incoming-handovers';
import { loadOrCreateAgentCa } from '../../../domain/certificates';
import { generateToken, hashToken, isWellFormed } from '../../../domain/tokens/secret-token';
import { encryptionKey } from '../../../platform/secrets';
import type { Settings } from '../../../platform/settings';
import { route, type RouteDef } from '../../http/route';
import { conflictOnDuplicate, Problem, problems } from '../../problems';
import type { FederationRouteOptions } from '.';
import {
  cancelBody,
  cancelledSchema,
  handoverTokenSchema,
  incomingHandoverSchema,
  incomingId,
  presentIncoming,
  redeemBody,
  redeemedSchema,
  requestHandoverBody,
} from './incoming-schema';

const INCOMING = '/api/federation/incoming/handovers';
const tag = 'federation';
/** A handover token is redeemed within the hour or never. */
const HANDOVER_TOKEN_TTL_MS = 3600_000;

/**
 * One answer for a handover token that is unknown, expired, replaced by a newer one or of
 * another tenant: a caller cannot tell which (no oracle). A spent one is 409: only its holder
 * can know it.
 */
const unknownToken = () =>
  new Problem('not-found', 'No handover token like this: unknown, expired, or replaced by a newer one.');

function mustBeOurs(row: IncomingHandoverRow | undefined, tenantId: string, id: string): IncomingHandoverRow {
  if (!row || row.tenant_id !== tenantId) throw problems.notFound('incoming handover', id);
  return row;
}

const sameAgents = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && [...a].sort().join() === [...b].sort().join();

/**
 * A repeated request may only be the same one (409 otherwise), from the same tenant, before
 * it was cancelled, and, once redeemed, only while no agent has used the bootstrap token:
 * a sender whose redeem answer was lost (a timeout, a worker that died) asks again and the
 * handover starts over; once an agent enrolled with it, the offer is out and it cannot.
 */
async function refuseOtherRequest(
  db: Db,
  existing: IncomingHandoverRow,
  tenantId: string,
  agentIds: readonly string[],
): Promise<void> {
  if (existing.tenant_id !== tenantId)
    throw problems.conflict(`Handover id '${existing.id}' is taken; the sender must choose another id.`);
  if (!sameAgents(existing.agent_ids, agentIds))
    throw problems.conflict(`Handover '${existing.id}' was asked for other agents; a retry must name the same ones.`);
  if (existing.state === 'cancelled')
    throw problems.conflict(`Handover '${existing.id}' was cancelled already; its token was single use.`);
  if (existing.state === 'redeemed' && (await incomingAgents(db, existing)).some((agent) => agent.bound))
    throw problems.conflict(
      `Handover '${existing.id}' was redeemed and its agents are arriving; it cannot start over.`,
    );
}

/** The PEM agents must trust for our listener: the agents' CA (from files, or the one kept in the database). */
async function agentCaPem(db: Db, settings: Readonly<Settings>): Promise<string> {
  if (settings.agents.ca) return readFile(settings.agents.ca.certificateFile, 'utf8');
  const row = await findActiveAgentCa(db);
  if (row) return row.certificate_pem;
  return (await loadOrCreateAgentCa(db, encryptionKey(settings))).certificatePem;
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

/** Federation: handovers, receiver side (peer): issue, redeem, status, cancel (docs/federation.md). */
export function incomingHandoverRoutes(options: FederationRouteOptions): RouteDef[] {
  return [...issueRoutes(options), ...followRoutes()];
}

/** A sender asks for a handover here (issue), and redeems its token into an enrolment. */
function issueRoutes(options: FederationRouteOptions): RouteDef[] {
  const { settings } = options;
  return [
    route({
      method: 'put',
      path: `${INCOMING}/{id}`,
      summary:
        'A peer asks to hand these agents over (id: the sender’s handover id): a single-use handover token, valid an hour; a repeated call before redeem replaces it',
      tag,
      permission: 'federate',
      resource: 'incoming-handover',
      params: incomingId,
      body: requestHandoverBody,
      response: {
        status: 201,
        description: 'The handover token, shown this once.',
        schema: handoverTokenSchema,
        alternatives: [{ status: 200, description: 'The new handover token of a repeated call, replacing the first.' }],
      },
      handler: async ({ db, principal, params, body }) => {
        const token = generateToken('svc-ho');
        const issued = {
          token_hash: hashToken(token),
          token_expires_at: new Date(Date.now() + HANDOVER_TOKEN_TTL_MS),
          deadline_at: new Date(Date.now() + body.deadlineSeconds * 1000),
        };
        const existing = await lockIncomingHandover(db, params.id);
        if (existing) {
          await refuseOtherRequest(db, existing, principal.tenantId, body.agentIds);
          if (existing.state === 'issued') await reissueIncomingToken(db, existing.id, issued);
          else await startOver(db, existing, issued);
        } else {
          const row = await insertIncomingHandover(db, {
            id: params.id,
            tenant_id: principal.tenantId,
            requested_by: principal.name,
            agent_ids: body.agentIds,
            ...issued,
          }).catch(conflictOnDuplicate(`Handover '${params.id}' is being asked for by another call; retry.`));
          await emitEvents(db, [
            {
              tenantId: row.tenant_id,
              type: 'federation.handover.requested',
              source: INCOMING,
              subject: row.id,
              data: { id: row.id, requestedBy: row.requested_by, agentIds: row.agent_ids },
            },
          ]);
        }
        return {
          status: existing ? 200 : 201,
          body: { token, expiresAt: issued.token_expires_at.toISOString() },
          headers: { 'Cache-Control': 'no-store' },
        };
      },
    }),
    route({
      method: 'post',
      path: '/api/federation/handover/redeem',
      summary:
        'Redeem a handover token (once) into a bootstrap token that admits exactly the handover’s agents, with this installation’s agent endpoint and CA',
      tag,
      permission: 'federate',
      resource: 'incoming-handover',
      body: redeemBody,
      response: {
        status: 200,
        description: 'Where and how the agents enrol here; the bootstrap token is shown this once.',
        schema: redeemedSchema,
      },
      handler: async ({ db, principal, body }) => {
        if (!isWellFormed('svc-ho', body.token)) throw unknownToken();
        const hash = hashToken(body.token);
        const row = await redeemIncomingToken(db, principal.tenantId, hash);
        if (!row) {
          const spent = await findIncomingByTokenHash(db, principal.tenantId, hash);
          if (spent && spent.state !== 'issued')
            throw problems.conflict(
              `The handover token of '${spent.id}' was ${spent.state} already; it is single use.`,
            );
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
          created_by: principal.name,
          agent_ids: row.agent_ids,
        });
        await setIncomingBootstrapToken(db, row.id, issued.id);
        return {
          resourceId: row.id,
          body: {
            bootstrapToken,
            endpoint: settings.federation.agentEndpoint,
            caPem: await agentCaPem(db, settings),
            expiresAt: expiresAt.toISOString(),
          },
          headers: { 'Cache-Control': 'no-store' },
        };
      },
    }),
  ];
}

/** A sender follows its handover here, or cancels it. */
function followRoutes(): RouteDef[] {
  return [
    route({
      method: 'get',
      path: `${INCOMING}/{id}`,
      summary: 'Which of an incoming handover’s agents have enrolled here',
      tag,
      permission: 'federate',
      resource: 'incoming-handover',
      params: incomingId,
      response: { status: 200, description: 'The handover and each of its agents.', schema: incomingHandoverSchema },
      handler: async ({ db, principal, params }) => {
        const row = mustBeOurs(
          await findIncomingHandover(db, principal.tenantId, params.id),
          principal.tenantId,
          params.id,
        );
        return { body: presentIncoming(row, await incomingAgents(db, row)) };
      },
    }),
    route({
      method: 'post',
      path: `${INCOMING}/{id}/cancel`,
      summary:
        'The sender gives up on these agents (or on every one not arrived): the handover’s token no longer admits them; idempotent',
      tag,
      permission: 'federate',
      resource: 'incoming-handover',
      params: incomingId,
      body: cancelBody,
      response: {
        status: 200,
        description: 'What the token no longer admits, and who had arrived already.',
        schema: cancelledSchema,
      },
      handler: async ({ db, principal, params, body }) => {
        const row = mustBeOurs(await lockIncomingHandover(db, params.id), principal.tenantId, params.id);
        const agents = await incomingAgents(db, row);
        const named = body?.agentIds ?? row.agent_ids;
        const known = new Set(row.agent_ids);
        const strangers = named.filter((id) => !known.has(id));
        if (strangers.length > 0)
          throw problems.conflict(`Not agents of this handover: ${strangers.slice(0, 10).join(', ')}.`);
        const arrived = new Set(agents.filter((agent) => agent.bound).map((agent) => agent.id));
        const cancelled = named.filter((id) => !arrived.has(id));
        const state = await cancelAgents(db, row, cancelled, arrived.size);
        return {
          body: { id: row.id, state, cancelled, alreadyEnrolled: named.filter((id) => arrived.has(id)) },
        };
      },
    }),
  ];
}

/**
 * Stops admitting `cancelled` (none of which has arrived). Before redeem they leave the
 * request; after, they leave the bootstrap token's list, which is revoked once it lists
 * nobody and nobody authenticates with it. The handover is cancelled once it admits nobody.
 */
async function cancelAgents(
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
