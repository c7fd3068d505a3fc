import type { Client } from 'pg';

/**
 * Lets a dedicated connection go (it failed, or its owner is done with it): its listeners
 * dropped, anything it still says ignored (an 'error' with no listener would end the
 * process), and ended, whether or not the server is still there.
 */
export function letGo(client: Client): Promise<void> {
  client.removeAllListeners();
  client.on('error', () => {});
  return client.end().catch(() => {});
}
