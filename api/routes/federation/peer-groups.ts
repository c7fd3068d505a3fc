/**
 * A peer's groups, to choose a federated rollout's target there by name (docs/federation.md,
 * "A peer's groups"): this installation asks the peer with its `peer` PAT, the peer answers
 * from its inventory. The first `limit` live groups by name, searched by `q`; no pages: a
 * search narrows them.
 */
import { ensureDefaultGroup, groupsByName, type GroupView } from '../../../db/repos/groups';
import { findPeer } from '../../../db/repos/federation-peers';
import { openPeerEndpoint, UNOPENABLE_CREDENTIAL } from '../../../domain/federation/peer-ping';
import { peerProblemOf } from '../../../domain/federation/rollout-calls';
import { callPeer, PeerCallError } from '../../../platform/peer-client';
import { encryptionKey } from '../../../platform/secrets';
import { route, type RouteDef } from '../../http/route';
import { decimalQuery, z } from '../../http/zod';
import { Problem, problems } from '../../problems';
import type { FederationRouteOptions } from '.';
import { groupListQuery } from '../groups/schema';
import { peerId } from './peers-schema';

const INVENTORY = '/api/federation/inventory/groups';
const tag = 'federation';

const groupsQuery = z
  .object({
    q: groupListQuery.shape.q,
    limit: decimalQuery(1, 200).default(50).openapi({ description: 'How many (1-200, default 50), by name.' }),
  })
  .strict();

const peerGroupSchema = z.object({ id: z.uuid(), name: z.string(), memberCount: z.number().int() });

const groupsPage = z
  .object({
    items: z.array(peerGroupSchema),
    more: z.boolean().openapi({ description: 'More groups match: search to narrow them.' }),
  })
  .openapi('FederationGroups');

const presentGroup = (row: GroupView) => ({ id: row.id, name: row.name, memberCount: row.member_count });

export function peerGroupRoutes(options: FederationRouteOptions): RouteDef[] {
  const { settings, outbound } = options;
  return [
    route({
      method: 'get',
      path: INVENTORY,
      summary: "This installation's live groups for a peer choosing a target (role peer), by name",
      tag,
      permission: 'federate',
      query: groupsQuery,
      response: { status: 200, description: 'The first groups by name.', schema: groupsPage },
      handler: async ({ db, principal, query }) => {
        await ensureDefaultGroup(db, principal.tenantId);
        const rows = await groupsByName(db, principal.tenantId, query.q, query.limit + 1);
        return { body: { items: rows.slice(0, query.limit).map(presentGroup), more: rows.length > query.limit } };
      },
    }),
    route({
      method: 'get',
      path: '/api/federation/peers/{id}/groups',
      summary: "The peer's live groups by name, as it answers now, to choose a target there",
      tag,
      permission: 'read',
      params: peerId,
      query: groupsQuery,
      response: {
        status: 200,
        description: "The peer's first groups by name; 503 when the peer could not be asked.",
        schema: groupsPage,
      },
      handler: async ({ db, principal, params, query }) => {
        const peer = await findPeer(db, principal.tenantId, params.id.toLowerCase());
        if (!peer) throw problems.notFound('peer', params.id);
        const named = { installation: peer.name, peerId: peer.id };
        const endpoint = openPeerEndpoint(encryptionKey(settings), peer);
        if (!endpoint)
          throw new Problem('unavailable', `Peer '${peer.name}' could not be asked: ${UNOPENABLE_CREDENTIAL}`, named);
        const search = new URLSearchParams({ limit: String(query.limit), ...(query.q && { q: query.q }) });
        try {
          const answer = await callPeer<unknown>(endpoint, 'GET', `${INVENTORY}?${search.toString()}`, {
            timeoutMs: settings.federation.peerTimeoutSeconds * 1000,
            outbound,
          });
          const page = groupsPage.safeParse(answer);
          if (!page.success || page.data.items.length > query.limit) {
            throw new Problem(
              'unavailable',
              `Peer '${peer.name}' answered with something that is not its groups.`,
              named,
            );
          }
          return { body: page.data };
        } catch (error) {
          if (!(error instanceof PeerCallError)) throw error;
          throw new Problem('unavailable', `Peer '${peer.name}' could not be asked: ${error.message}`, {
            ...named,
            ...(error.problem && { peerProblem: peerProblemOf(error.problem) }),
          });
        }
      },
    }),
  ];
}
