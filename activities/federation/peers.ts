import type { ActivityDeps } from '..';
import { peersAfter, type PeerRow } from '../../db/repos/federation-peers';
import { openPeerEndpoint, pingColumns, recordPingAndAnnounce, unopenable } from '../../domain/federation/peer-ping';
import { pingPeer } from '../../platform/peer-client';
import { encryptionKey } from '../../platform/secrets';
import { whileHeartbeating } from '../keep-alive';

/** Peers read from the database at a time (every tenant's, by id). */
const PAGE = 200;
/** Pings in flight at once: a page of dead peers costs PAGE / CONCURRENCY deadlines, not PAGE. */
const CONCURRENCY = 16;

export interface PeerSweep {
  pinged: number;
  healthy: number;
  /** Peers whose health flipped (each with its `federation.peer.health-changed` event). */
  changed: number;
  /** The interval the worker is configured with now: the workflow sleeps this long next. */
  intervalSeconds: number;
}

/** Runs `each` over `items`, at most `limit` at a time. */
async function inParallel<T>(items: T[], limit: number, each: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await each(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
}

/** Activities of peer health checks (docs/federation.md). */
export function createPeerActivities(deps: ActivityDeps) {
  const { db, settings } = deps;
  const calls = { timeoutMs: settings.federation.peerTimeoutSeconds * 1000, outbound: deps.outbound };

  /** Pings one peer and records what it found; a ping never fails the sweep. */
  async function checkPeer(peer: PeerRow, sweep: PeerSweep): Promise<void> {
    const endpoint = openPeerEndpoint(encryptionKey(settings), peer);
    const ping = endpoint ? pingColumns(await pingPeer(endpoint, calls)) : unopenable();
    const recorded = await db.transaction((trx) => recordPingAndAnnounce(trx, peer, ping));
    sweep.pinged++;
    if (ping.healthy) sweep.healthy++;
    if (recorded?.changed) sweep.changed++;
  }

  return {
    /**
     * Pings every peer of every tenant (a few at a time) and records each answer; emits
     * `federation.peer.health-changed` where health flipped. Idempotent: a retried sweep
     * pings again and records the newer answer.
     */
    async pingAllPeers(): Promise<PeerSweep> {
      const sweep: PeerSweep = {
        pinged: 0,
        healthy: 0,
        changed: 0,
        intervalSeconds: settings.federation.healthCheckSeconds,
      };
      await whileHeartbeating(async () => {
        for (let after: string | null = null; ;) {
          const peers = await peersAfter(db, after, PAGE);
          await inParallel(peers, CONCURRENCY, (peer) => checkPeer(peer, sweep));
          if (peers.length < PAGE) return;
          after = peers.at(-1)!.id;
        }
      });
      return sweep;
    },
  };
}
