import { createHmac, timingSafeEqual } from 'node:crypto';
import { issuedBy } from '../../http/pagination';
import { decimalQuery, z } from '../../http/zod';
import { problems } from '../../problems';
import { agentListQuery, agentSchema } from '../agents/schema';

const limit = decimalQuery(1, 1000).default(50).openapi({ description: 'Page size (1-1000, default 50).' });

/** What a peer asks of this installation: its agents after `after`, by id, with the list's filters. */
export const inventoryQuery = z
  .object({
    ...agentListQuery.shape,
    limit,
    after: z.guid().optional().openapi({ description: 'Only agents whose id sorts after this one.' }),
  })
  .strict();

export const inventorySchema = z
  .object({
    items: z.array(agentSchema),
    nextAfter: z.string().nullable().openapi({ description: 'The id to ask after for the next page; null: no more.' }),
  })
  .openapi('FederationInventoryPage');

/**
 * A peer's page as this installation reads it: its agents are its word, passed on as they
 * are, but each must have an id (the merge orders by it), and there are at most `limit`.
 */
export const peerInventoryPage = (max: number) =>
  z.object({
    items: z.array(z.looseObject({ id: z.guid() })).max(max),
    nextAfter: z.guid().nullable(),
  });

/**
 * Each peer's place in a federated list: the last agent id taken from it, null when it has no
 * more, or false when it did not answer a page of this listing (it is not asked again: a page
 * is never empty while the next link waits on a peer that is down).
 */
export type PeerPositions = Record<string, string | null | false>;

/**
 * A cursor holds at most this many peers' positions (about 100 characters each): more than
 * any tenant pairs with, and what the cursor's length bound below lets through.
 */
const MAX_CURSOR_PEERS = 1000;

const positionsSchema = z
  .object({ p: z.record(z.uuid(), z.union([z.guid(), z.null(), z.literal(false)])) })
  .strict()
  .refine((cursor) => Object.keys(cursor.p).length <= MAX_CURSOR_PEERS);

/**
 * Cursors are this list's own: the positions (JSON, base64url) and a MAC over them and the
 * tenant (HMAC-SHA-256 under a key derived from Secrets:EncryptionKey), so an invented or
 * edited cursor, or one issued to another tenant, is refused before any peer is asked.
 */
function mac(key: Buffer, tenantId: string, json: string): Buffer {
  return createHmac('sha256', key).update(`federated-agents-cursor\0${tenantId}\0${json}`).digest();
}

export function encodePositions(key: Buffer, tenantId: string, positions: PeerPositions): string {
  const json = JSON.stringify({ p: positions });
  return `${Buffer.from(json).toString('base64url')}.${mac(key, tenantId, json).toString('base64url')}`;
}

/** A cursor is only ever what this list issued (to this tenant): anything else is a 400, never a query or a call. */
export function decodePositions(key: Buffer, tenantId: string, cursor: string): PeerPositions {
  const [body = '', tag = '', ...rest] = cursor.split('.');
  const json = Buffer.from(body, 'base64url').toString('utf8');
  const presented = Buffer.from(tag, 'base64url');
  const expected = mac(key, tenantId, json);
  if (rest.length === 0 && presented.length === expected.length && timingSafeEqual(presented, expected)) {
    try {
      const parsed = positionsSchema.safeParse(JSON.parse(json));
      if (parsed.success) return parsed.data.p;
    } catch {
      // fall through to the problem below
    }
  }
  throw problems.validation([{ path: 'query.cursor', message: 'is not a cursor this list issued' }]);
}

export const federatedAgentsQuery = z
  .object({
    ...agentListQuery.shape,
    limit,
    cursor: z
      .string()
      .max(131_072)
      .optional()
      .openapi({
        description: 'Opaque cursor from `nextCursor` or the `Link` header: where each peer stands.',
        ...issuedBy('nextCursor'),
      }),
  })
  .strict();

export const PEER_STATUSES = ['ok', 'failed', 'timeout', 'unreachable', 'skipped'] as const;
export type PeerStatus = (typeof PEER_STATUSES)[number];

const peerRef = z.object({ id: z.string(), name: z.string() });

export const federatedAgentSchema = agentSchema
  .extend({ peer: peerRef.openapi({ description: 'The installation the agent belongs to.' }) })
  .openapi('FederatedAgent', { description: 'An agent as its installation lists it, with that installation.' });

export const peerOutcomeSchema = peerRef
  .extend({
    status: z.enum(PEER_STATUSES).openapi({
      description:
        'ok: answered (or had no more agents on an earlier page); failed, timeout, unreachable: did not answer, so this ' +
        'listing goes on without it (its agents are missing from here on; start the listing again to ask it); ' +
        'skipped: unhealthy at its last check, or failed on an earlier page of this listing, not asked.',
    }),
    error: z.string().optional(),
  })
  .openapi('FederatedPeerOutcome');

export const federatedAgentsPage = z
  .object({
    items: z.array(federatedAgentSchema),
    nextCursor: z.string().nullable(),
    peers: z.array(peerOutcomeSchema),
  })
  .openapi('FederatedAgentsPage');

export type FederatedAgent = z.infer<typeof federatedAgentSchema>;
export type PeerOutcome = z.infer<typeof peerOutcomeSchema>;
