/**
 * The agents this replica talks to right now, and what is sent to them unasked: pushed
 * configurations (AGENT_PUSH_CHANNEL), handover offers and their withdrawal
 * (AGENT_HANDOVER_CHANNEL), cut-offs (AGENT_CUTOFF_CHANNEL: revocation, rejection,
 * approval, a revoked token, a handover done), and the liveness sweep that turns silent agents
 * offline. State here is per replica; the database is the truth every replica reads.
 */
import { create } from '@bufbuild/protobuf';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Socket } from 'node:net';
import type { WebSocket } from 'ws';
import { AGENT_CUTOFF_CHANNEL, AGENT_HANDOVER_CHANNEL, type AgentCutoff } from '../db/notify';
import {
  agentStatuses,
  findDesired,
  findSettingsState,
  markSilentAgentsOffline,
  recordSettingsOffered,
  touchAgents,
  type SettingsState,
} from '../db/repos/agents';
import { revokedBootstrapTokenIds } from '../db/repos/bootstrap-tokens';
import { emitEvents } from '../db/repos/events';
import { PgListener } from '../platform/pg-listener';
import { Coalescer } from './coalescer';
import { encodeServerToAgent, frameWebSocket } from './codec';
import type { Admitted, Credential } from './enrollment';
import { ServerToAgentSchema } from './gen/opamp_pb';
import { AGENT_PUSH_CHANNEL } from '../domain/pushes';
import { RemoteConfigCache, type Desired } from './remote-config';
import { HandoverOffers, type SettingsOffer } from './handover-offers';
import { connectionSettings, disconnectedEvents, serverCapabilities, settingsDue, standingSettings } from './status';

/** Close codes for what the server does to a live session. */
export const SESSION_CLOSE = { policyViolation: 1008, serviceRestart: 1012 } as const;

/** Why a handed-over agent's session here ends (docs/federation.md, What the agent sees). */
export const HANDED_OVER_REASON = 'handed over to another installation';

/**
 * The same configuration is sent to an agent again no sooner than this (by this replica),
 * however often it reconnects reporting an empty status: one that really lost it gets it
 * again at a message after this.
 */
export const CONFIG_RESEND_SECONDS = 30;

export interface WsSession {
  /** Recorded on the agent row (`session_id`): the session that speaks for the agent. */
  id: string;
  ws: WebSocket;
  credential: Credential;
  agentId?: string;
  uid?: Uint8Array;
  pending: boolean;
  /** The admission of the session's first message, reused for the rest. */
  admitted?: Admitted;
  /** config_hash of the last remote_config sent in this session. */
  sentHash?: string;
  /** The effective configuration hash kept for the agent (gateway/effective-config.ts). */
  keptEffectiveHash?: string;
  /** Answered the last ping. */
  alive: boolean;
  /** Messages in and out of one session run one at a time, in order. */
  run(work: () => Promise<void>): void;
}

/** A session whose first message admitted it: it speaks for one agent. */
export type AdoptedSession = WsSession & { agentId: string };

export class AgentSessions {
  /** The live WebSocket of each agent; an older one is closed when a newer one is admitted. */
  readonly byAgent = new Map<string, AdoptedSession>();
  /** config_hash last offered to each HTTP agent by this replica (HTTP has no session). */
  readonly httpSent = new Map<string, string>();
  /** The last remote_config sent to each agent by this replica, and when (ms since the epoch). */
  private readonly lastConfigSent = new Map<string, { hash: string; at: number }>();
  /**
   * Sockets authenticated by an agent's certificate, closed when it is revoked: TLS sockets
   * (HTTP keep-alive included), or behind a TLS-ending proxy the WebSocket's socket to it.
   */
  private readonly certificateSockets = new Map<string, Set<Socket>>();
  readonly configs: RemoteConfigCache;
  /** Which agents are offered a handover's receiver. */
  readonly handovers: HandoverOffers;
  private readonly listener: PgListener;
  private sweepTimer?: NodeJS.Timeout;
  /** New sessions' re-checks, many sessions to a statement (a reconnect storm). */
  private readonly rechecks = new Coalescer<AdoptedSession, void>(
    async (sessions) => {
      await this.recheck(sessions);
      return sessions.map(() => undefined);
    },
    { maxBatch: 1000, maxInFlight: 1, keyOf: (session) => session.id },
  );

