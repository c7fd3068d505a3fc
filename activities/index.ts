import type { Knex } from 'knex';
import { createEventActivities } from './events';
import { failDomainErrorsForGood } from './keep-alive';
import { createRolloutActivities } from './rollouts';

export interface ActivityDeps {
  db: Knex;
}

/** All activities, built from their dependencies (the worker passes real ones). */
export function createActivities(deps: ActivityDeps) {
  return failDomainErrorsForGood({
    ...createEventActivities(deps.db),
    ...createRolloutActivities(deps.db),
  });
}

export type Activities = ReturnType<typeof createActivities>;
