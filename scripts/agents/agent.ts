/**
 * A simulated OpAMP agent, over WebSocket or HTTP (docs/agent-simulator.md).
 *
 * It enrolls with a bootstrap token, sends a CSR once admitted, moves to mTLS when the server
 * returns a certificate, applies remote configurations (through a hook that can fail them),
 * follows offered OpAMP connection settings (another endpoint, CA and token: a handover) the
 * way opamp-go agents do, and reports status. `fleet.ts` runs N of them. The simulator is used
 * by the tests, the benches and `npm run agents` alike.
 */
import { EventEmitter } from 'node:events';
import { isIP } from 'node:net';
import tls from 'node:tls';
import WebSocket from 'ws';
import {
  AgentCapability,
  decodeHttpBody,
  decodeServerToAgent,
  encodeAgentToServer,
  frameWebSocket,
  hasBits,
  ServerToAgentFlag,
  unframeWebSocket,
  type ServerToAgent,
} from '../../gateway/codec';
import {
  ConnectionSettingsStatuses,
  RemoteConfigStatuses,
  ServerErrorResponseType,
  type AgentConfigFile,
  type Headers,
  type OpAMPConnectionSettings,
  type TLSCertificate,
} from '../../gateway/gen/opamp_pb';
import { x509 } from '../../domain/certificates/x509';
import { description, newInstanceUid, uidToUuid, type AgentMessage } from './opamp-client';
import type {
  AgentState,
  AppliedStatus,
  Refusal,
  SimulatedAgentOptions,
  SimulatedHealth,
  Transport,
} from './agent-state';
import { generateCsr, type GeneratedCsr } from './csr';
import { postProtobuf } from './post-protobuf';
import { createSharedResources, type SharedResources } from './shared-resources';

export const SIMULATOR_CAPABILITIES =
  AgentCapability.ReportsStatus |
  AgentCapability.AcceptsRemoteConfig |
  AgentCapability.ReportsEffectiveConfig |
  AgentCapability.AcceptsOpAMPConnectionSettings |
  AgentCapability.ReportsHealth |
  AgentCapability.ReportsRemoteConfig |
  AgentCapability.ReportsHeartbeat |
  AgentCapability.ReportsConnectionSettingsStatus;

const DEFAULT_HEARTBEAT_SECONDS = 30;
/** Close codes and HTTP statuses by which the server refuses an agent: never reconnect. */
const REFUSAL_CLOSE = 1008;
const REFUSAL_STATUSES = new Set([400, 401, 403]);

/** Where and how an agent connects: its options at first, a followed offer's afterwards. */
interface Link {
  endpoint: string;
  /** Bootstrap token, sent as `Authorization: Bearer` (or `?token=`) until the agent holds a certificate. */
  token?: string;
  tokenInUrl?: boolean;
  /** Headers an offer named besides Authorization. */
  headers?: Record<string, string>;
  ca?: string | Buffer;
  mtlsEndpoint?: string;
}

/** Offered settings being tried: the agent keeps them once a connection with them is admitted. */
interface Candidate {
  link: Link;
  /** The offer's hash, reported back if the settings fail. */
  hash: Uint8Array;
}

interface Pending {
  full: boolean;
  remoteStatus: boolean;
  health: boolean;
  csr: boolean;
  disconnect: boolean;
}

const NOTHING_PENDING: Readonly<Pending> = {
  full: false,
  remoteStatus: false,
  health: false,
  csr: false,
  disconnect: false,
};

interface StoredConfig {
  hash: Uint8Array;
  status: RemoteConfigStatuses;
  error: string;
}

const text = (bytes: Uint8Array) => Buffer.from(bytes).toString('utf8');
const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');
const isTls = (url: string) => /^(wss|https):/i.test(url);
const STATUS_NAMES: Partial<Record<RemoteConfigStatuses, AppliedStatus>> = {
  [RemoteConfigStatuses.RemoteConfigStatuses_APPLYING]: 'APPLYING',
  [RemoteConfigStatuses.RemoteConfigStatuses_APPLIED]: 'APPLIED',
  [RemoteConfigStatuses.RemoteConfigStatuses_FAILED]: 'FAILED',
};

/**
 * Events: 'change' (any state change), 'connected', 'enrolled', 'config' ({ hash, status,
 * error }), 'certificate' (AgentCertificate), 'refused' (Refusal), 'closed' ({ code, reason }),
 * 'failure' (Error: network errors, bad replies; never 'error', so nothing throws unheard),
 * 'message' (ServerToAgent), 'sent' (each AgentToServer as it goes out; benches time replies).
 */
