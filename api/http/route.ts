import type { Knex } from 'knex';
import type { OpenAPIRegistry, ResponseConfig, RouteConfig } from '@asteasolutions/zod-to-openapi';
import type { Principal } from '../auth/principal';
import type { Permission } from '../auth/roles';
import { problems, type FieldError } from '../problems';
import type { AppContext } from './context';
import { invalidQueryFields } from './encoding';
import { queryRulesOf, queryRulesSchema, type QueryRule } from './query-rules';
import { endpointAllows, parseEndpoint } from './endpoints';
import { etagOf, IF_MATCH, ifMatchProblem, notModified } from './etag';
import { z } from './zod';

export type Method = 'get' | 'post' | 'put' | 'delete';
type Schema = z.ZodType;
type Out<S> = S extends z.ZodType ? z.output<S> : undefined;

export interface RouteInput<P, Q, B, R = undefined> {
  params: P;
  query: Q;
  body: B;
  principal: Principal;
  /** The route's transaction for writes; the pool for reads and for `transactional: false`. */
  db: Knex | Knex.Transaction;
  ctx: AppContext;
  /**
   * Run once the route's transaction has committed (writes only), before the answer is
   * sent: work that must not hold a database connection, such as a call to Temporal.
   */
  afterCommit: (callback: () => void | Promise<void>) => void;
  /** What `prepare` returned (a content checked before the transaction); undefined without one. */
  prepared: R;
}

export interface RouteResult {
  status?: number;
  body?: unknown;
  /** Row version of a concurrency-controlled object: sent as a strong ETag. */
  rowVersion?: number;
  /** Id of the object acted on, when the path does not carry it (creation). */
  resourceId?: string;
  headers?: Record<string, string>;
}

export interface RouteDef<
  P extends Schema | undefined = Schema | undefined,
  Q extends Schema | undefined = Schema | undefined,
  B extends Schema | undefined = Schema | undefined,
  R = unknown,
> {
  method: Method;
  /** OpenAPI spelling: `/api/pats/{id}`. */
  path: string;
  summary: string;
  tag: string;
  /** `public`: no token. A `peer` PAT has only `federate`, so it reaches nothing else. */
  permission: Permission | 'public';
  params?: P;
  query?: Q;
  /** Rules between query parameters (query-rules.ts); paging's `offset` xor `cursor` is added by itself. */
  queryRules?: QueryRule[];
  body?: B;
  response: {
    status: number;
    description: string;
    schema?: Schema;
    contentType?: string;
    /** Other success statuses the route answers with the same body (a repeat that replaces: 200 beside 201). */
    alternatives?: Array<{ status: number; description: string }>;
  };
  /** Resource type recorded in the audit trail; its id is `params.id` or the result's. */
  resource?: string;
  /**
   * The body is opaque bytes that the handler reads itself, if at all (the Git webhook):
   * never parsed as JSON, so any content type and coding is accepted.
   */
  opaqueBody?: boolean;
  /**
   * Concurrency-controlled: GET returns an ETag, writes accept If-Match. `'live'`: the body
   * also carries fields that move without the row version (a rollout's progress, a peer's
   * health, a group's member count), so the ETag adds a digest of the body (`etagOf`).
   */
  etag?: boolean | 'live';
  /**
   * Writes run in one transaction with their audit row (the default). `false`: the handler
   * gets the pool and commits its own writes, and the audit row is written once it answers;
   * for a route that waits on Temporal or evaluates policies, which must not hold a
   * connection of the pool meanwhile.
   */
  transactional?: boolean;
  /**
   * Checks of the input that take time but no transaction (parsing a 1 MiB document), run
   * before the route's transaction opens, so a slow check never holds a connection of the
   * pool; `db` is the pool. Throws a problem to refuse. What it returns is the handler's
   * `prepared` (so what was checked is what is written).
   */
  prepare?(input: Omit<RouteInput<Out<P>, Out<Q>, Out<B>>, 'afterCommit' | 'prepared'>): Promise<R>;
  handler(input: RouteInput<Out<P>, Out<Q>, Out<B>, R>): Promise<RouteResult>;
}

/** Identity function that keeps the handler's input types tied to the schemas. */
export function route<
  P extends Schema | undefined,
  Q extends Schema | undefined,
  B extends Schema | undefined,
  R = undefined,
>(def: RouteDef<P, Q, B, R>): RouteDef {
  return def;
}

export interface RouteServices {
  db: Knex;
  /**
   * Reads a JSON body into `ctx.request.body`; runs after authentication. Undefined when
   * the request has no body to read (most do not: nothing to wait for).
   */
  readBody: (ctx: AppContext) => Promise<void> | undefined;
  authenticate(ctx: AppContext): Promise<Principal>;
  recordAudit(trx: Knex.Transaction, ctx: AppContext, status: number): Promise<void>;
}

