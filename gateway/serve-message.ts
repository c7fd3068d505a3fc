/**
 * One AgentToServer message, either transport: its CSR checked, the agent admitted, its
 * status written, and the reply built (remote config, certificate, connection settings).
 */
import { recordSettingsOffered, type ReportedAgent } from '../db/repos/agents';
import { CsrRejectedError, type CheckedCsr } from '../domain/certificates';
import { answerCertificateRequest, checkCertificateRequest, csrOf } from './certificate-request';
import type { AgentToServer } from './codec';
import { admitAgent, agentIdFromUid, type Admitted, type Credential } from './enrollment';
import type { SettingsOffer } from './handover-offers';
import { writingStatus, type ListenerContext } from './listener-context';
import type { Refusal } from './refusals';
import { keepEffectiveConfigOf } from './effective-config';
import type { SessionStarted } from './session-starts';
import {
  applyRoutineStatus,
  applyStatus,
  replyTo,
  sessionStartReport,
  setOffline,
  settingsDue,
  standingSettings,
} from './status';

export interface Served {
  ok: true;
  agentId: string;
  admission: Admitted;
  pending: boolean;
  reply: ReturnType<typeof replyTo>;
}

/** What a message's session tells `serveMessage` (HTTP has none: each request stands alone). */
export interface MessageSession {
  /** The WebSocket session's id; none over HTTP. */
  id?: string;
  newSession: boolean;
  sentHash: string | undefined;
  remember(hash: string): void;
  /** The effective configuration hash kept for the agent, as far as this session knows (none over HTTP). */
  keptEffective?: { get(): string | undefined; set(hash: string): void };
  /** A WebSocket is admitted once: its credential and uid cannot change, and cut-offs close it. */
  admitted?: Admitted;
}

/** Serves one message: the reply to send, or why the agent is refused. */
export async function serveMessage(
  ctx: ListenerContext,
  credential: Credential,
  message: AgentToServer,
  transport: 'websocket' | 'http',
  session: MessageSession,
): Promise<Served | ({ ok: false } & Refusal)> {
  const { db, logger, sequences, flaps, tls } = ctx;
  // A bad CSR is refused before anything of the message is stored.
  const csrBytes = tls ? csrOf(message) : undefined;
  let csr: CheckedCsr | undefined;
  if (csrBytes) {
    const checked = await checkCsr(message, csrBytes);
    if (!checked.ok) return checked;
    csr = checked.csr;
  }
  if (!session.admitted) {
    // An agent in a back-off costs nothing more than this look-up until it ends.
    const retryAfterSeconds = flaps.retryAfter(agentIdFromUid(message.instanceUid));
    if (retryAfterSeconds !== undefined) return { ok: false, reason: 'flapping', retryAfterSeconds };
  }
  const admission =
    session.admitted ??
    (await admitAgent(db, credential, message.instanceUid, transport, ctx.approval, ctx.lookups.admission));
  if (!admission.ok) return admission;
  const { agentId, tenantId, pending: held } = admission;
  /** A new session's first message written with others' (session-starts.ts): the row as it was. */
  let started: { reported: ReportedAgent | undefined } | undefined;
  if (session.newSession) {
    const batch = await startSession(ctx, message, session, { agentId, tenantId, transport, admission });
    // Not counted in a batch: counted here, and written below.
    const retryAfterSeconds = batch ? batch.flapping : await flaps.sessionStarted(agentId, tenantId);
    if (retryAfterSeconds !== undefined) return { ok: false, reason: 'flapping', retryAfterSeconds };
    if (batch?.flapping === undefined) started = batch;
  }
  const reportFullState =
    sequences.record(agentId, message.sequenceNum, message.agentDescription !== undefined) && !admission.enrolled;
  const replyOptions = { tls, reportFullState };
  if (message.agentDisconnect && transport === 'http') {
    await setOffline(db, agentId, 'agent-disconnect');
    sequences.forget(agentId);
    return { ok: true, agentId, admission, pending: held, reply: replyTo(message, replyOptions) };
  }
  const routine = !session.newSession && !held && !admission.enrolled && !message.agentDescription;
  const batched = routine ? await applyRoutineStatus(ctx.reports, agentId, message) : undefined;
  // A stopping replica has marked its WebSocket agents offline (or is about to): a message
  // still in flight must not bring one back online.
  if (!batched && !started && ctx.stopping && transport === 'websocket') return { ok: false, reason: 'stopping' };
  const reported = started
    ? started.reported
    : (batched ??
      (await writingStatus(
        ctx,
        applyStatus(db, agentId, message, {
          newSession: session.newSession,
          transport,
          pending: held,
          session: session.id,
        }),
      )));
  if (!reported) return { ok: false, reason: 'unknown-agent' }; // the row is gone
  if (reported.cutOff) return { ok: false, reason: 'agent-revoked' };
  if (message.effectiveConfig?.configMap && !held)
    await keepEffectiveConfigOf(ctx, { tenantId, agentId }, message.effectiveConfig.configMap, session.keptEffective);
  const tokenId = credential.kind === 'token' ? credential.row.id : undefined;
  const certificate =
    csr && !held
      ? await answerCertificateRequest(db, ctx.ca, ctx.certificateOptions, { tenantId, agentId, tokenId }, csr)
      : undefined;
  const remoteConfig = held
    ? undefined
    : await ctx.sessions.remoteConfigFor(agentId, reported.desired, reported.applied, session.sentHash);
  if (remoteConfig && reported.desired) session.remember(reported.desired.hash);
  const settings = await settingsToOffer(ctx, agentId, reported, certificate !== undefined);
  if (admission.enrolled)
    logger.info({ agentId, transport, pending: held }, held ? 'agent held for approval' : 'agent enrolled');
  if (certificate) logger.info({ agentId }, 'agent certificate issued');
  return {
    ok: true,
    agentId,
    admission,
    pending: held,
    reply: replyTo(message, { ...replyOptions, remoteConfig, certificate, settings }),
  };
}