export class SimulatedAgent extends EventEmitter {
  readonly options: Readonly<SimulatedAgentOptions>;
  readonly state: AgentState;
  /** When to renew (fraction of the lifetime); settable so a test can make renewal due now. */
  renewAtFraction: number;
  private uid: Uint8Array;
  private sequence = 0n;
  private readonly startNanos = BigInt(Date.now()) * 1_000_000n;
  /** When the reported health last changed (status_time_unix_nano). */
  private healthSince = this.startNanos;
  private readonly shared: SharedResources;
  private readonly ownsShared: boolean;
  private pending: Pending = { ...NOTHING_PENDING };
  private remote?: StoredConfig;
  private effective?: Record<string, { body: Uint8Array; contentType: string }>;
  private csr?: GeneratedCsr;
  private csrGenerating = false;
  private csrSentOnConnection = false;
  private offeredEndpoint?: string;
  private link: Link;
  private candidate?: Candidate;
  /** connection_settings_status, sent with every full state once an offer failed. */
  private settingsStatus?: { hash: Uint8Array; error: string };
  private ws?: WebSocket;
  /** The TLS configuration of its connections, built once for its CA, certificate and key. */
  private secureContext?: { key: string; context: tls.SecureContext };
  /** The last TLS session of a WebSocket, and what it was for (endpoint and client certificate). */
  private tlsSession?: { key: string; session: Buffer };
  private switchingToMtls = false;
  /** Whether the open WebSocket presents a client certificate (state.mtls once admitted). */
  private wsMtls = false;
  private httpInFlight?: Promise<boolean>;
  private httpSessionFresh = true;
  private timer?: NodeJS.Timeout;
  /** A message the server could not take now (UNAVAILABLE), sent again when it said to. */
  private retryTimer?: NodeJS.Timeout;
  private reconnectAttempt = 0;
  private firstSettled?: () => void;
  /** Set by setHeartbeatSeconds: wins over the option and the server's offer. */
  private heartbeatOverride?: number;
  /** The socket is closing to apply an offer (followed, or reconnectOnEveryOffer): the next connection goes at once. */
  private reconnectingForOffer = false;

  constructor(options: SimulatedAgentOptions) {
    super();
    this.setMaxListeners(100); // tests may wait on one agent many times
    this.options = options;
    this.uid = options.instanceUid ?? newInstanceUid();
    this.renewAtFraction = options.renewAtFraction ?? 2 / 3;
    this.ownsShared = !options.shared;
    this.shared = options.shared ?? createSharedResources(1);
    this.link = {
      endpoint: options.endpoint,
      token: options.token,
      tokenInUrl: options.tokenInUrl,
      ca: options.ca,
      mtlsEndpoint: options.mtlsEndpoint,
    };
    this.state = {
      id: uidToUuid(this.uid),
      transport: options.transport ?? (/^wss?:/i.test(options.endpoint) ? 'ws' : 'http'),
      connected: false,
      enrolled: false,
      mtls: false,
      csrPending: false,
      heartbeatSeconds: options.heartbeatSeconds ?? DEFAULT_HEARTBEAT_SECONDS,
      configsApplied: 0,
      configsFailed: 0,
      connects: 0,
      errors: 0,
      stopped: false,
      endpoint: options.endpoint,
      health: { healthy: true },
    };
  }

  get id(): string {
    return this.state.id;
  }

  /** Connects; resolves when the first attempt is settled (admitted, refused or failed). */
  start(): Promise<void> {
    const settled = new Promise<void>((resolve) => (this.firstSettled = resolve));
    this.state.stopped = false;
    void this.connect();
    return settled;
  }

  /** Says goodbye (agent_disconnect), closes cleanly, stops every timer. */
  async stop(): Promise<void> {
    if (this.state.stopped) return;
    this.state.stopped = true;
    this.clearTimer();
    clearTimeout(this.retryTimer);
    if (this.state.transport === 'ws') await this.stopWebSocket();
    else await this.stopHttp();
    this.settleFirst();
    if (this.ownsShared) this.shared.destroy();
    this.changed();
  }

  /**
   * Goes away without a word, as a laptop closed or a host powered off does: no
   * agent_disconnect, the WebSocket dropped (the server sees the TCP connection close), every
   * timer stopped. `stop()` after it does nothing more.
   */
  async vanish(): Promise<void> {
    if (this.state.stopped) return;
    this.state.stopped = true;
    this.clearTimer();
    const ws = this.ws;
    if (ws && ws.readyState !== WebSocket.CLOSED) {
      const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
      ws.terminate();
      await closed;
    }
    this.settleFirst();
    if (this.ownsShared) this.shared.destroy();
    this.changed();
  }

  /** Resolves when `predicate(state)` holds; rejects after `timeoutMs` with the state. */
  waitFor(predicate: (state: AgentState) => boolean, timeoutMs = 10_000): Promise<AgentState> {
    if (predicate(this.state)) return Promise.resolve(this.state);
    return new Promise((resolve, reject) => {
      const check = () => {
        if (!predicate(this.state)) return;
        cleanup();
        resolve(this.state);
      };
      const timeout = setTimeout(() => {
        cleanup();
        reject(
          new Error(`agent ${this.id}: condition not met within ${timeoutMs} ms; state ${describeState(this.state)}`),
        );
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timeout);
        this.off('change', check);
      };
      this.on('change', check);
    });
  }

