import type { PeerRow } from '../../../db/repos/federation-peers';
import { peerView } from '../../../domain/federation/peers';
import { isWellFormed } from '../../../domain/tokens/secret-token';
import { pageQuery } from '../../http/pagination';
import { plainText } from '../../http/text';
import { z } from '../../http/zod';

// eslint-disable-next-line no-control-regex -- matching control characters is the point
const BLANK_OR_CONTROL = /[\s\u0000-\u001f\u007f-\u009f]/;

/**
 * Why a peer's base URL is refused (undefined: taken). It is where the peer's credential is
 * sent, so it is an origin and nothing else: every call adds its own `/api/federation/...`.
 */
function baseUrlProblem(value: string): string | undefined {
  if (BLANK_OR_CONTROL.test(value)) return 'must not contain spaces or control characters';
  if (!URL.canParse(value)) return 'must be an absolute http:// or https:// URL';
  const url = new URL(value);
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    return `scheme ${url.protocol} is not accepted: use https://`;
  if (url.username || url.password) return 'must not embed a user name or password: give the PAT as `credential`';
  if (url.search || url.hash || value.includes('?') || value.includes('#')) {
    return 'must not have a query string or fragment';
  }
  if (url.pathname !== '/') return 'must be the installation’s origin (https://host[:port]), without a path';
  return undefined;
}

const LOOPBACK_HOST = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/i;

/**
 * Plain http carries the PAT in clear: allowed only in Development, or to a loopback host
 * (the credential never crosses a network). Otherwise why it is refused.
 */
export function plainHttpProblem(baseUrl: string, isDevelopment: boolean): string | undefined {
  const url = new URL(baseUrl);
  if (url.protocol === 'https:' || isDevelopment || LOOPBACK_HOST.test(url.hostname)) return undefined;
  return 'must be https:// (plain http would carry the peer PAT in clear; it is allowed only in Development or to a loopback host)';
}

/** Where credentials are sent: scheme, host and port. */
export const originOf = (baseUrl: string) => new URL(baseUrl).origin;

const baseUrl = z
  .string()
  .trim()
  .max(2048)
  .superRefine((value, ctx) => {
    const message = baseUrlProblem(value);
    if (message) ctx.addIssue({ code: 'custom', message });
  })
  .transform(originOf)
  .openapi({
    // A format of our own: an origin, of a scheme that depends on the environment and the host.
    format: 'peer-base-url',
    description:
      "The other installation's Http:PublicBaseUrl: https://host[:port] (plain http only in Development or to a loopback host).",
    example: 'https://fleet-eu.example.com',
  });

const credential = z
  .string()
  .max(200)
  .refine((token) => isWellFormed('svc-pat', token), {
    message: 'must be a PAT of the other installation (svc-pat.<secret>.<crc>) with role peer',
  })
  .openapi({
    description:
      'A `peer`-role PAT the other installation issued for this one. Write-only: stored encrypted, never returned.',
    // A format of our own: the shape and the CRC of its last part (domain/tokens/secret-token.ts).
    format: 'svc-pat',
  });

const peerFields = {
  name: plainText().trim().min(1).max(100).openapi({ example: 'fleet-eu' }),
  baseUrl,
};

export const createPeerBody = z
  .object({ ...peerFields, credential })
  .strict()
  .openapi('FederationPeerCreate');

export const updatePeerBody = z
  .object({
    ...peerFields,
    credential: credential.optional().openapi({
      description: 'Omitted: kept, unless baseUrl moves to another origin (a credential never follows the URL).',
    }),
  })
  .strict()
  .openapi('FederationPeerUpdate');

export const peerListQuery = pageQuery.strict();

export const peerId = z.object({ id: z.uuid() });

export const pingSchema = z
  .object({
    installationId: z.string().openapi({ description: "This installation's id." }),
    name: z.string().openapi({ description: 'Federation:InstallationName.' }),
    version: z.string().openapi({ description: "The service's version." }),
    agentEndpoint: z
      .string()
      .openapi({ description: 'The OpAMP endpoint its agents connect to (Agents:PublicEndpoint).' }),
  })
  .openapi('FederationPing');

export const peerSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    baseUrl: z.string(),
    healthy: z.boolean().openapi({ description: 'The last ping was answered.' }),
    lastPingAt: z.string().nullable(),
    lastSeenAt: z.string().nullable().openapi({ description: 'When a ping was last answered.' }),
    latencyMs: z.number().int().nullable().openapi({ description: 'How long the last ping took.' }),
    lastError: z.string().nullable().openapi({ description: 'Why the last ping failed (null when it was answered).' }),
    // A union with null, not pingSchema.nullable(): that would make the registered
    // FederationPing itself nullable (and give it this description) in the OpenAPI document.
    remote: z
      .union([pingSchema, z.null()])
      .openapi({ description: 'What the peer said of itself when it last answered a ping (null: never).' }),
    createdBy: z.string(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi('FederationPeer', { description: 'Its credential is never shown.' });

/** The peer as the API shows it: the same view its events carry. */
export const presentPeer: (row: PeerRow) => z.infer<typeof peerSchema> = peerView;
