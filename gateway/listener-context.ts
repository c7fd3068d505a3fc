/**
 * What the agent listener's parts (credentials, serving a message, the two transports, the
 * stop) share: its dependencies, this replica's sessions and trackers, and its shutdown state.
 * `createAgentListener` builds one per listener.
 */
import type { X509Certificate } from 'node:crypto';
import type { TLSSocket } from 'node:tls';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { AgentCa, AgentIdentity } from '../domain/certificates';
import type { AddressRanges } from '../platform/address-ranges';
import type { ApprovalMode } from './enrollment';
import type { FlapGuard } from './flapping';
import type { Lookups } from './lookups';
import type { ReportBatcher } from './report-batcher';
import type { AgentSessions } from './sessions';
import type { SessionStarts } from './session-starts';
import type { SequenceTracker, SessionClose } from './status';

export interface ListenerContext {
  db: Knex;
  /** The `opamp` component's logger. */
  logger: Logger;
  /** Verifies client certificates and signs agents' CSRs. */
  ca: AgentCa;
  /**
   * Agents reach the listener over TLS (client certificates, CSRs, handover offers), its own
   * or a proxy's; else plain TCP (Development).
   */
  tls: boolean;
  /**
   * Set when proxies end agents' TLS (Agents:Tls:TerminatedBy): the addresses the listener
   * takes connections from, and the agents' CA each forwarded certificate is checked against.
   */
  proxy?: { from: AddressRanges; ca: X509Certificate };
  /** Approval mode (TLS only): an agent without a credential is held for approval. */
  approval: ApprovalMode | undefined;
  heartbeatSeconds: number;
  certificateOptions: { ttlHours: number; minReissueSeconds: number };
  sequences: SequenceTracker;
  flaps: FlapGuard;
  reports: ReportBatcher;
  /** The reads of a new connection, batched with other connections'. */
  lookups: Lookups;
  /** WebSocket sessions' first messages, written in batches. */
  starts: SessionStarts;
  sessions: AgentSessions;
  /** Marks a closed WebSocket session's agent offline, in a batch with other closes. */
  closed: (close: SessionClose) => Promise<void>;
  /** Offline updates still running, so close() can wait for them. */
  pending: Set<Promise<unknown>>;
  /** Sessions that `close()` marks offline all at once: their own close leaves that alone. */
  closedByShutdown: Set<string>;
  /** Set by `close()`: an upgrade still being checked is refused, a message in flight writes no status. */
  stopping: boolean;
  /** Messages' transactional status writes under way: a stop marks its agents offline after them. */
  statusWrites: Set<Promise<unknown>>;
  /** The agent a TLS connection's client certificate names (checked once per connection). */
  certificateIdentity: WeakMap<TLSSocket, Promise<AgentIdentity | undefined>>;
}

/** Returns `write`, counted in `statusWrites` until it settles (so a stop can wait for it). */
export function writingStatus<T>(ctx: ListenerContext, write: Promise<T>): Promise<T> {
  const settled: Promise<unknown> = write.catch(() => undefined).finally(() => ctx.statusWrites.delete(settled));
  ctx.statusWrites.add(settled);
  return write;
}

/** Runs `work` in the background, logging its failure, counted in `pending` until it settles. */
export function track(ctx: ListenerContext, work: Promise<unknown>): void {
  const tracked = work
    .catch((error) => ctx.logger.error({ err: error }, 'opamp background update failed'))
    .finally(() => ctx.pending.delete(tracked));
  ctx.pending.add(tracked);
}
