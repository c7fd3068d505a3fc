import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createSecureContext } from 'node:tls';
import { isAbsolute, join, resolve } from 'node:path';
import { z } from 'zod';
import { addressRangeProblem } from './address-ranges';
import { outboundRuleProblem, type OutboundSettings } from './outbound-rules';

/**
 * Settings use the spec's hierarchical spelling (`Authentication:Oidc:Authority`).
 * They come from an optional JSON file (FLEET_SETTINGS_FILE, nested objects) and then
 * from the environment, where `__` stands for `:` (`Authentication__Oidc__Authority`).
 * They are parsed once, frozen, and a bad value stops the process with one line.
 */

const port = z.coerce.number().int().min(0).max(65535);
const positiveInt = z.coerce.number().int().positive();
const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');
const absoluteUrl = z
  .url({ protocol: /^https?$/, error: 'must be an absolute http(s) URL' })
  .transform((u) => u.replace(/\/+$/, ''));
/** A comma-separated list (blanks around items ignored, empty items dropped), each item checked by `item`. */
const listOf = (item: z.ZodType<string, string>): z.ZodType<string[], string> =>
  z
    .string()
    .transform((text) =>
      text
        .split(',')
        .map((entry) => entry.trim())
        .filter(Boolean),
    )
    .pipe(z.array(item));
const outboundRule = z.string().superRefine((rule, ctx) => {
  const why = outboundRuleProblem(rule);
  if (why) ctx.addIssue({ code: 'custom', message: why });
});
const addressRange = z.string().superRefine((rule, ctx) => {
  const why = addressRangeProblem(rule);
  if (why) ctx.addIssue({ code: 'custom', message: why });
});
const base64Key = z.string().refine((v) => Buffer.from(v, 'base64').length === 32, 'must be 32 bytes, base64-encoded');

