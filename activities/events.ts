import { heartbeat } from '@temporalio/activity';
import type { Knex } from 'knex';
import { pruneAgentHistory } from '../db/repos/agent-history';
import { pruneEvents } from '../db/repos/events';
import type { Settings } from '../platform/settings';

const DAY_MS = 86_400_000;

/** `pruneOutbox` and `pruneAgentHistory`: what the retention workflow keeps to its windows. */
export function createEventActivities(db: Knex, settings: Pick<Settings, 'agents'>) {
  return {
    /**
     * Deletes agents' history entries older than `Agents:HistoryRetentionDays` (read here, so
     * a changed setting applies at the next sweep), in batches; idempotent.
     */
    async pruneAgentHistory(): Promise<number> {
      const before = new Date(Date.now() - settings.agents.historyRetentionDays * DAY_MS);
      let total = 0;
      for (;;) {
        const deleted = await pruneAgentHistory(db, before);
        total += deleted;
        heartbeat(total);
        if (deleted === 0) return total;
      }
    },

    /** Deletes outbox events older than the retention window, in batches; idempotent. */
    async pruneOutbox(retentionDays: number): Promise<number> {
      const before = new Date(Date.now() - retentionDays * DAY_MS);
      let total = 0;
      for (;;) {
        const deleted = await pruneEvents(db, before);
        total += deleted;
        heartbeat(total);
        if (deleted === 0) return total;
      }
    },
  };
}
