import {
  ConflictingFieldError,
  ContentTooLargeError,
  DomainError,
  ForbiddenError,
  InvalidContentError,
  InvalidFieldError,
  InvalidFieldsError,
  InvalidTransitionError,
  ManagedByGitError,
  NotFoundError,
  PolicyDeniedError,
  StaleVersionError,
} from '../domain/errors';
import { NoWorker, TemporalDown, TemporalLost, WorkerGone } from '../platform/temporal';

/**
 * RFC 9457 problem details. Code throws a `Problem` made by one of the factories below;
 * one middleware (middleware/problems.ts) renders it. The catalogue is also what
 * `GET /errors/<slug>` serves, so every slug a client can see is described there.
 */

export interface ProblemType {
  status: number;
  title: string;
  description: string;
}

export const catalogue = {
  'validation-failed': {
    status: 400,
    title: 'Request validation failed',
    description:
      'A parameter, query value or body member is missing or invalid. `errors` lists each as `{ path, message }`.',
  },
  'malformed-json': {
    status: 400,
    title: 'Malformed JSON body',
    description: 'The request body is not valid JSON.',
  },
  unauthorized: {
    status: 401,
    title: 'Authentication required',
    description:
      'The request carries no bearer token, or the token is invalid, expired, revoked or issued for someone else.',
  },
  forbidden: {
    status: 403,
    title: 'Forbidden',
    description: "The caller's role does not allow this operation.",
  },
  'endpoint-not-allowed': {
    status: 403,
    title: 'Endpoint not allowed for this token',
    description: "The personal access token's list of allowed endpoints does not include this method and path.",
  },
  'https-required': {
    status: 403,
    title: 'HTTPS required',
    description: 'This endpoint refuses plain HTTP in production.',
  },
  'not-found': {
    status: 404,
    title: 'Not found',
    description: 'No such route, or no such object in your tenant.',
  },
  'method-not-allowed': {
    status: 405,
    title: 'Method not allowed',
    description: 'The route exists but not with this method; `Allow` lists the methods it has.',
  },
  'not-acceptable': {
    status: 406,
    title: 'Not acceptable',
    description: 'The response can only be JSON.',
  },
  conflict: {
    status: 409,
    title: 'Conflict',
    description: 'The request conflicts with the current state of an object, for example a duplicate name.',
  },
  'invalid-state-transition': {
    status: 409,
    title: 'Invalid state transition',
    description: "The operation is not allowed in the object's current state.",
  },
  'managed-by-git': {
    status: 409,
    title: 'Managed by Git',
    description: 'The configuration is synchronised from a Git source and cannot be edited through the API.',
  },
  'precondition-failed': {
    status: 412,
    title: 'Precondition failed',
    description: '`If-Match` does not match the current ETag: someone else changed the object. GET it again and retry.',
  },
  'payload-too-large': {
    status: 413,
    title: 'Payload too large',
    description: 'The request body is larger than the service accepts.',
  },
  'unsupported-media-type': {
    status: 415,
    title: 'Unsupported media type',
    description:
      'Request bodies must be `application/json`, sent without a content coding (`Content-Encoding` absent or `identity`).',
  },
  'headers-too-large': {
    status: 431,
    title: 'Request header fields too large',
    description:
      'The request line and headers together are larger than the service reads (16 KiB): a URL that long is usually a query built by mistake; send less, or a body.',
  },
  'bad-request': {
    status: 400,
    title: 'Bad request',
    description: 'The request is not well-formed HTTP.',
  },
  'policy-denied': {
    status: 422,
    title: 'Policy denied the push',
    description:
      'An approved, enabled policy returned false for an agent. `policyId`, `agentId` and `violations` say which (at most 1,000 listed; `violationCount` then gives them all).',
  },
  'rate-limited': {
    status: 429,
    title: 'Too many requests',
    description: 'Slow down; `Retry-After` says when to try again.',
  },
  internal: {
    status: 500,
    title: 'Internal error',
    description: 'The service failed unexpectedly. Quote `requestId` when reporting it.',
  },
  unavailable: {
    status: 503,
    title: 'Service unavailable',
    description:
      'A dependency (database or Temporal) is unreachable, every parsing thread is busy, or the service is shutting down. Retry later (`Retry-After`, when sent).',
  },
} satisfies Record<string, ProblemType>;

export type ProblemSlug = keyof typeof catalogue;

export interface FieldError {
  path: string;
  message: string;
}

export class Problem extends Error {
  readonly status: number;
  readonly title: string;

  constructor(
    readonly slug: ProblemSlug,
    readonly detail: string,
    readonly extensions: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
    this.name = 'Problem';
    this.status = catalogue[slug].status;
    this.title = catalogue[slug].title;
  }
}

/** The problem a domain refusal is rendered as. */
export function problemOf(error: DomainError): Problem {
  if (error instanceof NotFoundError) return new Problem('not-found', error.message);
  if (error instanceof PolicyDeniedError) return new Problem('policy-denied', error.message, { ...error.facts });
  if (error instanceof ManagedByGitError) return new Problem('managed-by-git', error.message);
  if (error instanceof InvalidTransitionError) return new Problem('invalid-state-transition', error.message);
  if (error instanceof StaleVersionError) return new Problem('precondition-failed', error.message);
  if (error instanceof ForbiddenError) return problems.forbidden(error.message);
  if (error instanceof InvalidFieldError)
    return problems.validation([{ path: `body.${error.field}`, message: error.message }]);
  if (error instanceof InvalidFieldsError)
    return problems.validation(error.fields.map(({ field, message }) => ({ path: `body.${field}`, message })));
  if (error instanceof ConflictingFieldError) return problems.conflictOn(`body.${error.field}`, error.message);
  if (error instanceof ContentTooLargeError)
    return new Problem('payload-too-large', error.message, { limit: error.limit, size: error.size });
  return new Problem('conflict', error.message);
}