const definitions = {
  Environment: z.enum(['Development', 'Production']).default('Production'),
  'Http:Host': z.string().min(1).default('0.0.0.0'),
  'Http:Port': port.default(8080),
  'Http:PublicBaseUrl': absoluteUrl.optional(),
  'Http:TrustProxy': bool.default(false),
  'Http:MaxBodyBytes': positiveInt.default(2 * 1024 * 1024),
  'Http:ShutdownTimeoutSeconds': positiveInt.default(25),
  'Http:ShutdownDelaySeconds': z.coerce.number().int().min(0).max(300).default(5),
  'Database:Url': z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL'),
  'Database:PoolMax': positiveInt.default(10),
  'Temporal:Address': z
    .string()
    .regex(/^[^:\s]+:\d+$/, 'must be host:port')
    .default('localhost:7233'),
  'Temporal:Namespace': z.string().min(1).default('default'),
  'Temporal:TaskQueue': z.string().min(1).default('fleet'),
  'Authentication:Oidc:Authority': absoluteUrl.optional(),
  'Authentication:Oidc:Audience': z.string().min(1).optional(),
  'Authentication:Oidc:RoleClaim': z.string().min(1).default('roles'),
  'Authentication:Oidc:TenantClaim': z.string().min(1).default('tenant'),
  'Authentication:Pat:DefaultTtlDays': positiveInt.max(3650).default(90),
  'Errors:BaseUrl': absoluteUrl.optional(),
  'Secrets:EncryptionKey': base64Key.optional(),
  'Agents:Listen': z
    .string()
    .regex(/^[^\s]*:\d+$/, 'must be host:port')
    .default('0.0.0.0:4320'),
  'Agents:CertificateTtlHours': positiveInt.default(24),
  'Agents:HeartbeatSeconds': positiveInt.max(3600).default(30),
  'Agents:Plaintext': bool.default(false),
  'Agents:Tls:CertificateFile': z.string().min(1).optional(),
  'Agents:Tls:KeyFile': z.string().min(1).optional(),
  'Agents:Tls:Hostnames': z.string().min(1).default('localhost,127.0.0.1,::1'),
  'Agents:Tls:Groups': z
    .string()
    .min(1)
    .refine(isGroupList, 'must be a colon-separated list of key exchange groups this OpenSSL knows, e.g. X25519:P-256')
    .optional(),
  'Agents:Tls:TerminatedBy': listOf(addressRange).default([]),
  'Agents:Ca:CertificateFile': z.string().min(1).optional(),
  'Agents:Ca:KeyFile': z.string().min(1).optional(),
  'Agents:Enrollment:Mode': z.enum(['token', 'approval']).default('token'),
  'Agents:Enrollment:ApprovalTenant': z.string().min(1).default('default'),
  'Agents:Enrollment:MaxPending': positiveInt.default(1000),
  'Agents:HistoryRetentionDays': positiveInt.max(3650).default(180),
  'Git:DefaultPollIntervalSeconds': positiveInt.default(60),
  'Git:WorkDir': z.string().min(1).optional(),
  'Git:FileRoots': listOf(
    z.string().refine((dir) => isAbsolute(dir), 'must be absolute directories, separated by commas'),
  ).default([]),
  'Outbound:Allow': listOf(outboundRule).default([]),
  'Outbound:Deny': listOf(outboundRule).default([]),
  'Events:RetentionDays': positiveInt.default(7),
  'Events:ReplayHours': positiveInt.default(24),
  'Events:SubscriberBufferBytes': positiveInt.default(1024 * 1024),
  'Events:HeartbeatSeconds': positiveInt.default(30),
  'Console:ClientId': z.string().min(1).max(200).default('fleet-console'),
  'Console:ClientSecret': z.string().min(1).optional(),
  'Console:SessionHours': positiveInt.max(24 * 30).default(8),
  'Console:IdleMinutes': positiveInt.max(24 * 60).default(60),
  'Federation:InstallationName': z.string().min(1).max(200).optional(),
  'Federation:PeerTimeoutSeconds': positiveInt.max(300).default(5),
  'Federation:HealthCheckSeconds': positiveInt.max(86_400).default(60),
  'Federation:HandoverDeadlineSeconds': positiveInt.max(86_400).default(600),
  'Agents:PublicEndpoint': z
    .string()
    .regex(/^wss?:\/\/[^\s]+$/, 'must be a ws:// or wss:// URL')
    .optional(),
  'Logging:Level': z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
} as const;

type Definitions = typeof definitions;
type Raw = { [K in keyof Definitions]: z.output<Definitions[K]> };

