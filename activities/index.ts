import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Settings } from '../platform/settings';
import { createEventActivities } from './events';
import { createGitSyncActivities } from './git-sync';
import { failDomainErrorsForGood } from './keep-alive';
import { createRolloutActivities } from './rollouts';

export interface ActivityDeps {
  db: Knex;
  /** Git:WorkDir for the working copies, and the key that opens Git sources' credentials. */
  settings: Pick<Settings, 'git' | 'encryptionKey' | 'isDevelopment'>;
  /** Where activities log what an operator should see (e.g. a Git sync run that failed). */
  logger?: Logger;
}

/** All activities, built from their dependencies (the worker passes real ones). */
export function createActivities(deps: ActivityDeps) {
  return failDomainErrorsForGood({
    ...createEventActivities(deps.db),
    ...createRolloutActivities(deps.db),
    ...createGitSyncActivities(deps),
  });
}

export type Activities = ReturnType<typeof createActivities>;