  /**
   * Changes the heartbeat interval from now on (the WebSocket timer restarts at once), over
   * the option and the server's offer. Benches use it for a window of frequent heartbeats.
   */
  setHeartbeatSeconds(seconds: number): void {
    this.heartbeatOverride = seconds;
    this.state.heartbeatSeconds = seconds;
    if (this.ws?.readyState === WebSocket.OPEN) this.restartHeartbeat();
    this.changed();
  }

  /** Reports this health from now on (sent at once when connected; with every full state after). */
  setHealth(health: SimulatedHealth): void {
    this.state.health = { ...health };
    this.healthSince = BigInt(Date.now()) * 1_000_000n;
    this.pending.health = true;
    this.flush();
    this.changed();
  }

  /**
   * Reports running these files from now on instead of what it was last pushed (someone
   * edited the configuration on the host): sent at once when connected, and with every full
   * state. The next configuration pushed and applied replaces them.
   */
  setEffectiveConfig(files: Record<string, { body: string; contentType?: string }>): void {
    this.effective = Object.fromEntries(
      Object.entries(files).map(([name, file]) => [
        name,
        { body: Buffer.from(file.body, 'utf8'), contentType: file.contentType ?? '' },
      ]),
    );
    this.pending.remoteStatus = true;
    this.flush();
    this.changed();
  }

  // -------------------------------------------------------------------------------------
  // Connections

  private async connect(): Promise<void> {
    if (this.state.stopped || this.state.refused) return;
    const release = await this.shared.limiter.acquire();
    if (this.state.stopped) return release();
    this.state.connects++;
    this.csrSentOnConnection = false;
    if (this.options.reconnectOnEveryOffer) {
      // A fresh client knows nothing of what the agent applied: it reports an empty status.
      this.remote = { hash: new Uint8Array(), status: RemoteConfigStatuses.RemoteConfigStatuses_UNSET, error: '' };
    }
    if (this.state.transport === 'ws') this.openWebSocket(release);
    else {
      this.httpSessionFresh = true;
      this.pending.full = true;
      await this.poll(release);
    }
  }

  /** The URL and credentials of the next connection: mTLS once a certificate is held and a TLS endpoint is known. */
  private target(): {
    url: URL;
    headers: Record<string, string>;
    tls: { ca?: string | Buffer; cert?: string; key?: string };
    mtls: boolean;
  } {
    const link = this.candidate?.link ?? this.link;
    // Offered settings carry no client certificate: the agent leaves the one it had behind.
    const certificate = this.candidate ? undefined : this.state.certificate;
    const mtlsUrl =
      link.mtlsEndpoint ??
      (this.offeredEndpoint && isTls(this.offeredEndpoint) ? this.offeredEndpoint : undefined) ??
      (isTls(link.endpoint) ? link.endpoint : undefined);
    const mtls = Boolean(certificate && mtlsUrl);
    const url = new URL(withScheme(mtls ? mtlsUrl! : link.endpoint, this.state.transport));
    const headers: Record<string, string> = { ...link.headers };
    const tls: { ca?: string | Buffer; cert?: string; key?: string } = { ca: link.ca };
    if (mtls) {
      tls.cert = certificate!.certPem;
      tls.key = certificate!.keyPem;
    } else if (link.token) {
      if (link.tokenInUrl) url.searchParams.set('token', link.token);
      else headers.authorization = `Bearer ${link.token}`;
    }
    return { url, headers, tls, mtls };
  }

