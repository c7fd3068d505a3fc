import { heartbeat } from '@temporalio/activity';
import type { Knex } from 'knex';
import { pruneAgentHistory } from '../db/repos/agent-history';
import { pruneEvents } from '../db/repos/events';
import type { Settings } from '../platform/settings';

const DAY_MS = 86_400_000;

/** Runs `prune` (one batch, answering how many it deleted) until a batch deletes none; heartbeats the total. */
async function inBatches(prune: () => Promise<number>): Promise<number> {
  let total = 0;
  for (;;) {
    const deleted = await prune();
    total += deleted;
    heartbeat(total);
    if (deleted === 0) return total;
  }
}

/** `pruneOutbox` and `pruneAgentHistory`: what the retention workflow keeps to its windows. */
export function createEventActivities(db: Knex, settings: Pick<Settings, 'agents'>) {
  return {
    /**
     * Deletes agents' history entries older than `Agents:HistoryRetentionDays` (read here, so
     * a changed setting applies at the next sweep), in batches; idempotent.
     */
    async pruneAgentHistory(): Promise<number> {
      const before = new Date(Date.now() - settings.agents.historyRetentionDays * DAY_MS);
      return inBatches(() => pruneAgentHistory(db, before));
    },

    /** Deletes outbox events older than the retention window, in batches; idempotent. */
    async pruneOutbox(retentionDays: number): Promise<number> {
      const before = new Date(Date.now() - retentionDays * DAY_MS);
      return inBatches(() => pruneEvents(db, before));
    },
  };
}