function issuesOf(where: string, error: z.ZodError): FieldError[] {
  return error.issues.map((issue) => ({
    path: [where, ...issue.path.map(String)].join('.'),
    message: issue.message,
  }));
}

function parse<S extends Schema | undefined>(schema: S, value: unknown, where: string, errors: FieldError[]): Out<S> {
  if (!schema) return undefined as Out<S>;
  const result = schema.safeParse(value);
  if (result.success) return result.data as Out<S>;
  errors.push(...issuesOf(where, result.error));
  return undefined as Out<S>;
}

function authorize(def: RouteDef, principal: Principal, ctx: AppContext): void {
  if (def.permission !== 'public' && !principal.permissions.has(def.permission)) {
    throw problems.forbidden(`Role ${principal.roles.join(', ')} may not ${def.method.toUpperCase()} ${def.path}.`);
  }
  if (principal.allowedEndpoints) {
    const allowed = principal.allowedEndpoints.some((entry) => {
      const endpoint = parseEndpoint(entry);
      return endpoint !== undefined && endpointAllows(endpoint, ctx.method, ctx.path);
    });
    if (!allowed) throw problems.endpointNotAllowed(ctx.method, ctx.path);
  }
}

/** Must the call send a body? Not when the schema takes an absent one (the document says the same). */
function bodyRequired(def: RouteDef): boolean {
  return def.body !== undefined && !def.body.safeParse(undefined).success;
}

/** Validates path, query and body against the route's schemas; every failure in one 400. */
function validateInput(def: RouteDef, ctx: AppContext) {
  const errors: FieldError[] = ctx.querystring ? invalidQueryFields(ctx.querystring) : [];
  if (errors.length > 0) throw problems.validation(errors);
  // Even where the handler needs no comparison (a repeated publish): a malformed header is a bug worth a 400.
  const badIfMatch = takesIfMatch(def) ? ifMatchProblem(ctx.get('if-match')) : undefined;
  if (badIfMatch) throw badIfMatch;
  const params = parse(def.params, ctx.params, 'path', errors);
  const query = parse(def.query, ctx.query, 'query', errors);
  if (query) {
    for (const rule of queryRulesOf(def.query, def.queryRules)) {
      const broken = rule.check(query as Record<string, unknown>);
      if (broken) errors.push(broken);
    }
  }
  const rawBody = (ctx.request as { body?: unknown }).body;
  const bodyMissing = rawBody === undefined && bodyRequired(def);
  if (bodyMissing) errors.push({ path: 'body', message: 'a JSON body is required' });
  const body = bodyMissing ? undefined : parse(def.body, rawBody, 'body', errors);
  if (errors.length > 0) throw problems.validation(errors);
  return { params, query, body };
}

/** Status, headers, ETag (and 304 for a matching If-None-Match), body. */
function respond(def: RouteDef, ctx: AppContext, result: RouteResult) {
  for (const [name, value] of Object.entries(result.headers ?? {})) ctx.set(name, value);
  if (result.rowVersion !== undefined) {
    const etag = etagOf(result.rowVersion, def.etag === 'live' ? result.body : undefined);
    ctx.set('ETag', etag);
    if (def.method === 'get' && notModified(ctx, etag)) {
      ctx.status = 304;
      return;
    }
  }
  ctx.status = result.status ?? def.response.status;
  if (result.body !== undefined) {
    if (def.response.contentType && !ctx.response.get('Content-Type')) ctx.type = def.response.contentType;
    ctx.body = result.body;
  }
}

/**
 * The Koa middleware of one route: authenticate, authorize, read the body, validate, run,
 * respond. One function, not a chain of middlewares: every request pays for each frame.
 */
