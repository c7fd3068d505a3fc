import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { Settings } from '../../platform/settings';

/** What resource route modules get from createApp. */
export interface ResourceRouteOptions {
  settings: Readonly<Settings>;
  db: Knex;
  logger: Logger;
  /** `Http:PublicBaseUrl`, for `Link` headers. */
  baseUrl: string;
}