  constructor(
    private readonly db: Knex,
    private readonly logger: Logger,
    private readonly options: {
      databaseUrl: string;
      heartbeatSeconds: number;
      tls: boolean;
      /** Opens handover offers; none: no handover is offered (plain TCP). */
      offerKey?: Buffer;
      /** The CA agents trust this listener by: offered with a handover's receiver's, and again after it. */
      ownCaPem?: string;
    },
  ) {
    this.configs = new RemoteConfigCache(db);
    this.handovers = new HandoverOffers(db, logger, options.offerKey, options.ownCaPem);
    this.listener = new PgListener(
      options.databaseUrl,
      logger,
      () => void this.resync().catch((error) => this.fail(error, 'resync')),
    );
  }

  async start(): Promise<void> {
    await this.listener.listen(
      AGENT_PUSH_CHANNEL,
      (payload) => void this.deliver(payload.split(',')).catch((error) => this.fail(error, 'push delivery')),
    );
    await this.listener.listen(AGENT_CUTOFF_CHANNEL, (payload) => this.cutOff(payload));
    await this.listener.listen(
      AGENT_HANDOVER_CHANNEL,
      (payload) => void this.handoverChanged(payload).catch((error) => this.fail(error, 'handover offer')),
    );
    await this.listener.start();
    // After LISTEN: an offer changed from now on is notified, one changed before is read here.
    await this.handovers.load();
    this.sweepTimer = setInterval(
      () => void this.sweep().catch((error) => this.fail(error, 'liveness sweep')),
      this.options.heartbeatSeconds * 1000,
    );
    this.sweepTimer.unref();
  }

  async close(): Promise<void> {
    clearInterval(this.sweepTimer);
    await this.listener.close();
  }

  adopt(session: AdoptedSession): void {
    const older = this.byAgent.get(session.agentId);
    this.byAgent.set(session.agentId, session);
    if (older && older !== session) older.ws.close(SESSION_CLOSE.policyViolation, 'replaced by a newer connection');
  }

  /** True when this was the agent's current session (and it is now forgotten). */
  release(session: WsSession): boolean {
    if (!session.agentId || this.byAgent.get(session.agentId) !== session) return false;
    this.byAgent.delete(session.agentId);
    return true;
  }

  trackCertificateSocket(agentId: string, socket: Socket): void {
    let sockets = this.certificateSockets.get(agentId);
    if (!sockets) this.certificateSockets.set(agentId, (sockets = new Set()));
    sockets.add(socket);
    socket.once('close', () => {
      sockets.delete(socket);
      if (sockets.size === 0 && this.certificateSockets.get(agentId) === sockets)
        this.certificateSockets.delete(agentId);
    });
  }

  /**
   * Should this message's reply carry the desired configuration? Not while the agent has
   * already reported on that hash, nor twice in one session before it answers, nor the
   * same one again within CONFIG_RESEND_SECONDS.
   */
  async remoteConfigFor(
    agentId: string,
    desired: Desired | null,
    applied: { hash: string | null; status: string | null },
    sent: string | undefined,
  ) {
    if (!desired || desired.hash === sent) return undefined;
    if (applied.hash === desired.hash && applied.status !== null) return undefined;
    if (this.sentRecently(agentId, desired.hash)) return undefined;
    const config = await this.configs.get(desired);
    if (config) this.lastConfigSent.set(agentId, { hash: desired.hash, at: Date.now() });
    return config;
  }

  private sentRecently(agentId: string, hash: string): boolean {
    const last = this.lastConfigSent.get(agentId);
    return last !== undefined && last.hash === hash && Date.now() - last.at < CONFIG_RESEND_SECONDS * 1000;
  }

  /** Forgets sends older than CONFIG_RESEND_SECONDS (they no longer hold anything back). */
  private forgetOldSends(): void {
    const before = Date.now() - CONFIG_RESEND_SECONDS * 1000;
    for (const [agentId, last] of this.lastConfigSent) if (last.at < before) this.lastConfigSent.delete(agentId);
  }

  // -------------------------------------------------------------------------------------
  // Push