/**
 * The first message of an admitted agent's WebSocket session, counted and written with other
 * sessions' (SessionStarts); undefined when it is not one for a batch (held, just enrolled, a
 * settings status, a replica stopping) or the batch failed.
 */
async function startSession(
  ctx: ListenerContext,
  message: AgentToServer,
  session: MessageSession,
  agent: { agentId: string; tenantId: string; transport: 'websocket' | 'http'; admission: Admitted },
): Promise<SessionStarted | undefined> {
  const { agentId, tenantId, transport, admission } = agent;
  if (transport !== 'websocket' || admission.pending || admission.enrolled || !session.id || ctx.stopping) return;
  const report = sessionStartReport(message);
  if (!report) return;
  return writingStatus(ctx, ctx.starts.submit({ agentId, tenantId, sessionId: session.id, report }));
}

/** The message's CSR checked for the agent its instance uid names, or why it is refused. */
async function checkCsr(
  message: AgentToServer,
  csrBytes: Uint8Array,
): Promise<{ ok: true; csr: CheckedCsr } | ({ ok: false } & Refusal)> {
  const uid = agentIdFromUid(message.instanceUid);
  if (!uid) return { ok: false, reason: 'bad-uid' };
  try {
    return { ok: true, csr: await checkCertificateRequest(csrBytes, uid) };
  } catch (error) {
    if (error instanceof CsrRejectedError) return { ok: false, reason: 'bad-csr', detail: error.message };
    throw error;
  }
}

/**
 * The connection settings a reply carries (docs/agent-gateway.md, Connection settings).
 * Settings go with a certificate too, an offer being the whole of the agent's settings: the
 * standing ones, a handover's offer waiting for the next reply.
 */
async function settingsToOffer(
  ctx: ListenerContext,
  agentId: string,
  reported: ReportedAgent,
  withCertificate: boolean,
): Promise<SettingsOffer | undefined> {
  const { sessions } = ctx;
  if (!withCertificate) return sessions.settingsDue(agentId, reported.capabilities, reported.settings);
  const standing = standingSettings(reported.capabilities, ctx.heartbeatSeconds);
  if (sessions.handovers.wanted(agentId, standing) === standing && settingsDue(standing, reported.settings))
    await recordSettingsOffered(ctx.db, agentId, standing.hash);
  return standing;
}