export interface Settings {
  environment: 'Development' | 'Production';
  isDevelopment: boolean;
  http: {
    host: string;
    port: number;
    publicBaseUrl: string;
    trustProxy: boolean;
    maxBodyBytes: number;
    shutdownTimeoutSeconds: number;
    /** After SIGTERM, /readyz answers 503 this long before the listener closes. */
    shutdownDelaySeconds: number;
  };
  database: { url: string; poolMax: number };
  temporal: { address: string; namespace: string; taskQueue: string };
  oidc?: { authority: string; audience: string; roleClaim: string; tenantClaim: string };
  pat: { defaultTtlDays: number };
  errorsBaseUrl: string;
  encryptionKey?: Buffer;
  agents: {
    listen: string;
    certificateTtlHours: number;
    /** Offered to agents; an agent silent for three intervals is offline. */
    heartbeatSeconds: number;
    /** Plain TCP instead of TLS: Development only. */
    plaintext: boolean;
    /**
     * The listener's own certificate from files; else one issued by the agents' CA for
     * `hostnames`. `groups`: the key exchange groups the listener agrees on (OpenSSL's list
     * syntax); none: OpenSSL's default, which from OpenSSL 3.5 (Node 24) puts the
     * post-quantum hybrid X25519MLKEM768 first (docs/agent-gateway.md, "Key exchange").
     * `terminatedBy`: the proxies that end agents' TLS in front of this listener (addresses
     * and CIDRs). Set, the listener speaks plain HTTP to them alone and takes each request's
     * verified client certificate from their X-Agent-Certificate header (docs/deployment.md,
     * "TLS at the load balancer"); empty, it ends TLS itself.
     */
    tls: { certificateFile?: string; keyFile?: string; hostnames: string[]; groups?: string; terminatedBy: string[] };
    /** The agents' CA from files; else created on first start and kept encrypted in the database. */
    ca?: { certificateFile: string; keyFile: string };
    enrollment: { mode: 'token' | 'approval'; approvalTenant: string; maxPending: number };
    /** Each agent's history (pushes, reports, verdicts) is kept this long. */
    historyRetentionDays: number;
  };
  /**
   * `workDir`: where the worker keeps its per-source working copies (any worker can rebuild
   * them). `fileRoots`: the directories under which file:// repositories may be registered
   * and read (none: file:// is refused).
   */
  git: { defaultPollIntervalSeconds: number; workDir: string; fileRoots: string[] };
  /** Where Git sources and federation peers may be reached (platform/outbound.ts). */
  outbound: OutboundSettings;
  /** Events are kept `retentionDays`; the hub's `since` and `GET /api/events?after=` reach back `replayHours`. */
  events: { retentionDays: number; replayHours: number; subscriberBufferBytes: number; heartbeatSeconds: number };
  /**
   * The operator console's sign-in (the api as the backend for the frontend): the OIDC
   * client it uses against Authentication:Oidc:Authority (a public client with PKCE unless a
   * secret is set), where the provider sends people back, and how long a session lives
   * (absolute, and without activity).
   */
  console: {
    clientId: string;
    clientSecret?: string;
    redirectUri: string;
    sessionHours: number;
    idleMinutes: number;
  };
  /**
   * `installationName`: how peers see this installation (ping); `agentEndpoint`: the OpAMP
   * URL agents use to reach this installation's listener, given to peers for handovers.
   */
  federation: {
    installationName: string;
    agentEndpoint: string;
    peerTimeoutSeconds: number;
    healthCheckSeconds: number;
    handoverDeadlineSeconds: number;
  };
  logLevel: Raw['Logging:Level'];
}

export class SettingsError extends Error {}

/** Flattens `{ "A": { "B": 1 } }` into `{ "A:B": "1" }`. */
function flatten(value: unknown, prefix = '', out: Record<string, string> = {}): Record<string, string> {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    for (const [key, inner] of Object.entries(value)) flatten(inner, prefix ? `${prefix}:${key}` : key, out);
  } else if (prefix) {
    out[prefix] = String(value);
  }
  return out;
}

function collect(env: NodeJS.ProcessEnv): Record<string, string> {
  const known = new Map(Object.keys(definitions).map((k) => [k.toLowerCase(), k]));
  const values: Record<string, string> = {};
  const file = env.FLEET_SETTINGS_FILE;
  if (file) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(file, 'utf8'));
    } catch (error) {
      throw new SettingsError(`Settings file ${file} could not be read: ${(error as Error).message}`);
    }
    for (const [key, value] of Object.entries(flatten(parsed))) {
      const name = known.get(key.toLowerCase());
      if (!name) throw new SettingsError(`Unknown setting ${key} in ${file}`);
      values[name] = value;
    }
  }
  for (const [envName, value] of Object.entries(env)) {
    const name = known.get(envName.replaceAll('__', ':').toLowerCase());
    if (name && value !== undefined && value !== '') values[name] = value;
  }
  return values;
}

function parseRaw(values: Record<string, string>): Raw {
  const raw: Record<string, unknown> = {};
  for (const [key, schema] of Object.entries(definitions)) {
    const result = (schema as z.ZodType).safeParse(values[key]);
    if (!result.success) {
      const message = values[key] === undefined ? 'is required' : result.error.issues[0]?.message;
      throw new SettingsError(`Invalid setting ${key}: ${message}`);
    }
    raw[key] = result.data;
  }
  return raw as Raw;
}

