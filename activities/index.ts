import type { Client } from '@temporalio/client';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Outbound } from '../platform/outbound';
import type { Settings } from '../platform/settings';
import { createEventActivities } from './events';
import { createHandoverActivities } from './federation/handover';
import { createPeerActivities } from './federation/peers';
import { createFederatedRolloutActivities } from './federation/rollouts';
import { createFleetCensusActivities } from './fleet-census';
import { createGitSyncActivities } from './git-sync';
import { failDomainErrorsForGood } from './keep-alive';
import { createRolloutActivities } from './rollouts';

export interface ActivityDeps {
  db: Knex;
  /**
   * Git:WorkDir for the working copies, the key that opens Git sources' and peers'
   * credentials, Federation:* for peer calls, and the task queue this worker serves.
   */
  settings: Pick<Settings, 'git' | 'encryptionKey' | 'isDevelopment' | 'federation' | 'temporal' | 'agents'>;
  /** For activities that start or operate other workflows (a federated rollout's local rollout). */
  temporal?: Client;
  /** Where activities log what an operator should see (e.g. a Git sync run that failed). */
  logger?: Logger;
  /** Where Git repositories and federation peers may be reached (Outbound:*). */
  outbound: Outbound;
}

/** All activities, built from their dependencies (the worker passes real ones). */
export function createActivities(deps: ActivityDeps) {
  return failDomainErrorsForGood({
    ...createEventActivities(deps.db, deps.settings),
    ...createRolloutActivities(deps.db),
    ...createGitSyncActivities(deps),
    ...createPeerActivities(deps),
    ...createHandoverActivities(deps),
    ...createFederatedRolloutActivities(deps),
    ...createFleetCensusActivities(deps.db),
  });
}

export type Activities = ReturnType<typeof createActivities>;
