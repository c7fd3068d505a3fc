import type { Knex } from 'knex';
import { pruneFleetMinutes, recordFleetMinute } from '../db/repos/fleet';

const DAY_MS = 86_400_000;

/** `countFleet`: the census workflow's one activity. */
export function createFleetCensusActivities(db: Knex) {
  return {
    /** Counts every tenant's agents into this minute's row, and deletes counts older than `keepDays`. */
    async countFleet(keepDays: number): Promise<{ tenants: number; pruned: number }> {
      const tenants = await recordFleetMinute(db);
      const pruned = await pruneFleetMinutes(db, new Date(Date.now() - keepDays * DAY_MS));
      return { tenants, pruned };
    },
  };
}
