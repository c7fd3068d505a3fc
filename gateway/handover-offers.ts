/**
 * Handovers, sender side (docs/federation.md, "What the agent sees"): an agent whose
 * `handover_agents` row is `offered` is offered the receiver's connection settings
 * (endpoint, CA, bootstrap token) instead of this installation's standing settings; once the
 * row is no longer offered (withdrawn), the standing settings are what it should have again,
 * with this installation's CA. The offered CA is a bundle of the receiver's and ours, so an
 * agent that applies only part of an offer still reaches this installation.
 *
 * Which agents are offered a receiver is kept here for every tenant (a handful: those of the
 * running handovers), read at start and after a lost LISTEN connection, and re-read for the
 * agents each AGENT_HANDOVER_CHANNEL notification names, so a message's reply knows without a
 * query. The offer itself (it holds the token) is read and opened only when it is sent.
 */
import { createHash } from 'node:crypto';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { findSealedOffer, lastWithdrawnHandover, offeredAgents, type OfferedAgent } from '../db/repos/handover-offers';
import { offeredCaBundle, openOffer, type HandoverOffer } from '../domain/federation/handover-offer';
import type { StandingSettings } from './status';

/** Settings an agent should have: the standing ones, or a handover's receiver (not opened yet). */
export interface WantedSettings extends StandingSettings {
  handoverId?: string;
}

/**
 * Settings ready to send: with a handover, its opened offer (its CA the bundle of the
 * receiver's and ours); after a withdrawn one, the standing settings with our CA again
 * (`caPem`: an agent that took the offer's CA trusts this listener by its own again).
 */
export interface SettingsOffer extends WantedSettings {
  handover?: HandoverOffer;
  caPem?: string;
}

/**
 * Identifies a handover's offer to the agent (it reports it back in
 * connection_settings_status): the handover and the heartbeat offered with it, never the token.
 */
export function handoverSettingsHash(handoverId: string, heartbeatSeconds: number): string {
  return createHash('sha256').update(`handover=${handoverId}\0heartbeat=${heartbeatSeconds}`).digest('hex');
}

/** Only a receiver the agent reaches over TLS: the token must not travel in clear, and the CA is for TLS. */
const isTlsEndpoint = (endpoint: string) => /^(wss|https):\/\//i.test(endpoint);

export class HandoverOffers {
  /** The handover whose receiver each agent is offered now. */
  private readonly offered = new Map<string, string>();
  /** Handovers whose offer could not be sent (logged once): their agents keep the standing settings. */
  private readonly unusable = new Set<string>();
  /** Reads of `offered` apply in the order they were asked for (a full load and notifications). */
  private updates: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Knex,
    private readonly logger: Logger,
    /** The key offers are sealed with; none: over plain TCP nothing is offered (the token would go in clear). */
    private readonly key: Buffer | undefined,
    /** The CA agents trust this listener by (the agents' CA). */
    private readonly ownCaPem: string | undefined,
  ) {}

  /** Every offer in force, afresh (at start, and after the LISTEN connection was lost). */
  load(): Promise<void> {
    return this.update(async () => {
      const rows = await offeredAgents(this.db);
      this.offered.clear();
      this.remember(rows);
    });
  }

  /** The offers of these agents changed: read them again. */
  refresh(agentIds: readonly string[]): Promise<void> {
    return this.update(async () => {
      const rows = await offeredAgents(this.db, agentIds);
      for (const id of agentIds) this.offered.delete(id);
      this.remember(rows);
    });
  }

  isOffered(agentId: string): boolean {
    return this.offered.has(agentId);
  }

  /** The settings the agent should have: its handover's receiver while one is offered, else the standing ones. */
  wanted(agentId: string, standing: StandingSettings | undefined): WantedSettings | undefined {
    const handoverId = this.key ? this.offered.get(agentId) : undefined;
    if (!handoverId || this.unusable.has(handoverId)) return standing;
    const heartbeatSeconds = standing?.heartbeatSeconds ?? 0;
    return { handoverId, heartbeatSeconds, hash: handoverSettingsHash(handoverId, heartbeatSeconds) };
  }

  /**
   * The settings to send, a handover's offer opened; undefined when it cannot be sent (logged
   * once). Standing settings due to an agent last offered a handover's receiver, since
   * withdrawn (`offered`: the hash it was last offered), carry our CA again.
   */
  async resolve(agentId: string, wanted: WantedSettings, offered: string | null): Promise<SettingsOffer | undefined> {
    const { handoverId } = wanted;
    if (!handoverId)
      return (await this.wasWithdrawn(agentId, wanted, offered)) ? { ...wanted, caPem: this.ownCaPem } : wanted;
    const sealed = await findSealedOffer(this.db, handoverId);
    // Withdrawn meanwhile, or not sealed yet: the notification that says so is on its way.
    if (!sealed) return undefined;
    let handover: HandoverOffer;
    try {
      handover = openOffer(this.key!, handoverId, sealed);
    } catch (error) {
      return this.giveUp(handoverId, `its offer does not open: ${(error as Error).message}`);
    }
    if (!isTlsEndpoint(handover.endpoint))
      return this.giveUp(handoverId, `the receiver's endpoint ${handover.endpoint} is not TLS (wss:// or https://)`);
    const caPem = this.ownCaPem ? offeredCaBundle(handover.caPem, this.ownCaPem) : handover.caPem;
    return { ...wanted, handover: { ...handover, caPem } };
  }

  /** Was the agent last offered the receiver of a handover that withdrew it? (A read only when settings are due.) */
  private async wasWithdrawn(agentId: string, wanted: WantedSettings, offered: string | null): Promise<boolean> {
    if (!this.key || !this.ownCaPem || offered === null || offered === wanted.hash) return false;
    const handoverId = await lastWithdrawnHandover(this.db, agentId);
    return handoverId !== undefined && offered === handoverSettingsHash(handoverId, wanted.heartbeatSeconds);
  }

  private giveUp(handoverId: string, why: string): undefined {
    this.unusable.add(handoverId);
    this.logger.error({ handoverId }, `handover offer not sent to its agents: ${why}`);
    return undefined;
  }

  private remember(rows: OfferedAgent[]): void {
    for (const row of rows) this.offered.set(row.agentId, row.handoverId);
  }

  private update(read: () => Promise<void>): Promise<void> {
    const next = this.updates.then(read);
    this.updates = next.catch(() => undefined);
    return next;
  }
}