  /** Sends the desired configuration to those of `agentIds` connected here by WebSocket. */
  private async deliver(agentIds: string[]): Promise<void> {
    const local = agentIds.filter((id) => this.byAgent.has(id));
    if (local.length === 0) return;
    for (const desired of await findDesired(this.db, local)) {
      const session = this.byAgent.get(desired.id);
      if (!session || session.pending || session.sentHash === desired.hash) continue;
      session.run(async () => {
        const remoteConfig = await this.configs.get(desired);
        if (!remoteConfig || session.ws.readyState !== session.ws.OPEN || session.sentHash === desired.hash) return;
        session.sentHash = desired.hash;
        this.lastConfigSent.set(desired.id, { hash: desired.hash, at: Date.now() });
        const message = create(ServerToAgentSchema, {
          instanceUid: session.uid,
          capabilities: serverCapabilities(this.options.tls),
          remoteConfig,
        });
        session.ws.send(frameWebSocket(encodeServerToAgent(message)));
      });
    }
  }

  /** After the LISTEN connection was lost: pushes, handover offers and cut-offs may have been missed. */
  private async resync(): Promise<void> {
    await this.handovers.load();
    if (this.byAgent.size === 0) return;
    await this.recheck([...this.byAgent.values()]);
    await this.deliver([...this.byAgent.keys()]);
    // Offers made meanwhile go now; a withdrawal missed goes with the agent's next reply.
    this.offerSettings([...this.byAgent.keys()].filter((agentId) => this.handovers.isOffered(agentId)));
  }

  // -------------------------------------------------------------------------------------
  // Handover offers

  /** Offers of these agents changed (offered, or withdrawn): those connected here are told at once. */
  private async handoverChanged(payload: string): Promise<void> {
    let agentIds: string[];
    try {
      ({ agentIds } = JSON.parse(payload) as { agentIds: string[] });
    } catch {
      return;
    }
    if (!Array.isArray(agentIds)) return;
    await this.handovers.refresh(agentIds);
    this.offerSettings(agentIds);
  }

  /**
   * Sends those of `agentIds` connected here by WebSocket the settings they should have now
   * (a handover's receiver, or the standing settings again once it is withdrawn) when due:
   * in the session's turn, so a message being answered and this offer do not both send it.
   * HTTP agents get it in the reply to their next message.
   */
  private offerSettings(agentIds: string[]): void {
    for (const agentId of agentIds) {
      const session = this.byAgent.get(agentId);
      if (!session || session.pending) continue;
      session.run(async () => {
        const agent = await findSettingsState(this.db, agentId);
        if (!agent || session.ws.readyState !== session.ws.OPEN) return;
        const offer = await this.settingsDue(agentId, agent.capabilities, agent.settings);
        if (!offer || session.ws.readyState !== session.ws.OPEN) return;
        const message = create(ServerToAgentSchema, {
          instanceUid: session.uid,
          capabilities: serverCapabilities(this.options.tls),
          connectionSettings: connectionSettings(offer),
        });
        session.ws.send(frameWebSocket(encodeServerToAgent(message)));
        this.logger.info({ agentId, handoverId: offer.handoverId }, 'connection settings offered');
      });
    }
  }

  /**
   * The connection settings the agent should be offered now, remembered as offered: a
   * handover's receiver while it is offered one, else the standing settings; undefined when
   * they are not due (docs/agent-gateway.md, Connection settings).
   */
  async settingsDue(agentId: string, capabilities: number, agent: SettingsState): Promise<SettingsOffer | undefined> {
    const standing = standingSettings(capabilities, this.options.heartbeatSeconds);
    const wanted = this.handovers.wanted(agentId, standing);
    if (!settingsDue(wanted, agent)) return undefined;
    const offer = await this.handovers.resolve(agentId, wanted, agent.offered);
    if (offer) await recordSettingsOffered(this.db, agentId, offer.hash);
    return offer;
  }

  /** `recheck` of a session just adopted, with other sessions adopted meanwhile. */
  recheckAdopted(session: AdoptedSession): Promise<void> {
    return this.rechecks.submit(session);
  }