export function routeMiddleware(def: RouteDef, services: RouteServices) {
  async function handle(ctx: AppContext) {
    const input = validateInput(def, ctx);
    const resource = ctx.state.resource;
    const pathId = (input.params as { id?: unknown } | undefined)?.id;
    if (resource && typeof pathId === 'string') resource.id = pathId;
    const noteResource = (result: RouteResult) => {
      if (resource && result.resourceId) resource.id = result.resourceId;
    };

    const committed: Array<() => void | Promise<void>> = [];
    const afterCommit = (callback: () => void | Promise<void>) => committed.push(callback);
    let prepared: unknown;
    // Each member named: spreading `input` here cost ~7 µs a call in CPU profiles.
    const run = (db: Knex | Knex.Transaction) =>
      def.handler({
        params: input.params,
        query: input.query,
        body: input.body,
        principal: ctx.state.principal!,
        db,
        ctx,
        afterCommit,
        prepared,
      });

    if (def.prepare) {
      const principal = ctx.state.principal!;
      prepared = await def.prepare({
        params: input.params,
        query: input.query,
        body: input.body,
        principal,
        db: services.db,
        ctx,
      });
    }
    let result: RouteResult;
    if (def.method === 'get') {
      result = await run(services.db);
      noteResource(result);
    } else if (def.transactional === false) {
      result = await run(services.db);
      noteResource(result);
      await services.db.transaction((trx) => services.recordAudit(trx, ctx, result.status ?? def.response.status));
      ctx.state.audited = true;
    } else {
      // A write, its events and its audit row commit together or not at all.
      result = await services.db.transaction(async (trx) => {
        const result = await run(trx);
        noteResource(result);
        await services.recordAudit(trx, ctx, result.status ?? def.response.status);
        return result;
      });
      ctx.state.audited = true;
      for (const callback of committed) await callback();
    }
    respond(def, ctx, result);
  }

  return async function serveRoute(ctx: AppContext) {
    ctx.state.route = def.path;
    if (def.resource) ctx.state.resource = { type: def.resource };
    if (def.permission !== 'public') {
      ctx.state.principal = await services.authenticate(ctx);
      authorize(def, ctx.state.principal, ctx);
    }
    // An opaque body is the handler's to read, if at all (the Git webhook).
    const reading = def.opaqueBody ? undefined : services.readBody(ctx);
    if (reading) await reading;
    await handle(ctx);
  };
}

const problemRef = { $ref: '#/components/schemas/Problem' };
const problemResponse = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: problemRef } },
});

const ETAG_DESCRIPTIONS: Record<string, string> = {
  true: 'Strong ETag of the object: its row version.',
  live:
    'Strong ETag of the object: its row version, then `.` and a digest of the body, which has fields that move ' +
    'without the row version. `If-Match` compares the row version part.',
};

/** Writes on a concurrency-controlled object; a creation (POST to a collection) has no current ETag to match. */
const takesIfMatch = (def: RouteDef) =>
  Boolean(def.etag) && def.method !== 'get' && !(def.method === 'post' && !def.path.includes('{'));

/** Registers a route in the OpenAPI document from the schemas that validate it. */
export function registerOpenApi(registry: OpenAPIRegistry, def: RouteDef): void {
  const success = (description: string): ResponseConfig => ({
    description,
    ...(def.etag
      ? { headers: { ETag: { schema: { type: 'string' }, description: ETAG_DESCRIPTIONS[`${def.etag}`] } } }
      : {}),
    ...(def.response.schema
      ? { content: { [def.response.contentType ?? 'application/json']: { schema: def.response.schema } } }
      : {}),
  });
  const responses: RouteConfig['responses'] = {
    [def.response.status]: success(def.response.description),
    default: problemResponse('An RFC 9457 problem; `type` names the error (see /errors).'),
  };
  for (const { status, description } of def.response.alternatives ?? []) responses[status] = success(description);
  if (def.params || def.query || def.body) responses[400] = problemResponse('Validation failed or malformed JSON.');
  if (def.permission !== 'public') {
    responses[401] = problemResponse('Missing, invalid or expired token.');
    responses[403] = problemResponse('The role or the PAT’s endpoint list does not allow this call.');
  }
  if (def.path.includes('{')) responses[404] = problemResponse('No such object in your tenant.');
  if (takesIfMatch(def)) responses[412] = problemResponse('If-Match does not match the current ETag.');
  if (def.etag && def.method === 'get') responses[304] = { description: 'If-None-Match matches the current ETag.' };
  const headers =
    def.etag && def.method === 'get'
      ? z.object({ 'if-none-match': z.string().optional() })
      : takesIfMatch(def)
        ? z.object({
            'if-match': z.string().regex(IF_MATCH).optional().openapi({
              description: 'The ETag of the GET this change is based on (or `*`); a mismatch is 412.',
            }),
          })
        : undefined;
  registry.registerPath({
    method: def.method,
    path: def.path,
    summary: def.summary,
    tags: [def.tag],
    security: def.permission === 'public' ? [] : [{ bearer: [] }],
    description: def.permission === 'public' ? 'No authentication.' : `Requires permission \`${def.permission}\`.`,
    request: {
      params: def.params as never,
      query: def.query as never,
      headers: headers as never,
      body: def.body
        ? { required: bodyRequired(def), content: { 'application/json': { schema: def.body } } }
        : def.opaqueBody
          ? { required: false, content: { '*/*': { schema: z.unknown().openapi({ description: 'Not read.' }) } } }
          : undefined,
    },
    responses,
    ...queryStatement(def),
  });
}

/** The route's rules between query parameters, for the document (x-query-schema). */
function queryStatement(def: RouteDef): Record<string, unknown> {
  const schema = queryRulesSchema(queryRulesOf(def.query, def.queryRules));
  return schema ? { 'x-query-schema': schema } : {};
}
