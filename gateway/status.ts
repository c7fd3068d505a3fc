/**
 * What an AgentToServer message changes on the agent row, and the ServerToAgent reply.
 * OpAMP agents compress their status (an unchanged description or health is left out), so
 * only fields present in the message are written; `last_seen_at` moves on every message.
 */
import { createHash } from 'node:crypto';
import { create, toJson, type MessageInitShape } from '@bufbuild/protobuf';
import type { Knex } from 'knex';
import {
  applyAgentReport,
  markAgentOffline,
  markSessionsOffline,
  type AgentReport,
  type AgentStatus,
  type AppliedStatus,
  type ReportedAgent,
  type SettingsState,
} from '../db/repos/agents';
import { emitEvents, type NewEvent } from '../db/repos/events';
import { AgentCapability, ServerCapability, ServerToAgentFlag, type AgentToServer } from './codec';
import type { AnyValue, KeyValue } from './gen/anyvalue_pb';
import {
  ComponentHealthSchema,
  ConnectionSettingsStatuses,
  RemoteConfigStatuses,
  ServerErrorResponseType,
  ServerToAgentSchema,
  type AgentConfigMap,
  type AgentRemoteConfigSchema,
  type ConnectionSettingsOffersSchema,
} from './gen/opamp_pb';
import type { SettingsOffer, WantedSettings } from './handover-offers';
import { OPAMP_SOURCE } from './enrollment';
import type { ReportBatcher } from './report-batcher';
import { Coalescer } from './coalescer';

/** What the server offers; certificates (AcceptsConnectionSettingsRequest) only over TLS. */
export function serverCapabilities(tls: boolean): bigint {
  const base =
    ServerCapability.AcceptsStatus |
    ServerCapability.OffersRemoteConfig |
    ServerCapability.AcceptsEffectiveConfig |
    ServerCapability.OffersConnectionSettings;
  return tls ? base | ServerCapability.AcceptsConnectionSettingsRequest : base;
}

// ---------------------------------------------------------------------------------------
// AgentToServer → row

/**
 * Postgres text and jsonb cannot hold NUL; an agent's strings must not make its report
 * unwritable (and so the agent unreachable), so NUL becomes U+FFFD.
 */
function storable<T>(value: T): T {
  if (typeof value === 'string') return value.replaceAll('\u0000', '\uFFFD') as T;
  if (Array.isArray(value)) return value.map(storable) as T;
  if (value !== null && typeof value === 'object' && !(value instanceof Date) && !(value instanceof Uint8Array)) {
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => [storable(key), storable(inner)])) as T;
  }
  return value;
}

const CAPABILITY_BITS = (1n << 53n) - 1n;

export function reportFrom(message: AgentToServer): AgentReport {
  const report: AgentReport = {};
  const description = message.agentDescription;
  if (description) {
    report.description = attributes([...description.identifyingAttributes, ...description.nonIdentifyingAttributes]);
    const serviceName = report.description['service.name'];
    if (typeof serviceName === 'string' && serviceName) report.nameIfEmpty = serviceName;
  }
  // OpAMP defines a dozen low bits; the rest are nobody's, and a value past 2^63 would not
  // fit the bigint column (nor past 2^53 a JSON number): only the defined range is kept.
  if (message.capabilities !== 0n) report.capabilities = message.capabilities & CAPABILITY_BITS;
  if (message.health) report.health = toJson(ComponentHealthSchema, message.health);
  if (message.effectiveConfig?.configMap) report.effectiveConfigHash = configMapHash(message.effectiveConfig.configMap);
  const remote = message.remoteConfigStatus;
  if (remote) {
    report.applied = {
      hash: remote.lastRemoteConfigHash.length ? Buffer.from(remote.lastRemoteConfigHash).toString('hex') : null,
      status: APPLIED[remote.status] ?? null,
      error: remote.errorMessage || null,
    };
  }
  const settings = message.connectionSettingsStatus;
  if (settings) {
    report.settings = {
      hash: settings.lastConnectionSettingsHash.length
        ? Buffer.from(settings.lastConnectionSettingsHash).toString('hex')
        : null,
      status: SETTINGS_APPLIED[settings.status] ?? null,
    };
  }
  return report;
}

