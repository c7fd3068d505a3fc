import type { IncomingMessage } from 'node:http';

/** Where agents speak OpAMP, over either transport. */
export const OPAMP_PATH = '/v1/opamp';

/** The path of a request or an upgrade, without its query. */
export function pathOf(req: IncomingMessage): string {
  return new URL(req.url ?? '/', 'http://agent').pathname;
}