  private openWebSocket(release: () => void): void {
    const { url, headers, tls: tlsOptions, mtls } = this.target();
    const timeoutMs = this.options.requestTimeoutMs ?? 10_000;
    const ws = new WebSocket(url, {
      headers,
      ...(url.protocol === 'wss:' ? { secureContext: this.secureContextFor(tlsOptions) } : {}),
      ...this.resumption(url, tlsOptions.cert),
      handshakeTimeout: timeoutMs,
      perMessageDeflate: false,
    });
    this.ws = ws;
    /** Offered settings this connection tries; whatever ends it before its first reply means they failed. */
    const attempt = this.candidate;
    let attemptFailure: string | undefined;
    const comeUp = attempt && setTimeout(() => ws.terminate(), timeoutMs);
    let answered = false; // an HTTP answer to the upgrade is reported once, not again as an error
    ws.on('unexpected-response', (_req, res) => {
      answered = true;
      const status = res.statusCode ?? 0;
      this.state.lastHttpStatus = status;
      res.resume();
      if (attempt) attemptFailure = `WebSocket upgrade answered HTTP ${status}`;
      else if (REFUSAL_STATUSES.has(status))
        this.refuse({ status, reason: `WebSocket upgrade refused with HTTP ${status}` });
      else this.fail(new Error(`WebSocket upgrade answered HTTP ${status}`));
      ws.terminate();
    });
    ws.on('error', (error) => {
      if (attempt) attemptFailure ??= error.message;
      if (!answered && !this.state.refused && !this.state.stopped) this.fail(error);
    });
    ws.on('open', () => {
      release();
      this.wsMtls = mtls;
      this.pending.full = true;
      this.flush();
      this.restartHeartbeat();
      this.changed();
    });
    ws.on('message', (data, isBinary) => {
      if (!isBinary) return this.fail(new Error('text frame from the server'));
      let reply: ServerToAgent;
      try {
        reply = decodeServerToAgent(unframeWebSocket(data as Buffer));
      } catch (error) {
        return this.fail(error as Error);
      }
      if (attempt && this.candidate === attempt) {
        clearTimeout(comeUp);
        this.keepOffer(attempt);
      }
      this.onReply(reply);
    });
    ws.on('close', (code, reasonBuffer) => {
      release();
      clearTimeout(comeUp);
      if (this.ws === ws) this.ws = undefined;
      const reason = reasonBuffer.toString();
      this.state.connected = false;
      this.state.mtls = false;
      this.state.lastClose = { code, reason };
      this.clearTimer();
      this.emit('closed', { code, reason });
      // Offered settings that never came up: back to the previous ones at once (not a refusal).
      const abandoned = attempt !== undefined && this.candidate === attempt;
      if (abandoned) this.abandonOffer(attempt, attemptFailure ?? `closed ${code} ${reason}`.trim());
      else if (code === REFUSAL_CLOSE && !this.state.stopped) this.refuse({ code, reason });
      this.settleFirst();
      this.changed();
      if (this.state.stopped || this.state.refused) return;
      if (abandoned) void this.connect();
      else if (this.switchingToMtls || this.reconnectingForOffer) {
        this.switchingToMtls = false;
        this.reconnectingForOffer = false;
        void this.connect();
      } else this.scheduleReconnect();
    });
  }

  /**
   * The TLS configuration for this CA, certificate and key, built once as an agent builds its
   * own (a context per connection cost the simulator ~6 ms of CPU each: it reads every root
   * certificate again), and again only when one of them changes.
   */
  private secureContextFor(options: { ca?: string | Buffer; cert?: string; key?: string }): tls.SecureContext {
    const key = [options.ca, options.cert, options.key].map((part) => part?.toString() ?? '').join('\n');
    if (this.secureContext?.key !== key) this.secureContext = { key, context: tls.createSecureContext(options) };
    return this.secureContext.context;
  }

  /**
   * TLS session resumption (`resumeTls`): the session last received for this endpoint and
   * client certificate is offered, and the one the server sends now is kept for next time.
   * A new certificate (renewal) or another endpoint starts afresh: a session resumes the
   * identity it began with.
   */
  private resumption(url: URL, cert: string | undefined): WebSocket.ClientOptions & { session?: Buffer } {
    if (url.protocol !== 'wss:' || this.options.resumeTls === false) return {};
    const key = `${url.origin}\n${cert ?? ''}`;
    const session = this.tlsSession?.key === key ? this.tlsSession.session : undefined;
    // As ws connects (no path: that would be a Unix socket; no SNI for an IP address), with a
    // listener for the server's tickets.
    const connect = (options: tls.ConnectionOptions) => {
      const host = options.host ?? '';
      const socket = tls.connect({
        ...options,
        path: undefined,
        servername: options.servername ?? (isIP(host) ? '' : host),
      });
      socket.on('session', (received: Buffer) => (this.tlsSession = { key, session: received }));
      return socket;
    };
    return { session, createConnection: connect as unknown as WebSocket.ClientOptions['createConnection'] };
  }

  private async stopWebSocket(): Promise<void> {
    const ws = this.ws;
    if (!ws) return;
    const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
    if (ws.readyState === WebSocket.OPEN) {
      this.pending.disconnect = true;
      this.sendWebSocket(ws);
      ws.close(1000, 'agent stopping');
    } else ws.terminate();
    const guard = setTimeout(() => ws.terminate(), 2_000);
    await closed;
    clearTimeout(guard);
  }

  private sendWebSocket(ws: WebSocket): void {
    const message = this.nextMessage();
    ws.send(frameWebSocket(encodeAgentToServer(message)));
    this.emit('sent', message);
  }