const SETTINGS_APPLIED: Partial<Record<ConnectionSettingsStatuses, AppliedStatus>> = {
  [ConnectionSettingsStatuses.ConnectionSettingsStatuses_APPLIED]: 'APPLIED',
  [ConnectionSettingsStatuses.ConnectionSettingsStatuses_APPLYING]: 'APPLYING',
  [ConnectionSettingsStatuses.ConnectionSettingsStatuses_FAILED]: 'FAILED',
};

/** UNSET is stored as null: the API's applied status is APPLYING / APPLIED / FAILED or nothing. */
const APPLIED: Partial<Record<RemoteConfigStatuses, AppliedStatus>> = {
  [RemoteConfigStatuses.RemoteConfigStatuses_APPLIED]: 'APPLIED',
  [RemoteConfigStatuses.RemoteConfigStatuses_APPLYING]: 'APPLYING',
  [RemoteConfigStatuses.RemoteConfigStatuses_FAILED]: 'FAILED',
};

/** Flat `{ key: value }`; a later key wins (non-identifying attributes come second). */
function attributes(pairs: KeyValue[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const pair of pairs) out[pair.key] = anyValue(pair.value);
  return out;
}

function anyValue(value: AnyValue | undefined): unknown {
  if (!value) return null;
  switch (value.value.case) {
    case undefined:
      return null;
    case 'intValue': {
      const n = value.value.value;
      return n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n.toString();
    }
    case 'doubleValue':
      return Number.isFinite(value.value.value) ? value.value.value : String(value.value.value);
    case 'arrayValue':
      return value.value.value.values.map(anyValue);
    case 'kvlistValue':
      return attributes(value.value.value.values);
    case 'bytesValue':
      return Buffer.from(value.value.value).toString('base64');
    default:
      return value.value.value;
  }
}

/**
 * sha256 (hex) of the effective configuration: of the one file's body when there is one
 * (the same hash a push of that content carries), else of every `name\0body\0` by name.
 */
export function configMapHash(map: AgentConfigMap): string {
  const names = Object.keys(map.configMap).sort();
  const hash = createHash('sha256');
  if (names.length === 1) return hash.update(map.configMap[names[0]!]!.body).digest('hex');
  for (const name of names) hash.update(name).update('\0').update(map.configMap[name]!.body).update('\0');
  return hash.digest('hex');
}

/**
 * Applies one message in a transaction; `agent.connected` when the agent was not online
 * before or opened a new WebSocket session. A pending agent stays `pending-approval`.
 */
export async function applyStatus(
  db: Knex,
  agentId: string,
  message: AgentToServer,
  /** `session`: the WebSocket session the message came by (none over HTTP); it now speaks for the agent. */
  options: { newSession: boolean; transport: 'websocket' | 'http'; pending: boolean; session?: string },
): Promise<ReportedAgent | undefined> {
  return db.transaction(async (trx) => {
    const status: AgentStatus = options.pending ? 'pending-approval' : 'online';
    const applied = await applyAgentReport(trx, agentId, {
      ...storable(reportFrom(message)),
      status,
      session: options.session ?? null,
    });
    if (!applied || applied.cutOff) return applied;
    if (
      !options.pending &&
      applied.previous !== 'pending-approval' &&
      (applied.previous !== 'online' || options.newSession)
    ) {
      await emitEvents(trx, [
        {
          tenantId: applied.tenantId,
          type: 'agent.connected',
          source: OPAMP_SOURCE,
          subject: agentId,
          data: { agentId, transport: options.transport },
        },
      ]);
    }
    return applied;
  });
}

/**
 * The hot path for an online agent's routine message (heartbeat, config status, health):
 * written with other agents' in one statement, no transaction. Undefined when the agent is
 * not online (or gone, or cut off): then `applyStatus` does it properly, with its events.
 * A connection settings status (rare: it answers an offer) is not routine and goes there too.
 */
export async function applyRoutineStatus(
  batcher: ReportBatcher,
  agentId: string,
  message: AgentToServer,
): Promise<ReportedAgent | undefined> {
  const report = storable(reportFrom(message));
  if (report.settings) return undefined;
  return batcher.submit(agentId, report);
}

