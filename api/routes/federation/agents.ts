import { agentsAfter } from '../../../db/repos/agents';
import { tenantPeers, type PeerRow } from '../../../db/repos/federation-peers';
import { openPeerEndpoint, UNOPENABLE_CREDENTIAL } from '../../../domain/federation/peer-ping';
import { callPeer, PeerCallError, type PeerCallFailure } from '../../../platform/peer-client';
import { encryptionKey } from '../../../platform/secrets';
import { labelFilter } from '../../http/labels';
import { setNextLink } from '../../http/pagination';
import { route, type RouteDef } from '../../http/route';
import { AGENT_QUERY_RULES, agentListQuery, presentAgent } from '../agents/schema';
import type { FederationRouteOptions } from '.';
import {
  decodePositions,
  encodePositions,
  federatedAgentsPage,
  federatedAgentsQuery,
  inventoryQuery,
  inventorySchema,
  peerInventoryPage,
  type FederatedAgent,
  type PeerOutcome,
  type PeerPositions,
  type PeerStatus,
} from './agents-schema';

const INVENTORY = '/api/federation/inventory/agents';
const tag = 'federation';

type Agent = { id: string } & Record<string, unknown>;

/** What one peer answered for this page. */
type PeerAnswer =
  | { peer: PeerRow; status: 'ok'; items: Agent[]; more: boolean }
  | { peer: PeerRow; status: Exclude<PeerStatus, 'ok' | 'skipped'>; error: string };

const statusOf: Record<PeerCallFailure, Exclude<PeerStatus, 'ok' | 'skipped'>> = {
  unreachable: 'unreachable',
  timeout: 'timeout',
  refused: 'failed',
  failed: 'failed',
};

const FILTERS = Object.keys(agentListQuery.shape) as Array<keyof typeof agentListQuery.shape>;

/** The list's filters as the peer's query string takes them (the values as the caller sent them, validated). */
function filterParams(query: Record<string, unknown>): URLSearchParams {
  const params = new URLSearchParams();
  for (const name of FILTERS) {
    const value = query[name];
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) params.append(name, String(one));
  }
  return params;
}

/**
 * One page of a federated list: the `limit` smallest ids among every peer's answer (each
 * answer is the peer's next `limit` agents, by id, so none smaller is missing), and each
 * peer's new position: the last id taken from it, null once it has nothing more, unchanged
 * when nothing was taken from it, false when it did not answer (the listing goes on without
 * it, so a page is never empty with a next link for want of a peer that is down). There is
 * more while a peer that answered has more.
 */