function required<T>(value: T | undefined, key: string, why: string): T {
  if (value === undefined) throw new SettingsError(`Invalid setting ${key}: is required ${why}`);
  return value;
}

export function loadSettings(env: NodeJS.ProcessEnv = process.env): Readonly<Settings> {
  const raw = parseRaw(collect(env));
  const isDevelopment = raw.Environment === 'Development';
  const publicBaseUrl = raw['Http:PublicBaseUrl'] ?? `http://localhost:${raw['Http:Port']}`;
  const authority = raw['Authentication:Oidc:Authority'];
  const oidc = authority
    ? {
        authority,
        audience: required(
          raw['Authentication:Oidc:Audience'],
          'Authentication:Oidc:Audience',
          'when Authentication:Oidc:Authority is set',
        ),
        roleClaim: raw['Authentication:Oidc:RoleClaim'],
        tenantClaim: raw['Authentication:Oidc:TenantClaim'],
      }
    : undefined;
  const key = raw['Secrets:EncryptionKey'];
  if (!isDevelopment) required(key, 'Secrets:EncryptionKey', 'in Production');
  return Object.freeze({
    environment: raw.Environment,
    isDevelopment,
    http: {
      host: raw['Http:Host'],
      port: raw['Http:Port'],
      publicBaseUrl,
      trustProxy: raw['Http:TrustProxy'],
      maxBodyBytes: raw['Http:MaxBodyBytes'],
      shutdownTimeoutSeconds: raw['Http:ShutdownTimeoutSeconds'],
      shutdownDelaySeconds: raw['Http:ShutdownDelaySeconds'],
    },
    database: { url: raw['Database:Url'], poolMax: raw['Database:PoolMax'] },
    temporal: {
      address: raw['Temporal:Address'],
      namespace: raw['Temporal:Namespace'],
      taskQueue: raw['Temporal:TaskQueue'],
    },
    oidc,
    pat: { defaultTtlDays: raw['Authentication:Pat:DefaultTtlDays'] },
    errorsBaseUrl: raw['Errors:BaseUrl'] ?? `${publicBaseUrl}/errors`,
    encryptionKey: key ? Buffer.from(key, 'base64') : undefined,
    agents: agentSettings(raw, isDevelopment),
    git: {
      defaultPollIntervalSeconds: raw['Git:DefaultPollIntervalSeconds'],
      workDir: raw['Git:WorkDir'] ?? defaultGitWorkDir(raw['Database:Url']),
      fileRoots: raw['Git:FileRoots'].map((dir) => resolve(dir)),
    },
    outbound: { allow: raw['Outbound:Allow'], deny: raw['Outbound:Deny'] },
    events: {
      retentionDays: raw['Events:RetentionDays'],
      replayHours: raw['Events:ReplayHours'],
      subscriberBufferBytes: raw['Events:SubscriberBufferBytes'],
      heartbeatSeconds: raw['Events:HeartbeatSeconds'],
    },
    console: {
      clientId: raw['Console:ClientId'],
      clientSecret: raw['Console:ClientSecret'],
      redirectUri: `${publicBaseUrl.replace(/\/$/, '')}/api/auth/callback`,
      sessionHours: raw['Console:SessionHours'],
      idleMinutes: raw['Console:IdleMinutes'],
    },
    federation: federationSettings(raw, publicBaseUrl),
    logLevel: raw['Logging:Level'],
  });
}

/**
 * By default an installation is named by its public host, and agents reach its listener on
 * that host at the listener's port (TLS unless Agents:Plaintext).
 */
