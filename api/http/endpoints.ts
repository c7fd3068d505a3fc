/**
 * Allowed-endpoint entries of a PAT: `"POST /api/rollouts/{id}/start"`, where a `{name}`
 * segment matches any one segment. Route templates use the same spelling.
 */
export const ENDPOINT_ENTRY = /^(GET|POST|PUT|PATCH|DELETE) (\/api(?:\/[^/\s?#]+)+|\/hubs\/live-updates)$/;

/** The live-updates hub is no REST route, but a PAT limited to endpoints must name it to use it. */
export const HUB_ENDPOINT = 'GET /hubs/live-updates';

export interface Endpoint {
  method: string;
  segments: string[];
}

const isParam = (segment: string) => /^\{[^{}/]+\}$/.test(segment);

export function parseEndpoint(entry: string): Endpoint | undefined {
  const match = ENDPOINT_ENTRY.exec(entry);
  if (!match) return undefined;
  return { method: match[1]!, segments: match[2]!.split('/').slice(1) };
}

/** Does a request (method and raw path) fall under an allowed entry? */
export function endpointAllows(entry: Endpoint, method: string, path: string): boolean {
  const requestMethod = method === 'HEAD' ? 'GET' : method;
  const segments = path.split('/').slice(1);
  if (entry.method !== requestMethod || segments.length !== entry.segments.length) return false;
  return entry.segments.every((segment, i) => (isParam(segment) ? segments[i] !== '' : segment === segments[i]));
}

/** Could an entry ever match a route? Either side's `{param}` matches anything. */
export function endpointOverlapsRoute(entry: Endpoint, method: string, template: string): boolean {
  const route = template.split('/').slice(1);
  if (entry.method !== method.toUpperCase() || route.length !== entry.segments.length) return false;
  return entry.segments.every((segment, i) => isParam(segment) || isParam(route[i]!) || segment === route[i]);
}