  /** HTTP: one request in flight; anything pending goes at once, otherwise the next poll is a heartbeat. */
  private async poll(release?: () => void): Promise<void> {
    if (this.httpInFlight || this.state.stopped || this.state.refused) return release?.();
    this.clearTimer();
    const run = this.postOnce().finally(() => {
      release?.();
      this.httpInFlight = undefined;
    });
    this.httpInFlight = run;
    const ok = await run;
    if (this.state.stopped || this.state.refused) return;
    if (!ok) return this.scheduleReconnect();
    if (this.hasPending()) void this.poll();
    else this.timer = setTimeout(() => void this.poll(), this.state.heartbeatSeconds * 1000);
  }

  /** Sends one message; true when the server answered 200 with a valid reply. */
  private async postOnce(): Promise<boolean> {
    const attempt = this.candidate;
    const { url, headers, tls, mtls } = this.target();
    const message = this.nextMessage();
    this.emit('sent', message);
    try {
      const response = await postProtobuf(url, encodeAgentToServer(message), {
        headers,
        tls,
        agent: url.protocol === 'https:' ? this.shared.httpsAgent : this.shared.httpAgent,
        timeoutMs: this.options.requestTimeoutMs ?? 30_000,
      });
      this.state.lastHttpStatus = response.status;
      if (attempt && response.status !== 200) {
        this.abandonOffer(attempt, `HTTP ${response.status}`);
        return true; // the next request goes at once, with the previous settings
      }
      if (REFUSAL_STATUSES.has(response.status)) {
        this.state.connected = false;
        this.refuse({
          status: response.status,
          reason: response.body.toString('utf8').slice(0, 200) || `HTTP ${response.status}`,
        });
        return false;
      }
      if (response.status !== 200)
        throw new Error(`HTTP ${response.status}: ${response.body.toString('utf8').slice(0, 200)}`);
      const reply = decodeServerToAgent(decodeHttpBody(response.body, response.encoding));
      if (!this.state.connected) this.emit('connected');
      this.state.connected = !message.agentDisconnect;
      this.state.mtls = mtls && this.state.connected;
      this.httpSessionFresh = false;
      if (attempt && this.candidate === attempt) this.keepOffer(attempt);
      this.onReply(reply);
      return true;
    } catch (error) {
      if (attempt && this.candidate === attempt) {
        this.abandonOffer(attempt, (error as Error).message);
        return true;
      }
      this.state.connected = false;
      this.state.mtls = false;
      this.fail(error as Error);
      this.settleFirst();
      return false;
    }
  }

  private async stopHttp(): Promise<void> {
    await this.httpInFlight;
    if (!this.state.connected || this.state.refused) return;
    this.pending.disconnect = true;
    await this.postOnce();
    this.state.connected = false;
    this.state.mtls = false;
  }

  private scheduleReconnect(): void {
    const min = this.options.reconnectMinMs ?? 250;
    const max = this.options.reconnectMaxMs ?? 10_000;
    const ceiling = Math.min(max, min * 2 ** this.reconnectAttempt++);
    const delay = ceiling * (0.5 + Math.random() / 2);
    this.clearTimer();
    this.timer = setTimeout(() => void this.connect(), delay);
  }

  private restartHeartbeat(): void {
    if (this.state.transport !== 'ws') return;
    this.clearTimer();
    this.timer = setInterval(() => {
      if (this.ws?.readyState === WebSocket.OPEN) this.flush();
      this.maybeRenew();
    }, this.state.heartbeatSeconds * 1000);
  }