function federationSettings(raw: Raw, publicBaseUrl: string): Settings['federation'] {
  const host = new URL(publicBaseUrl).hostname;
  const port = raw['Agents:Listen'].slice(raw['Agents:Listen'].lastIndexOf(':') + 1);
  const scheme = raw['Agents:Plaintext'] ? 'ws' : 'wss';
  return {
    installationName: raw['Federation:InstallationName'] ?? host,
    agentEndpoint: raw['Agents:PublicEndpoint'] ?? `${scheme}://${host}:${port}/v1/opamp`,
    peerTimeoutSeconds: raw['Federation:PeerTimeoutSeconds'],
    healthCheckSeconds: raw['Federation:HealthCheckSeconds'],
    handoverDeadlineSeconds: raw['Federation:HandoverDeadlineSeconds'],
  };
}

/** Whether this process's OpenSSL accepts `list` as its key exchange groups. */
function isGroupList(list: string): boolean {
  try {
    createSecureContext({ ecdhCurve: list });
    return true;
  } catch {
    return false;
  }
}

function agentSettings(raw: Raw, isDevelopment: boolean): Settings['agents'] {
  if (raw['Agents:Plaintext'] && !isDevelopment) {
    throw new SettingsError('Invalid setting Agents:Plaintext: plain TCP for agents is allowed only in Development');
  }
  const pair = (cert: string | undefined, key: string | undefined, prefix: string) => {
    if ((cert === undefined) !== (key === undefined)) {
      throw new SettingsError(
        `Invalid setting ${prefix}:${cert === undefined ? 'CertificateFile' : 'KeyFile'}: is required when ${prefix}:${cert === undefined ? 'KeyFile' : 'CertificateFile'} is set`,
      );
    }
    return cert !== undefined && key !== undefined ? { certificateFile: cert, keyFile: key } : undefined;
  };
  const serverFiles = pair(raw['Agents:Tls:CertificateFile'], raw['Agents:Tls:KeyFile'], 'Agents:Tls');
  const terminatedBy = raw['Agents:Tls:TerminatedBy'];
  if (terminatedBy.length > 0) {
    const ownTls = (['Agents:Plaintext', 'Agents:Tls:CertificateFile', 'Agents:Tls:Groups'] as const).find(
      (name) => raw[name] !== undefined && raw[name] !== false,
    );
    if (ownTls)
      throw new SettingsError(
        `Invalid setting ${ownTls}: the listener does not end TLS itself when Agents:Tls:TerminatedBy names the proxies that do`,
      );
  }
  return {
    listen: raw['Agents:Listen'],
    certificateTtlHours: raw['Agents:CertificateTtlHours'],
    heartbeatSeconds: raw['Agents:HeartbeatSeconds'],
    plaintext: raw['Agents:Plaintext'],
    tls: {
      ...serverFiles,
      hostnames: raw['Agents:Tls:Hostnames']
        .split(',')
        .map((h) => h.trim())
        .filter(Boolean),
      groups: raw['Agents:Tls:Groups'],
      terminatedBy,
    },
    historyRetentionDays: raw['Agents:HistoryRetentionDays'],
    ca: pair(raw['Agents:Ca:CertificateFile'], raw['Agents:Ca:KeyFile'], 'Agents:Ca'),
    enrollment: {
      mode: raw['Agents:Enrollment:Mode'],
      approvalTenant: raw['Agents:Enrollment:ApprovalTenant'],
      maxPending: raw['Agents:Enrollment:MaxPending'],
    },
  };
}

/** For entry points: load settings or print the one-line reason and exit. */
export function loadSettingsOrExit(env: NodeJS.ProcessEnv = process.env): Readonly<Settings> {
  try {
    return loadSettings(env);
  } catch (error) {
    if (error instanceof SettingsError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    throw error;
  }
}

/**
 * Where working copies live unless Git:WorkDir says: a directory of this installation's own
 * under the temporary directory (named from its database), since each worker removes the
 * copies there whose source its database no longer has.
 */
function defaultGitWorkDir(databaseUrl: string): string {
  const url = new URL(databaseUrl);
  url.password = '';
  const installation = createHash('sha256').update(url.toString()).digest('hex').slice(0, 12);
  return join(tmpdir(), 'fleet-config-git', installation);
}
