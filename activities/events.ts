import { heartbeat } from '@temporalio/activity';
import type { Knex } from 'knex';
import { pruneEvents } from '../db/repos/events';

const DAY_MS = 86_400_000;

export function createEventActivities(db: Knex) {
  return {
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