/**
 * For `.catch(...)` on checkVersionContent: a content over the limit is 413 with the limit
 * and its size, one that does not parse is 400 on the body member at `path`.
 */
export function contentProblemAt(path: string) {
  return (error: unknown): never => {
    if (error instanceof ContentTooLargeError) {
      throw new Problem('payload-too-large', `${path} is ${error.message}.`, { limit: error.limit, size: error.size });
    }
    if (error instanceof InvalidContentError) throw problems.validation([{ path, message: error.message }]);
    throw error;
  };
}

export const problems = {
  validation: (errors: FieldError[]) =>
    new Problem('validation-failed', errors.map((e) => (e.path ? `${e.path}: ${e.message}` : e.message)).join('; '), {
      errors,
    }),
  malformedJson: (reason: string) => new Problem('malformed-json', `The body is not valid JSON: ${reason}`),
  unauthorized: (detail = 'A valid bearer token is required.') =>
    new Problem('unauthorized', detail, {}, { 'WWW-Authenticate': 'Bearer' }),
  forbidden: (detail: string) => new Problem('forbidden', detail),
  endpointNotAllowed: (method: string, path: string) =>
    new Problem('endpoint-not-allowed', `This token is not allowed to call ${method} ${path}.`),
  notFound: (kind: string, id: string) => new Problem('not-found', `No ${kind} with id '${id}'.`),
  noRoute: (method: string, path: string) => new Problem('not-found', `No route for ${method} ${path}.`),
  methodNotAllowed: (method: string, allowed: string[]) =>
    new Problem(
      'method-not-allowed',
      `${method} is not allowed here; use ${allowed.join(', ')}.`,
      {},
      { Allow: allowed.join(', ') },
    ),
  conflict: (detail: string) => new Problem('conflict', detail),
  /** A field the stored state makes wrong (a credential that must be sent again): 409, naming it as a 400 would. */
  conflictOn: (path: string, message: string) =>
    new Problem('conflict', `${path}: ${message}`, { errors: [{ path, message }] }),
  invalidTransition: (detail: string) => new Problem('invalid-state-transition', detail),
  preconditionFailed: (kind: string, id: string) =>
    new Problem('precondition-failed', `If-Match does not match the current ETag of ${kind} '${id}'.`),
  payloadTooLarge: (limit: number) => new Problem('payload-too-large', `The body exceeds the limit of ${limit} bytes.`),
  unsupportedMediaType: (type: string | undefined) =>
    new Problem(
      'unsupported-media-type',
      `Content-Type ${type ? `'${type}'` : '(none)'} is not accepted; send application/json.`,
    ),
  unsupportedEncoding: (encoding: string) =>
    new Problem(
      'unsupported-media-type',
      `Content-Encoding '${encoding}' is not accepted; send the body uncompressed.`,
      {},
      { 'Accept-Encoding': 'identity' },
    ),
  /** The Temporal server refused the connection (platform/temporal.ts, TemporalDown): nothing was sent. */
  temporalDown: (error: unknown) =>
    new Problem(
      'unavailable',
      `Temporal does not answer (${(error as Error).message}); nothing was sent. Retry shortly.`,
      {},
      { 'Retry-After': '5' },
    ),
  /** Temporal stopped answering once the operation was sent (platform/temporal.ts, TemporalLost): it may still be applied. */
  temporalLost: (error: unknown) =>
    new Problem(
      'unavailable',
      `Temporal stopped answering while the operation was on its way (${(error as Error).message}); it may still be applied when Temporal is back. Retry shortly: if it was applied, the retry answers 409 with the state it is in.`,
      {},
      { 'Retry-After': '5' },
    ),
  /** No worker polls the task queue (platform/temporal.ts, NoWorker): the workflow could not take an operation; nothing was sent. */
  noWorker: (error: unknown, workflow: string) =>
    new Problem(
      'unavailable',
      `${(error as Error).message}, so ${workflow} cannot take the operation; nothing was sent. Start a worker or read its logs, then retry.`,
      {},
      { 'Retry-After': '30' },
    ),
  /** The last worker stopped once the operation was sent (platform/temporal.ts, WorkerGone): it may still be applied. */
  workerGone: (error: unknown) =>
    new Problem(
      'unavailable',
      `${(error as Error).message} while the operation was on its way; it may still be applied when a worker is back. Retry once one is: if it was applied, the retry answers 409 with the state it is in.`,
      {},
      { 'Retry-After': '30' },
    ),
  /** What `sendToTemporal` (platform/temporal.ts) found wrong with Temporal, as its problem; undefined for anything else. */
  ofTemporal: (error: unknown, workflow: string): Problem | undefined => {
    if (error instanceof TemporalDown) return problems.temporalDown(error);
    if (error instanceof NoWorker) return problems.noWorker(error, workflow);
    if (error instanceof TemporalLost) return problems.temporalLost(error);
    if (error instanceof WorkerGone) return problems.workerGone(error);
    return undefined;
  },
  /** Every 503 says when to try again. */
  unavailable: (detail: string, retryAfterSeconds = 5) =>
    new Problem('unavailable', detail, {}, { 'Retry-After': String(retryAfterSeconds) }),
  internal: () => new Problem('internal', 'An unexpected error occurred.'),
};