  /**
   * The server could not take the last message (UNAVAILABLE: its database away, say): what it
   * carried goes again, as full state, after the delay it asked for (retry_info; 5 s without
   * one), spread by up to a fifth so that a fleet told the same thing does not come back at once.
   */
  private retryLater(details: NonNullable<ServerToAgent['errorResponse']>['Details']): void {
    const asked = details.case === 'retryInfo' ? Number(details.value.retryAfterNanoseconds / 1_000_000n) : 0;
    const delay = (asked > 0 ? asked : 5_000) * (1 + Math.random() / 5);
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => {
      if (this.state.stopped) return;
      this.pending.full = true;
      this.flush();
    }, delay);
  }

  private clearTimer(): void {
    if (this.timer) clearTimeout(this.timer); // clears intervals too
    this.timer = undefined;
  }

  // -------------------------------------------------------------------------------------
  // Messages

  private hasPending(): boolean {
    const p = this.pending;
    return p.full || p.remoteStatus || p.health || p.csr || p.disconnect;
  }

  /** Sends what is pending now (WebSocket), or at the next free request (HTTP). */
  private flush(): void {
    if (this.state.transport === 'ws') {
      if (this.ws?.readyState === WebSocket.OPEN) this.sendWebSocket(this.ws);
    } else if (!this.httpInFlight && this.state.connected && !this.state.stopped) void this.poll();
  }

  /** Builds the next AgentToServer from what is pending, and clears it. */
  private nextMessage(): AgentMessage {
    const p = this.pending;
    const message: AgentMessage = { instanceUid: this.uid, sequenceNum: this.sequence++ };
    if (p.full) {
      message.agentDescription = description(
        { 'service.name': this.options.serviceName ?? 'otelcol-sim', 'service.instance.id': this.id },
        { 'host.name': `sim-${this.id.slice(-12)}`, 'os.type': 'linux', ...this.options.attributes },
      );
      message.capabilities =
        this.options.followOffers === false
          ? SIMULATOR_CAPABILITIES & ~AgentCapability.ReportsConnectionSettingsStatus
          : SIMULATOR_CAPABILITIES;
      if (this.settingsStatus)
        message.connectionSettingsStatus = {
          lastConnectionSettingsHash: this.settingsStatus.hash,
          status: ConnectionSettingsStatuses.ConnectionSettingsStatuses_FAILED,
          errorMessage: this.settingsStatus.error,
        };
    }
    if (p.full || p.health) message.health = this.componentHealth();
    if ((p.full || p.remoteStatus) && this.remote) {
      message.remoteConfigStatus = {
        lastRemoteConfigHash: this.remote.hash,
        status: this.remote.status,
        errorMessage: this.remote.error,
      };
    }
    if ((p.full || p.remoteStatus) && this.effective)
      message.effectiveConfig = { configMap: { configMap: this.effective } };
    if (p.csr && this.csr) {
      message.connectionSettingsRequest = { opamp: { certificateRequest: { csr: Buffer.from(this.csr.csrPem) } } };
    }
    if (p.disconnect) message.agentDisconnect = {};
    this.pending = { ...NOTHING_PENDING };
    return message;
  }

  /** The agent's health as OpAMP ComponentHealth: unhealthy ones name their failing component. */
  private componentHealth(): NonNullable<AgentMessage['health']> {
    const { healthy, component, message } = this.state.health;
    const times = { startTimeUnixNano: this.startNanos, statusTimeUnixNano: this.healthSince };
    if (healthy) return { healthy: true, status: 'StatusOK', ...times };
    const name = component ?? 'receiver/otlp';
    const lastError = message ?? 'unhealthy';
    return {
      healthy: false,
      status: 'StatusRecoverableError',
      lastError: `${name}: ${lastError}`,
      ...times,
      componentHealthMap: {
        [name]: { healthy: false, status: 'StatusRecoverableError', lastError, ...times },
      },
    };
  }

  private onReply(reply: ServerToAgent): void {
    this.reconnectAttempt = 0;
    if (this.state.transport === 'ws' && !this.state.connected) {
      // Connected means admitted: the first reply of the session.
      this.state.connected = true;
      this.state.mtls = this.wsMtls;
      this.emit('connected');
    }
    this.emit('message', reply);
    if (!this.state.enrolled) {
      this.state.enrolled = true;
      this.emit('enrolled');
    }
    if (reply.agentIdentification?.newInstanceUid.length === 16) {
      this.uid = reply.agentIdentification.newInstanceUid;
    }
    if (reply.errorResponse) {
      this.fail(new Error(`server error response: ${reply.errorResponse.errorMessage}`));
      if (reply.errorResponse.type === ServerErrorResponseType.ServerErrorResponseType_Unavailable)
        this.retryLater(reply.errorResponse.Details);
    }
    const opamp = reply.connectionSettings?.opamp;
    const moving =
      opamp !== undefined &&
      (this.options.offersApplied === 'ca-only'
        ? this.applyOfferedCa(opamp)
        : this.tryOffer(reply.connectionSettings!.hash, opamp));
    if (opamp && !moving) {
      // Not while an offer is being tried: a repeat of it is no mTLS endpoint.
      if (opamp.destinationEndpoint && !this.candidate) this.offeredEndpoint = opamp.destinationEndpoint;
      const seconds = Number(opamp.heartbeatIntervalSeconds);
      if (
        seconds > 0 &&
        this.options.heartbeatSeconds === undefined &&
        this.heartbeatOverride === undefined &&
        seconds !== this.state.heartbeatSeconds
      ) {
        this.state.heartbeatSeconds = seconds;
        if (this.ws) this.restartHeartbeat();
      }
      if (opamp.certificate?.cert.length) void this.onCertificate(opamp.certificate);
    }
    if (hasBits(reply.flags, ServerToAgentFlag.ReportFullState)) this.pending.full = true;
    if (reply.remoteConfig)
      void this.onRemoteConfig(reply.remoteConfig.configHash, reply.remoteConfig.config?.configMap ?? {});
    if (this.options.csr !== false) {
      // A CSR not yet answered goes again on each new connection (once per connection).
      if (this.csr) {
        if (!this.csrSentOnConnection) this.sendCsr();
      } else if (!this.state.certificate) void this.requestCertificate();
      else this.maybeRenew();
    }
    if (this.pending.full || this.pending.csr) this.flush();
    if (reply.connectionSettings && this.options.reconnectOnEveryOffer && this.ws && !moving) {
      this.reconnectingForOffer = true;
      this.ws.close(1000, 'reconnecting with the offered settings');
    }
    this.settleFirst();
    this.changed();
  }

  // -------------------------------------------------------------------------------------
  // Offered connection settings (opamp-go: the agent verifies them by connecting)

  /**
   * Starts following an offer that changes where or how the agent connects: the current
   * connection is left and the next one uses the offered endpoint, headers and CA (fields the
   * offer leaves out stay as they were). True when it does.
   */
  private tryOffer(hash: Uint8Array, opamp: OpAMPConnectionSettings): boolean {
    if (this.options.followOffers === false || this.candidate || !opamp.destinationEndpoint) return false;
    if (opamp.destinationEndpoint === this.link.endpoint && !opamp.headers && !opamp.tls) return false;
    const offered = bearerOf(opamp.headers);
    this.candidate = {
      hash,
      link: {
        endpoint: opamp.destinationEndpoint,
        token: opamp.headers ? offered.token : this.link.token,
        headers: opamp.headers ? offered.headers : this.link.headers,
        ca: opamp.tls ? opamp.tls.caPemContents : this.link.ca,
      },
    };
    if (this.state.transport === 'ws') {
      this.reconnectingForOffer = true;
      this.ws?.close(1000, 'applying offered connection settings');
    } else this.pending.full = true; // the next request goes with the offered settings
    return true;
  }

  /**
   * `offersApplied: 'ca-only'`: an offered CA becomes the one the agent trusts the server by;
   * the endpoint and headers of the offer are ignored. True when it reconnects to apply it.
   */
  private applyOfferedCa(opamp: OpAMPConnectionSettings): boolean {
    const ca = opamp.tls?.caPemContents;
    if (!ca || ca === this.link.ca) return false;
    this.link = { ...this.link, ca };
    this.emit('ca-applied', ca);
    if (this.state.transport === 'ws' && this.ws) {
      this.reconnectingForOffer = true;
      this.ws.close(1000, 'applying the offered CA');
      return true;
    }
    return false; // HTTP: the next request trusts the new CA
  }

  /** The offered settings work: they are the agent's now, and the old client certificate is gone. */
  private keepOffer(attempt: Candidate): void {
    this.candidate = undefined;
    this.link = attempt.link;
    this.state.endpoint = attempt.link.endpoint;
    this.state.certificate = undefined;
    this.state.csrPending = false;
    this.csr = undefined;
    this.offeredEndpoint = undefined;
    this.settingsStatus = undefined;
    this.state.settingsFailed = undefined;
    this.emit('moved', attempt.link.endpoint);
  }

  /** The offered settings did not come up: back to the previous ones, reporting FAILED. */
  private abandonOffer(attempt: Candidate, error: string): void {
    this.candidate = undefined;
    this.settingsStatus = { hash: attempt.hash, error };
    this.state.settingsFailed = { hash: hex(attempt.hash), error };
    this.state.connected = false;
    this.pending.full = true;
    this.changed();
  }

  // -------------------------------------------------------------------------------------
  // Certificates

  private async requestCertificate(): Promise<void> {
    if (this.csrGenerating) return;
    this.csrGenerating = true;
    try {
      this.csr = await generateCsr(this.id);
    } finally {
      this.csrGenerating = false;
    }
    this.sendCsr();
  }

  private sendCsr(): void {
    if (this.state.stopped || !this.state.connected) return;
    this.csrSentOnConnection = true;
    this.state.csrPending = true;
    this.pending.csr = true;
    this.flush();
    this.changed();
  }

  /** At 2/3 (renewAtFraction) of the certificate's lifetime, a new CSR (new key) goes on the live connection. */
  private maybeRenew(): void {
    const certificate = this.state.certificate;
    if (!certificate || this.options.csr === false || this.csr || this.csrGenerating || !this.state.connected) return;
    const from = certificate.notBefore.getTime();
    const renewAt = from + (certificate.notAfter.getTime() - from) * this.renewAtFraction;
    if (Date.now() >= renewAt) void this.requestCertificate();
  }

  private async onCertificate(offer: TLSCertificate): Promise<void> {
    try {
      const cert = new x509.X509Certificate(text(offer.cert));
      let keyPem: string;
      if (offer.privateKey.length) keyPem = text(offer.privateKey);
      else {
        if (!this.csr) throw new Error('certificate offered without a CSR pending and without a private key');
        if (!Buffer.from(cert.publicKey.rawData).equals(this.csr.spki))
          throw new Error('offered certificate does not match the CSR key');
        keyPem = this.csr.keyPem;
      }
      const first = !this.state.certificate;
      this.state.certificate = {
        certPem: text(offer.cert),
        keyPem,
        caPem: text(offer.caCert),
        serial: cert.serialNumber,
        notBefore: cert.notBefore,
        notAfter: cert.notAfter,
      };
      this.csr = undefined;
      this.state.csrPending = false;
      this.emit('certificate', this.state.certificate);
      this.changed();
      // Renewal: the new certificate is used from the next connection on.
      if (first && !this.state.mtls) this.switchToMtls();
    } catch (error) {
      this.fail(error as Error);
    }
  }

  private switchToMtls(): void {
    if (!this.target().mtls) return; // no TLS endpoint known: keep the certificate, stay connected
    if (this.state.transport === 'ws') {
      this.switchingToMtls = true;
      this.ws?.close(1000, 'switching to mTLS');
    } else {
      this.pending.full = true; // a new connection: full state
      this.flush();
    }
  }

  // -------------------------------------------------------------------------------------
  // Remote configuration

  private async onRemoteConfig(hash: Uint8Array, map: Record<string, AgentConfigFile>): Promise<void> {
    if (!hash.length || (this.remote && Buffer.from(this.remote.hash).equals(hash))) return; // already handled
    this.setRemote(hash, RemoteConfigStatuses.RemoteConfigStatuses_APPLYING, '');
    const files = Object.fromEntries(
      Object.entries(map).map(([name, file]) => [name, { body: text(file.body), contentType: file.contentType }]),
    );
    let error: string | undefined;
    // A local name: `options.apply(this, ...)` reads to eslint as Function.prototype.apply.
    const { apply } = this.options;
    try {
      error = await apply?.(this, { hash: hex(hash), files });
    } catch (thrown) {
      error = thrown instanceof Error ? thrown.message : String(thrown);
    }
    if (error === undefined && this.options.failRate && Math.random() < this.options.failRate)
      error = 'simulated failure';
    if (!this.remote || !Buffer.from(this.remote.hash).equals(hash)) return; // a newer configuration arrived meanwhile
    if (error === undefined) {
      this.effective = map;
      this.state.configsApplied++;
      this.setRemote(hash, RemoteConfigStatuses.RemoteConfigStatuses_APPLIED, '');
      this.healthAfterApply(hex(hash));
    } else {
      this.state.configsFailed++;
      this.setRemote(hash, RemoteConfigStatuses.RemoteConfigStatuses_FAILED, error);
    }
  }

  /** `unhealthyAfterApply`: turn unhealthy after the configuration named (or by chance), healthy again after another. */
  private healthAfterApply(hash: string): void {
    const unhealthy = this.options.unhealthyAfterApply;
    if (!unhealthy) return;
    if ('hash' in unhealthy ? unhealthy.hash === hash : Math.random() < unhealthy.fraction)
      this.setHealth({ healthy: false, component: unhealthy.component, message: unhealthy.message });
    else if (!this.state.health.healthy) this.setHealth({ healthy: true });
  }

  private setRemote(hash: Uint8Array, status: RemoteConfigStatuses, error: string): void {
    this.remote = { hash, status, error };
    this.state.lastConfigHash = hex(hash);
    this.state.appliedStatus = STATUS_NAMES[status];
    this.state.appliedError = error || undefined;
    this.pending.remoteStatus = true;
    this.flush();
    this.emit('config', { hash: hex(hash), status: this.state.appliedStatus, error: this.state.appliedError });
    this.changed();
  }

  // -------------------------------------------------------------------------------------

  private refuse(refusal: Refusal): void {
    if (this.state.refused) return;
    this.state.refused = refusal;
    this.clearTimer();
    this.emit('refused', refusal);
    this.settleFirst();
    this.changed();
  }

  private fail(error: Error): void {
    this.state.errors++;
    this.state.lastError = error.message;
    if (this.listenerCount('failure')) this.emit('failure', error);
    this.changed();
  }

  private settleFirst(): void {
    this.firstSettled?.();
    this.firstSettled = undefined;
  }

  private changed(): void {
    this.emit('change', this.state);
  }
}

/** An offer's headers: the bearer token of `Authorization`, and the others as they are. */
function bearerOf(offered: Headers | undefined): { token?: string; headers: Record<string, string> } {
  const headers: Record<string, string> = {};
  let token: string | undefined;
  for (const { key, value } of offered?.headers ?? []) {
    const bearer = key.toLowerCase() === 'authorization' ? /^Bearer\s+(\S+)$/i.exec(value) : null;
    if (bearer) token = bearer[1];
    else headers[key] = value;
  }
  return { token, headers };
}

function withScheme(endpoint: string, transport: Transport): string {
  const tls = isTls(endpoint);
  const scheme = transport === 'ws' ? (tls ? 'wss' : 'ws') : tls ? 'https' : 'http';
  return endpoint.replace(/^[a-z]+:/i, `${scheme}:`);
}

export function describeState(state: AgentState): string {
  const { certificate, ...rest } = state;
  return JSON.stringify({
    ...rest,
    certificate: certificate ? { serial: certificate.serial, notAfter: certificate.notAfter } : undefined,
  });
}
