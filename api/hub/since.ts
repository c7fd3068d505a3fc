import type { Knex } from 'knex';
import { findEventPosition } from '../../db/repos/events';

export type SincePosition =
  { ok: true; seq: number } | { ok: false; code: 'since-unknown' | 'since-expired'; message: string };

/**
 * Where a replay starts: after the client's last event. An id this tenant never had, or one
 * already pruned, cannot say what was missed, and neither can one older than the replay
 * window: the client must read the current state again (the REST API) and subscribe anew.
 */
export async function resolveSince(
  db: Knex,
  tenantId: string,
  since: string,
  retentionHours: number,
): Promise<SincePosition> {
  const position = await findEventPosition(db, tenantId, since);
  if (!position) {
    return {
      ok: false,
      code: 'since-unknown',
      message: `event ${since} is not known (never seen, or older than the ${retentionHours} h replay window): read the current state and subscribe without since`,
    };
  }
  if (position.time.getTime() < Date.now() - retentionHours * 3_600_000) {
    return {
      ok: false,
      code: 'since-expired',
      message: `event ${since} is older than the ${retentionHours} h replay window: read the current state and subscribe without since`,
    };
  }
  return { ok: true, seq: position.seq };
}