export function mergePage(
  answers: PeerAnswer[],
  positions: PeerPositions,
  limit: number,
): { items: FederatedAgent[]; positions: PeerPositions; more: boolean } {
  const candidates = answers.flatMap((answer) =>
    answer.status === 'ok' ? answer.items.map((agent) => ({ agent, peer: answer.peer })) : [],
  );
  candidates.sort(
    (x, y) => compare(x.agent.id, y.agent.id) || compare(x.peer.name, y.peer.name) || compare(x.peer.id, y.peer.id),
  );
  const taken = candidates.slice(0, limit);
  const next: PeerPositions = { ...positions };
  let more = false;
  for (const answer of answers) {
    if (answer.status !== 'ok') {
      next[answer.peer.id] = false; // this listing goes on without it: no page waits on a peer that is down
      continue;
    }
    const mine = taken.filter((candidate) => candidate.peer === answer.peer);
    const exhausted = mine.length === answer.items.length && !answer.more;
    if (exhausted) next[answer.peer.id] = null;
    else if (mine.length > 0) next[answer.peer.id] = mine.at(-1)!.agent.id;
    more ||= !exhausted;
  }
  const items = taken.map(({ agent, peer }) => ({ ...agent, peer: { id: peer.id, name: peer.name } }));
  return { items: items as unknown as FederatedAgent[], positions: next, more };
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** What every peer's row in the answer says: how it answered, was skipped, or had nothing more. */
function outcomes(peers: PeerRow[], positions: PeerPositions, answers: PeerAnswer[]): PeerOutcome[] {
  const byPeer = new Map(answers.map((answer) => [answer.peer.id, answer]));
  return peers.map((peer) => {
    const answer = byPeer.get(peer.id);
    const ref = { id: peer.id, name: peer.name };
    if (answer?.status === 'ok') return { ...ref, status: 'ok' };
    if (answer) return { ...ref, status: answer.status, error: answer.error };
    if (positions[peer.id] === false)
      return { ...ref, status: 'skipped', error: 'did not answer an earlier page of this listing' };
    if (!peer.healthy)
      return { ...ref, status: 'skipped', error: `unhealthy at its last check: ${peer.last_error ?? 'no answer yet'}` };
    return { ...ref, status: 'ok' }; // had no more agents on an earlier page
  });
}

/** Federation: the inventory a peer reads, and GET /api/federation/agents across peers (docs/federation.md). */
export function federatedAgentRoutes(options: FederationRouteOptions): RouteDef[] {
  const { settings, baseUrl, outbound } = options;
  const timeoutMs = settings.federation.peerTimeoutSeconds * 1000;

  /** The peer's next `limit` agents after its position; never throws for the peer's sake. */
  async function askPeer(
    peer: PeerRow,
    after: string | undefined,
    filters: URLSearchParams,
    limit: number,
  ): Promise<PeerAnswer> {
    const params = new URLSearchParams(filters);
    params.set('limit', String(limit));
    if (after) params.set('after', after);
    const endpoint = openPeerEndpoint(encryptionKey(settings), peer);
    if (!endpoint) return { peer, status: 'failed', error: UNOPENABLE_CREDENTIAL };
    try {
      const body = await callPeer<unknown>(endpoint, 'GET', `${INVENTORY}?${params.toString()}`, {
        timeoutMs,
        outbound,
      });
      const page = peerInventoryPage(limit).safeParse(body);
      if (!page.success)
        return { peer, status: 'failed', error: `${INVENTORY} answered with something that is not a page of agents` };
      // Its word, checked: only agents after its position, in order, so the merge stays exact.
      const items = page.data.items.filter((agent) => !after || agent.id > after).sort((x, y) => compare(x.id, y.id));
      return { peer, status: 'ok', items, more: page.data.nextAfter !== null };
    } catch (error) {
      if (!(error instanceof PeerCallError)) throw error;
      return { peer, status: statusOf[error.failure], error: error.message };
    }
  }

  return [
    route({
      method: 'get',
      path: INVENTORY,
      summary: "This installation's agents for a peer's federated list (role peer): by id, after a position",
      tag,
      permission: 'federate',
      query: inventoryQuery,
      queryRules: AGENT_QUERY_RULES,
      response: {
        status: 200,
        description: 'The next agents by id, with the filters of GET /api/agents.',
        schema: inventorySchema,
      },
      handler: async ({ db, principal, query }) => {
        const filters = { ...query, labels: labelFilter(query.label) };
        const page = await agentsAfter(db, principal.tenantId, filters, query.after, query.limit);
        return {
          body: {
            items: page.rows.map(presentAgent),
            nextAfter: page.more ? page.rows.at(-1)!.id : null,
          },
        };
      },
    }),
    route({
      method: 'get',
      path: '/api/federation/agents',
      summary: "Every healthy peer's agents, merged by id and paged with one cursor; peers that failed are named",
      tag,
      permission: 'read',
      query: federatedAgentsQuery,
      queryRules: AGENT_QUERY_RULES,
      response: {
        status: 200,
        description:
          "A page of the peers' agents by id, each with its peer, and how each peer answered (a peer that failed does not fail the call).",
        schema: federatedAgentsPage,
      },
      handler: async ({ db, principal, query, ctx }) => {
        labelFilter(query.label); // a key asked for two values is a 400 here, not at every peer
        const key = encryptionKey(settings);
        const positions = query.cursor ? decodePositions(key, principal.tenantId, query.cursor) : {};
        const peers = await tenantPeers(db, principal.tenantId);
        const filters = filterParams(query);
        const asked = peers.filter(
          (peer) => peer.healthy && positions[peer.id] !== null && positions[peer.id] !== false,
        );
        const answers = await Promise.all(
          asked.map((peer) => askPeer(peer, positions[peer.id] || undefined, filters, query.limit)),
        );
        // Positions of peers deleted since the cursor was issued are dropped.
        const known: PeerPositions = Object.fromEntries(
          peers.filter((p) => p.id in positions).map((p) => [p.id, positions[p.id] ?? null]),
        );
        const page = mergePage(answers, known, query.limit);
        const nextCursor = page.more ? encodePositions(key, principal.tenantId, page.positions) : null;
        if (nextCursor) setNextLink(ctx, baseUrl, { cursor: nextCursor });
        return { body: { items: page.items, nextCursor, peers: outcomes(peers, known, answers) } };
      },
    }),
  ];
}
