import type { Knex } from 'knex';
import type { Settings } from '../settings';

/** What resource route modules get from createApp. */
export interface ResourceRouteOptions {
  settings: Readonly<Settings>;
  db: Knex;
  /** `Http:PublicBaseUrl`, for `Link` headers. */
  baseUrl: string;
}