/**
 * The report of a WebSocket session's first message when SessionStarts can write it with
 * other sessions' (status online, the session); undefined when only `applyStatus` can (a
 * connection settings status answers an offer: rare, not for a batch).
 */
export function sessionStartReport(message: AgentToServer): AgentReport | undefined {
  const report = storable(reportFrom(message));
  return report.settings ? undefined : report;
}

export async function setOffline(db: Knex, agentId: string, reason: string, session?: string): Promise<void> {
  await db.transaction(async (trx) => {
    const changed = await markAgentOffline(trx, agentId, session);
    if (!changed) return;
    await emitEvents(trx, disconnectedEvents([{ id: agentId, tenantId: changed.tenantId }], reason));
  });
}

/** `agent.disconnected` for agents that just went offline, each with why. */
export function disconnectedEvents(agents: Array<{ id: string; tenantId: string }>, reason: string): NewEvent[] {
  return agents.map((agent) => ({
    tenantId: agent.tenantId,
    type: 'agent.disconnected',
    source: OPAMP_SOURCE,
    subject: agent.id,
    data: { agentId: agent.id, reason },
  }));
}

/** A WebSocket session that closed, and why (`websocket closed (1006)`). */
export interface SessionClose {
  agentId: string;
  sessionId: string;
  reason: string;
}

/**
 * Closed WebSocket sessions' agents marked offline many to a transaction (a mass disconnect:
 * a network blip, a load balancer restarted), each only while its session still speaks for
 * it, with its `agent.disconnected` event: `setOffline`, batched.
 */
export function sessionCloses(db: Knex): (close: SessionClose) => Promise<void> {
  const batches = new Coalescer<SessionClose, void>(
    async (closes) => {
      await db.transaction(async (trx) => {
        const changed = await markSessionsOffline(trx, closes, { countDisconnects: true });
        const reasons = new Map(closes.map((close) => [close.agentId, close.reason]));
        await emitEvents(
          trx,
          changed.flatMap((agent) => disconnectedEvents([agent], reasons.get(agent.id)!)),
        );
      });
      return closes.map(() => undefined);
    },
    { maxBatch: 1000, maxInFlight: 2, keyOf: (close) => close.agentId },
  );
  return (close) => batches.submit(close);
}

/** `setOffline` for many WebSocket sessions at once (a replica stopping), in one transaction. */
export async function setSessionsOffline(
  db: Knex,
  sessions: Array<{ agentId: string; sessionId: string }>,
  reason: string,
): Promise<void> {
  await db.transaction(async (trx) => {
    const changed = await markSessionsOffline(trx, sessions);
    await emitEvents(trx, disconnectedEvents(changed, reason));
  });
}

// ---------------------------------------------------------------------------------------
// Sequence numbers: a gap means the server may have missed a compressed status

/** Last sequence number per agent, in this process only (a restart asks for full state once). */
export class SequenceTracker {
  private readonly last = new Map<string, bigint>();

  /** Records `seq`; true when the agent should send its full state. */
  record(agentId: string, seq: bigint, hasDescription: boolean): boolean {
    const previous = this.last.get(agentId);
    this.last.set(agentId, seq);
    if (previous === undefined) return !hasDescription;
    return seq !== previous + 1n;
  }

  forget(agentId: string): void {
    this.last.delete(agentId);
  }
}

// ---------------------------------------------------------------------------------------
// ServerToAgent

// ---------------------------------------------------------------------------------------
// Connection settings: offered only when they differ from what the agent has

/** The settings every agent gets, and their hash (hex): what the agent is remembered to have been offered. */
export interface StandingSettings {
  heartbeatSeconds: number;
  hash: string;
}

/** The heartbeat interval, for an agent that reports heartbeats (others have nothing to do with it). */
export function standingSettings(capabilities: number, heartbeatSeconds: number): StandingSettings | undefined {
  if ((BigInt(capabilities) & AgentCapability.ReportsHeartbeat) === 0n) return undefined;
  return { heartbeatSeconds, hash: createHash('sha256').update(`heartbeat=${heartbeatSeconds}`).digest('hex') };
}

