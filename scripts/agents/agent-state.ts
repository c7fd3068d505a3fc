/**
 * What a simulated agent is told and what it reports: its options, its state, the
 * configurations and certificates it holds (docs/agent-simulator.md).
 */
import type { SimulatedAgent } from './agent';
import type { SharedResources } from './shared-resources';

export type Transport = 'ws' | 'http';
export type AppliedStatus = 'APPLYING' | 'APPLIED' | 'FAILED';

/** A remote configuration as the apply hook sees it. */
export interface RemoteConfig {
  /** config_hash, hex. */
  hash: string;
  /** config_map: file name → UTF-8 body and content type. */
  files: Record<string, { body: string; contentType: string }>;
}

/** Returns undefined when the configuration applies, or the failure message. */
export type ApplyHook = (
  agent: SimulatedAgent,
  config: RemoteConfig,
) => string | undefined | Promise<string | undefined>;

export interface AgentCertificate {
  certPem: string;
  keyPem: string;
  /** ca_cert of the offer: the agents' CA (not used to verify the server). */
  caPem: string;
  serial: string;
  notBefore: Date;
  notAfter: Date;
}

export interface Refusal {
  /** WebSocket close code (1008), when refused after the upgrade. */
  code?: number;
  /** HTTP status (upgrade or poll), when refused by HTTP. */
  status?: number;
  reason: string;
}

export interface AgentState {
  id: string;
  transport: Transport;
  connected: boolean;
  /** Admitted by the server at least once. */
  enrolled: boolean;
  /** The current connection presents a client certificate. */
  mtls: boolean;
  certificate?: AgentCertificate;
  /** A CSR was sent and no certificate has answered it yet. */
  csrPending: boolean;
  heartbeatSeconds: number;
  lastConfigHash?: string;
  appliedStatus?: AppliedStatus;
  appliedError?: string;
  configsApplied: number;
  configsFailed: number;
  refused?: Refusal;
  lastClose?: { code: number; reason: string };
  lastHttpStatus?: number;
  connects: number;
  errors: number;
  lastError?: string;
  stopped: boolean;
  /** Where the agent connects: `endpoint` at first, an offer's destination once it followed one. */
  endpoint: string;
  /** What it reports as its health (ComponentHealth). */
  health: SimulatedHealth;
  /** The last offer of other connection settings it tried and could not use (reported FAILED). */
  settingsFailed?: { hash: string; error: string };
}

/** Which applied configurations make the agent unhealthy (`unhealthyAfterApply`). */
export type UnhealthyAfterApply = ({ hash: string } | { fraction: number }) & { component?: string; message?: string };

/** A component's health as the agent reports it (OpAMP ComponentHealth, by component name). */
export interface SimulatedHealth {
  healthy: boolean;
  /** The failing component's name and message, when unhealthy. */
  component?: string;
  message?: string;
}

export interface SimulatedAgentOptions {
  /** ws://, wss://, http:// or https:// … /v1/opamp. TLS schemes mean TLS. */
  endpoint: string;
  /** Default: from the endpoint's scheme; otherwise the scheme is converted (ws ↔ http). */
  transport?: Transport;
  /** Bootstrap token (svc-bt.…), sent until the agent has a certificate. */
  token?: string;
  /** Send the token as `?token=` instead of `Authorization: Bearer`. */
  tokenInUrl?: boolean;
  /** PEM of the CA that signed the server's certificate. */
  ca?: string | Buffer;
  /** Endpoint for mTLS when the enrolment endpoint is plain (default: the server's destination_endpoint, else `endpoint` when TLS). */
  mtlsEndpoint?: string;
  /** Ask for a client certificate once admitted (default true). */
  csr?: boolean;
  /**
   * Offer the TLS session of the last WebSocket connection to the same endpoint with the same
   * client certificate (default true): an abbreviated handshake, as a Go agent whose TLS
   * configuration has a session cache resumes.
   */
  resumeTls?: boolean;
  /** Fraction of the certificate's lifetime after which a new CSR is sent (default 2/3; 0 for tests). */
  renewAtFraction?: number;
  /** Overrides the server's heartbeat_interval_seconds. */
  heartbeatSeconds?: number;
  apply?: ApplyHook;
  /** Probability (0..1) that a configuration fails ("simulated failure"), after `apply`. */
  failRate?: number;
  /**
   * Apply cleanly, then turn unhealthy: after applying a configuration whose hash (hex) is
   * `hash`, or with probability `fraction`, the agent reports ComponentHealth unhealthy with
   * `component` (default `receiver/otlp`) failing with `message`.
   */
  unhealthyAfterApply?: UnhealthyAfterApply;
  instanceUid?: Uint8Array;
  serviceName?: string;
  /** Extra non-identifying attributes (host.name defaults to sim-<id prefix>). */
  attributes?: Record<string, string>;
  /** Reconnect backoff: min × 2^attempt up to max, jittered to 50–100 %. */
  reconnectMinMs?: number;
  reconnectMaxMs?: number;
  requestTimeoutMs?: number;
  /** Shared by a fleet; a lone agent makes its own. */
  shared?: SharedResources;
  /**
   * Behave like an agent that builds a fresh OpAMP client per connection and applies every
   * `connection_settings` offer by reconnecting (to verify the new settings): each connection
   * reports an empty remote config status, and each offer closes the WebSocket and opens a
   * new one at once. Default false.
   */
  reconnectOnEveryOffer?: boolean;
  /**
   * Follow an offer of other OpAMP connection settings (destination_endpoint, headers, TLS CA)
   * as opamp-go agents do: leave the current connection, connect with the offered settings,
   * and keep them once that connection is admitted, else go back to the previous ones and
   * report connection_settings_status FAILED. Default true.
   */
  followOffers?: boolean;
  /**
   * Apply only part of an offer, as opamp-go's example agent does: `ca-only` takes the offer's
   * `tls.ca_pem_contents` as the CA it trusts the server by (reconnecting to apply it) and
   * ignores `destination_endpoint` and `headers`, so it keeps connecting where it was, with
   * its client certificate. Default `all` (with followOffers: the whole offer).
   */
  offersApplied?: 'all' | 'ca-only';
}
