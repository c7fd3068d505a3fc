import type { Db } from '../../../db/connection';
import { findPeer, listPeersQuery, type PeerPingColumns, type PeerRow } from '../../../db/repos/federation-peers';
import { installationId } from '../../../db/repos/installation';
import { openPeerEndpoint, pingColumns, UNOPENABLE_CREDENTIAL } from '../../../domain/federation/peer-ping';
import { changePeer, pairPeer, unpairPeer } from '../../../domain/federation/peers';
import { pingPeer } from '../../../platform/peer-client';
import { encryptionKey } from '../../../platform/secrets';
import { SERVICE_VERSION } from '../../../platform/version';
import type { AppContext } from '../../http/context';
import { ifMatchVersions } from '../../http/etag';
import { pageOf, paginate, respondPage } from '../../http/pagination';
import { route, type RouteDef } from '../../http/route';
import { problems } from '../../problems';
import type { FederationRouteOptions } from '.';
import {
  createPeerBody,
  originOf,
  peerId,
  peerListQuery,
  peerSchema,
  pingSchema,
  plainHttpProblem,
  presentPeer,
  updatePeerBody,
} from './peers-schema';

const PEERS = '/api/federation/peers';
const tag = 'federation';

async function mustFind(db: Db, tenantId: string, id: string): Promise<PeerRow> {
  const row = await findPeer(db, tenantId, id);
  if (!row) throw problems.notFound('federation peer', id);
  return row;
}

/** If-Match against the row as read (the write checks it again, atomically). */
function checkIfMatch(ctx: AppContext, row: PeerRow): void {
  const versions = ifMatchVersions(ctx);
  if (versions && !versions.includes(row.row_version)) throw problems.preconditionFailed('federation peer', row.id);
}

/** The stored peer makes the credential required again: 409 (the same body is fine for another peer). */
const credentialRequired = (why: string) => problems.conflictOn('body.credential', why);

/**
 * The credential a PUT pings with: the one sent, or else the stored one, but never for
 * another origin (it would be sent to a host the operator who stored it never named), nor
 * one that no longer opens: such a PUT must send it again.
 */
function credentialFor(key: Buffer, current: PeerRow, baseUrl: string, sent: string | undefined): string {
  if (sent !== undefined) return sent;
  if (originOf(current.base_url) !== baseUrl) {
    throw credentialRequired(
      'is required when baseUrl moves to another origin: a stored credential never follows the URL',
    );
  }
  const stored = openPeerEndpoint(key, current);
  if (!stored) throw credentialRequired(`is required: ${UNOPENABLE_CREDENTIAL}`);
  return stored.token;
}

type PeerRouteKit = ReturnType<typeof peerRouteKit>;

/** What the routes of peers share: the key credentials are sealed with, the checks of a new address. */
function peerRouteKit(options: FederationRouteOptions) {
  const { settings, outbound } = options;
  const key = () => encryptionKey(settings);
  const timeoutMs = settings.federation.peerTimeoutSeconds * 1000;

  function checkPlainHttp(url: string): void {
    const message = plainHttpProblem(url, settings.isDevelopment);
    if (message) throw problems.validation([{ path: 'body.baseUrl', message }]);
  }

  /**
   * Pings the would-be peer with its credential. A peer that does not answer is stored all
   * the same (it may be down for now); one that answers with our own id is this installation.
   */
  async function pingNewAddress(db: Db, url: string, token: string, name: string): Promise<PeerPingColumns> {
    const ping = pingColumns(await pingPeer({ name, baseUrl: url, token }, { timeoutMs, outbound }));
    if (ping.remote_installation_id && ping.remote_installation_id === (await installationId(db))) {
      throw problems.validation([
        {
          path: 'body.baseUrl',
          message: 'answers as this installation itself: an installation cannot pair with itself',
        },
      ]);
    }
    return ping;
  }

  return { key, timeoutMs, checkPlainHttp, pingNewAddress };
}

export function peerRoutes(options: FederationRouteOptions): RouteDef[] {
  const kit = peerRouteKit(options);
  return [...readRoutes(options), ...pairingRoutes(kit), ...changeRoutes(kit)];
}