/**
 * Offer settings only when the agent was not offered them already and, unless it was last
 * offered something else (a handover's receiver, since withdrawn; another heartbeat), does
 * not report having them (applied, or failed: offering again would not help). An agent that
 * reconnects to apply every offer (a common way to verify new settings) would otherwise
 * reconnect forever; each change of what it should have is offered once.
 */
export function settingsDue(wanted: WantedSettings | undefined, agent: SettingsState): wanted is WantedSettings {
  if (wanted === undefined || wanted.hash === agent.offered) return false;
  return agent.offered !== null || wanted.hash !== agent.reported;
}

export interface ReplyOptions {
  tls: boolean;
  /** Connection settings to offer (with a certificate: those the agent gets with it, if any). */
  settings?: SettingsOffer;
  reportFullState: boolean;
  remoteConfig?: MessageInitShape<typeof AgentRemoteConfigSchema>;
  /** A leaf certificate answering the agent's CSR. */
  certificate?: { certificatePem: string; caPem: string };
}

export function replyTo(message: AgentToServer, options: ReplyOptions): MessageInitShape<typeof ServerToAgentSchema> {
  return create(ServerToAgentSchema, {
    instanceUid: message.instanceUid,
    capabilities: serverCapabilities(options.tls),
    flags: options.reportFullState ? ServerToAgentFlag.ReportFullState : 0n,
    remoteConfig: options.remoteConfig,
    connectionSettings: connectionSettings(options.settings, options.certificate),
  });
}

/**
 * `connection_settings`: the heartbeat; a handover's receiver (endpoint, the bearer token as
 * a header, the CAs to trust: the receiver's and ours; no client certificate, so the agent
 * leaves ours behind); after a withdrawn handover, our CA again (no endpoint: with one and no
 * certificate, an agent would drop its client certificate); or a leaf answering a CSR.
 */
export function connectionSettings(
  settings: SettingsOffer | undefined,
  certificate?: ReplyOptions['certificate'],
): MessageInitShape<typeof ConnectionSettingsOffersSchema> | undefined {
  if (!settings && !certificate) return undefined;
  const handover = settings?.handover;
  return {
    hash: connectionSettingsHash(settings, certificate),
    opamp: {
      heartbeatIntervalSeconds: BigInt(settings?.heartbeatSeconds ?? 0),
      certificate: certificate && {
        cert: Buffer.from(certificate.certificatePem),
        caCert: Buffer.from(certificate.caPem),
      },
      ...(handover && {
        destinationEndpoint: handover.endpoint,
        headers: { headers: [{ key: 'Authorization', value: `Bearer ${handover.token}` }] },
        tls: { caPemContents: handover.caPem },
      }),
      ...(settings?.caPem && { tls: { caPemContents: settings.caPem } }),
    },
  };
}

/**
 * Identifies the offered settings, so an agent can tell a new offer from one it has applied:
 * the settings' hash, or with a certificate a hash of both.
 */
function connectionSettingsHash(
  settings: SettingsOffer | undefined,
  certificate: ReplyOptions['certificate'] | undefined,
): Uint8Array {
  const offered = Buffer.from(settings?.hash ?? '', 'hex');
  if (!certificate) return offered;
  return createHash('sha256').update(offered).update('\0').update(certificate.certificatePem).digest();
}

/** How long an agent is told to wait when the database is away (a restart takes seconds). */
export const DATABASE_RETRY_SECONDS = 5;

/** ServerToAgent.error_response UNAVAILABLE with retry_info: the agent should come back after `seconds`. */
export function retryLaterReply(
  message: AgentToServer,
  seconds: number,
  text: string,
): MessageInitShape<typeof ServerToAgentSchema> {
  return create(ServerToAgentSchema, {
    instanceUid: message.instanceUid,
    errorResponse: {
      type: ServerErrorResponseType.ServerErrorResponseType_Unavailable,
      errorMessage: text,
      Details: { case: 'retryInfo', value: { retryAfterNanoseconds: BigInt(seconds) * 1_000_000_000n } },
    },
  });
}