  /**
   * Closes the sessions whose standing changed where no cut-off could reach them: after
   * their admission read the database and before `adopt` (a session is then unknown here),
   * or while the LISTEN connection was down. The database holds what the notifications said.
   */
  async recheck(sessions: AdoptedSession[]): Promise<void> {
    if (sessions.length === 0) return;
    const agents = await agentStatuses(
      this.db,
      sessions.map((session) => session.agentId),
    );
    const statuses = new Map(agents.map((row) => [row.id, row.status]));
    const tokenIds = [
      ...new Set(
        sessions.flatMap((session) => (session.credential.kind === 'token' ? [session.credential.row.id] : [])),
      ),
    ];
    const revokedTokens = new Set<string>(
      tokenIds.length === 0 ? [] : await revokedBootstrapTokenIds(this.db, tokenIds),
    );
    for (const session of sessions) {
      // A session replaced while the statements ran is closed already; its successor is not
      // the one that was judged here.
      if (this.byAgent.get(session.agentId) !== session) continue;
      const status = statuses.get(session.agentId);
      if (status === undefined || status === 'revoked' || status === 'handed-over') {
        this.closeAgent(session.agentId, SESSION_CLOSE.policyViolation, 'agent revoked');
      } else if (session.credential.kind === 'token' && revokedTokens.has(session.credential.row.id)) {
        session.ws.close(SESSION_CLOSE.policyViolation, 'bootstrap token revoked');
      } else if (session.pending && status !== 'pending-approval') {
        session.ws.close(SESSION_CLOSE.serviceRestart, 'approved: reconnect');
      }
    }
  }

  // -------------------------------------------------------------------------------------
  // Cut-offs

  private cutOff(payload: string): void {
    let cutoff: AgentCutoff;
    try {
      cutoff = JSON.parse(payload) as AgentCutoff;
    } catch {
      return;
    }
    switch (cutoff.action) {
      case 'revoke':
        return this.closeAgent(cutoff.agentId, SESSION_CLOSE.policyViolation, 'certificate revoked');
      case 'reject':
        return this.closeAgent(cutoff.agentId, SESSION_CLOSE.policyViolation, 'enrolment rejected');
      case 'approve':
        // The held session ends; the agent reconnects and is admitted in full.
        return this.closeAgent(cutoff.agentId, SESSION_CLOSE.serviceRestart, 'approved: reconnect');
      case 'handed-over':
        // It belongs to the receiver now: like a revocation, it may no longer speak here.
        return this.closeAgent(cutoff.agentId, SESSION_CLOSE.policyViolation, HANDED_OVER_REASON);
      case 'token-revoked':
        for (const session of this.byAgent.values()) {
          if (session.credential.kind === 'token' && session.credential.row.id === cutoff.tokenId) {
            session.ws.close(SESSION_CLOSE.policyViolation, 'bootstrap token revoked');
          }
        }
        return;
    }
  }

  private closeAgent(agentId: string, code: number, reason: string): void {
    const session = this.byAgent.get(agentId);
    if (session) {
      this.logger.info({ agentId, code, reason }, 'closing agent session');
      session.ws.close(code, reason);
    }
    if (code === SESSION_CLOSE.policyViolation) {
      for (const socket of this.certificateSockets.get(agentId) ?? []) socket.destroy();
    }
    this.httpSent.delete(agentId);
  }

  // -------------------------------------------------------------------------------------
  // Liveness

  /**
   * Every heartbeat interval: WebSockets that did not answer the last ping are dropped; the
   * others count as seen (an agent that sends nothing new is still there, its row stamped
   * unless a report of its own did so within the interval); then agents of any
   * replica not seen for three intervals become offline.
   */
  private async sweep(): Promise<void> {
    this.forgetOldSends();
    const alive: string[] = [];
    for (const [agentId, session] of this.byAgent) {
      if (!session.alive) {
        session.ws.terminate();
        continue;
      }
      session.alive = false;
      session.ws.ping();
      if (!session.pending) alive.push(agentId);
    }
    // An agent that reported since the last sweep was stamped by its report.
    await touchAgents(this.db, alive, this.options.heartbeatSeconds);
    await this.db.transaction(async (trx) => {
      const silent = await markSilentAgentsOffline(trx, 3 * this.options.heartbeatSeconds);
      for (const agent of silent) this.httpSent.delete(agent.id);
      await emitEvents(trx, disconnectedEvents(silent, 'missed three heartbeats'));
    });
  }

  private fail(error: unknown, what: string): void {
    this.logger.error({ err: error }, `opamp ${what} failed`);
  }
}