/** Who this installation is (a peer's ping), and the list of peers. */
function readRoutes(options: FederationRouteOptions): RouteDef[] {
  const { settings, baseUrl } = options;
  return [
    route({
      method: 'get',
      path: '/api/federation/ping',
      summary: 'Who this installation is, for a peer checking it (role peer)',
      tag,
      permission: 'federate',
      response: {
        status: 200,
        description: "This installation's id, name, version and agent endpoint.",
        schema: pingSchema,
      },
      handler: async ({ db }) => ({
        body: {
          installationId: await installationId(db),
          name: settings.federation.installationName,
          version: SERVICE_VERSION,
          agentEndpoint: settings.federation.agentEndpoint,
        },
      }),
    }),
    route({
      method: 'get',
      path: PEERS,
      summary: 'List federation peers',
      tag,
      permission: 'read',
      query: peerListQuery,
      response: { status: 200, description: 'A page of peers, oldest first.', schema: pageOf(peerSchema) },
      handler: async ({ db, principal, query, ctx }) => {
        const page = await paginate<PeerRow>(listPeersQuery(db, principal.tenantId), query, {
          columns: [
            { column: 'federation_peers.created_at', type: 'timestamp' },
            { column: 'federation_peers.id', type: 'uuid' },
          ],
          direction: 'asc',
        });
        return { body: respondPage(ctx, baseUrl, page, presentPeer) };
      },
    }),
  ];
}

/** Pairing with a peer (pinged first), and one peer. */
function pairingRoutes(kit: PeerRouteKit): RouteDef[] {
  const { key, checkPlainHttp, pingNewAddress } = kit;
  return [
    route({
      method: 'post',
      path: PEERS,
      summary: 'Pair with another installation: its base URL and the peer PAT it issued; it is pinged at once',
      tag,
      permission: 'admin',
      resource: 'federation-peer',
      etag: 'live',
      transactional: false, // pings the peer first: no connection of the pool held meanwhile
      body: createPeerBody,
      response: {
        status: 201,
        description: 'The peer, with what its ping found (a peer that did not answer is stored, unhealthy).',
        schema: peerSchema,
      },
      handler: async ({ db, principal, body }) => {
        checkPlainHttp(body.baseUrl);
        const ping = await pingNewAddress(db, body.baseUrl, body.credential, body.name);
        const request = {
          tenantId: principal.tenantId,
          name: body.name,
          baseUrl: body.baseUrl,
          credential: body.credential,
          createdBy: principal.name,
        };
        const row = await db.transaction((trx) => pairPeer(trx, key(), request, ping));
        return {
          status: 201,
          body: presentPeer(row),
          rowVersion: row.row_version,
          resourceId: row.id,
          headers: { Location: `${PEERS}/${row.id}` },
        };
      },
    }),
    route({
      method: 'get',
      path: `${PEERS}/{id}`,
      summary: 'One federation peer',
      tag,
      permission: 'read',
      resource: 'federation-peer',
      etag: 'live',
      params: peerId,
      response: { status: 200, description: 'The peer.', schema: peerSchema },
      handler: async ({ db, principal, params }) => {
        const row = await mustFind(db, principal.tenantId, params.id);
        return { body: presentPeer(row), rowVersion: row.row_version };
      },
    }),
  ];
}

/** Changing a peer's address, name or credential, and unpairing. */
function changeRoutes(kit: PeerRouteKit): RouteDef[] {
  const { key, checkPlainHttp, pingNewAddress } = kit;
  return [
    route({
      method: 'put',
      path: `${PEERS}/{id}`,
      summary: "Replace a peer's name, base URL or credential (omitted: kept on the same origin); it is pinged again",
      tag,
      permission: 'admin',
      resource: 'federation-peer',
      etag: 'live',
      transactional: false, // pings the peer first: no connection of the pool held meanwhile
      params: peerId,
      body: updatePeerBody,
      response: { status: 200, description: 'The updated peer, with what its ping found.', schema: peerSchema },
      handler: async ({ db, principal, params, body, ctx }) => {
        const tenantId = principal.tenantId;
        const current = await mustFind(db, tenantId, params.id);
        checkIfMatch(ctx, current);
        checkPlainHttp(body.baseUrl);
        const token = credentialFor(key(), current, body.baseUrl, body.credential);
        const ping = await pingNewAddress(db, body.baseUrl, token, body.name);
        const changes = {
          name: body.name,
          baseUrl: body.baseUrl,
          credential: body.credential,
          movedOrigin: originOf(current.base_url) !== body.baseUrl,
        };
        // Written only over the version pinged: a change made meanwhile is not overwritten.
        const row = await db.transaction((trx) => changePeer(trx, key(), current, changes, ping));
        return { body: presentPeer(row), rowVersion: row.row_version };
      },
    }),
    route({
      method: 'delete',
      path: `${PEERS}/{id}`,
      summary: 'Delete a peer (unpair); its credential is forgotten',
      tag,
      permission: 'admin',
      resource: 'federation-peer',
      etag: 'live',
      params: peerId,
      response: { status: 204, description: 'Deleted.' },
      handler: async ({ db, principal, params, ctx }) => {
        await unpairPeer(db, principal.tenantId, params.id, ifMatchVersions(ctx));
        return { status: 204 };
      },
    }),
  ];
}
