import type { Knex } from 'knex';
import {
  countActivePoolTokens,
  findBootstrapToken,
  listBootstrapTokensQuery,
  type BootstrapTokenRow,
} from '../../../db/repos/bootstrap-tokens';
import { findTokenPool, listTokenPoolsQuery, type TokenPoolRow } from '../../../db/repos/token-pools';
import {
  bootstrapTokenView,
  enrolmentGroup,
  issueBootstrapToken,
  revokeBootstrapToken,
} from '../../../domain/tokens/bootstrap-tokens';
import { createTokenPool, issueFromPool, tokenPoolView } from '../../../domain/tokens/pools';
import { pageOf, pageQuery, paginate, respondPage } from '../../http/pagination';
import { route, type RouteDef } from '../../http/route';
import { z } from '../../http/zod';
import { problems } from '../../problems';
import type { ResourceRouteOptions } from '../options';

const DEFAULT_TTL_SECONDS = 24 * 3600;
const MAX_TTL_SECONDS = 365 * 24 * 3600;
const name = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._ -]{0,99}$/,
    '1-100 of A-Z a-z 0-9 . _ - and spaces, starting with a letter or digit',
  );

export const issueTokenBody = z
  .object({
    name,
    groupId: z
      .uuid()
      .optional()
      .openapi({ description: 'Group new agents join (default: the tenant’s `default` group).' }),
    expiresInSeconds: z.number().int().min(60).max(MAX_TTL_SECONDS).default(DEFAULT_TTL_SECONDS),
    maxUses: z.number().int().min(1).max(1_000_000).default(1),
  })
  .strict()
  .openapi('BootstrapTokenIssue');

export const tokenSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    groupId: z.string(),
    poolId: z.string().nullable(),
    state: z.enum(['active', 'revoked', 'expired', 'exhausted']),
    expiresAt: z.string(),
    maxUses: z.number().int(),
    uses: z.number().int(),
    revokedAt: z.string().nullable(),
    createdBy: z.string(),
    createdAt: z.string(),
  })
  .openapi('BootstrapToken');

const issuedTokenSchema = tokenSchema
  .extend({ token: z.string().openapi({ description: 'The token itself (`svc-bt.…`). Shown only in this response.' }) })
  .openapi('BootstrapTokenIssued');

export const createPoolBody = z
  .object({
    name,
    groupId: z.uuid().optional(),
    tokenTtlSeconds: z.number().int().min(60).max(MAX_TTL_SECONDS).default(DEFAULT_TTL_SECONDS),
    tokenMaxUses: z.number().int().min(1).max(1_000_000).default(1),
    maxActiveTokens: z.number().int().min(1).max(100_000),
  })
  .strict()
  .openapi('TokenPoolCreate');

export const poolSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    groupId: z.string(),
    tokenTtlSeconds: z.number().int(),
    tokenMaxUses: z.number().int(),
    maxActiveTokens: z.number().int(),
    activeTokens: z.number().int(),
    createdBy: z.string(),
    createdAt: z.string(),
  })
  .openapi('TokenPool');

/** The token as the API shows it: the same view its events carry. */
const presentToken: (row: BootstrapTokenRow) => z.infer<typeof tokenSchema> = bootstrapTokenView;

const presentPool = (row: TokenPoolRow & { active_tokens?: number }, activeTokens = row.active_tokens ?? 0) =>
  tokenPoolView(row, activeTokens);

/** A token just issued: 201 with the token itself, this once. */
function issued({ row, token }: { row: BootstrapTokenRow; token: string }) {
  return {
    status: 201,
    body: { ...presentToken(row), token },
    resourceId: row.id,
    headers: { Location: `/api/tokens/${row.id}` },
  };
}

const idParams = z.object({ id: z.uuid() });

export function tokensRoutes(options: ResourceRouteOptions): RouteDef[] {
  return [...poolRoutes(options), ...tokenRoutes(options)];
}

/** Bootstrap-token pools: list, create, read, and issue a token from one. */
function poolRoutes(options: ResourceRouteOptions): RouteDef[] {
  return [
    // Pools first: `/api/tokens/pools` must not be read as a token id.
    route({
      method: 'get',
      path: '/api/tokens/pools',
      summary: 'List bootstrap token pools',
      tag: 'tokens',
      permission: 'read',
      query: pageQuery.strict(),
      response: { status: 200, description: 'A page of pools.', schema: pageOf(poolSchema) },
      handler: async ({ db, principal, query, ctx }) => {
        const page = await paginate<TokenPoolRow & { active_tokens: number }>(
          listTokenPoolsQuery(db, principal.tenantId),
          query,
          {
            columns: [
              { column: 'created_at', type: 'timestamp' },
              { column: 'id', type: 'uuid' },
            ],
            direction: 'desc',
          },
        );
        return { body: respondPage(ctx, options.baseUrl, page, (row) => presentPool(row)) };
      },
    }),
    route({
      method: 'post',
      path: '/api/tokens/pools',
      summary: 'Create a bootstrap token pool',
      tag: 'tokens',
      permission: 'operate',
      resource: 'token-pool',
      body: createPoolBody,
      response: { status: 201, description: 'The pool.', schema: poolSchema },
      handler: async ({ db, principal, body }) => {
        const row = await createTokenPool(db, { tenantId: principal.tenantId, ...body, createdBy: principal.name });
        const pool = presentPool(row, 0);
        return { status: 201, body: pool, resourceId: row.id, headers: { Location: `/api/tokens/pools/${row.id}` } };
      },
    }),
    route({
      method: 'get',
      path: '/api/tokens/pools/{id}',
      summary: 'One bootstrap token pool',
      tag: 'tokens',
      permission: 'read',
      resource: 'token-pool',
      params: idParams,
      response: { status: 200, description: 'The pool.', schema: poolSchema },
      handler: async ({ db, principal, params }) => {
        const row = await findTokenPool(db, principal.tenantId, params.id);
        if (!row) throw problems.notFound('token pool', params.id);
        return { body: presentPool(row, await countActivePoolTokens(db, row.id)) };
      },
    }),
    route({
      method: 'post',
      path: '/api/tokens/pools/{id}/issue',
      summary: 'Issue a token from a pool (refused when the pool has maxActiveTokens active tokens)',
      tag: 'tokens',
      permission: 'operate',
      resource: 'token-pool',
      params: idParams,
      body: z.object({ name: name.optional() }).strict().optional(),
      response: { status: 201, description: 'The token, shown once.', schema: issuedTokenSchema },
      handler: async ({ db, principal, params, body }) => {
        const request = {
          tenantId: principal.tenantId,
          poolId: params.id,
          name: body?.name,
          createdBy: principal.name,
        };
        return issued(await issueFromPool(db as Knex.Transaction, request));
      },
    }),
  ];
}

/** Bootstrap tokens: list, create, read, revoke. */
function tokenRoutes(options: ResourceRouteOptions): RouteDef[] {
  return [
    route({
      method: 'get',
      path: '/api/tokens',
      summary: 'List bootstrap tokens (never the tokens themselves)',
      tag: 'tokens',
      permission: 'read',
      query: pageQuery
        .extend({
          state: z.enum(['active', 'revoked', 'expired', 'exhausted']).optional(),
          poolId: z.uuid().optional(),
          groupId: z.uuid().optional(),
        })
        .strict(),
      response: { status: 200, description: 'A page of bootstrap tokens.', schema: pageOf(tokenSchema) },
      handler: async ({ db, principal, query, ctx }) => {
        const page = await paginate<BootstrapTokenRow>(listBootstrapTokensQuery(db, principal.tenantId, query), query, {
          columns: [
            { column: 'created_at', type: 'timestamp' },
            { column: 'id', type: 'uuid' },
          ],
          direction: 'desc',
        });
        return { body: respondPage(ctx, options.baseUrl, page, presentToken) };
      },
    }),
    route({
      method: 'post',
      path: '/api/tokens',
      summary: 'Issue a bootstrap token (the token is shown once)',
      tag: 'tokens',
      permission: 'operate',
      resource: 'bootstrap-token',
      body: issueTokenBody,
      response: { status: 201, description: 'The token, shown once.', schema: issuedTokenSchema },
      handler: async ({ db, principal, body }) =>
        issued(
          await issueBootstrapToken(db, {
            tenant_id: principal.tenantId,
            name: body.name,
            group_id: await enrolmentGroup(db, principal.tenantId, body.groupId),
            pool_id: null,
            expires_at: new Date(Date.now() + body.expiresInSeconds * 1000),
            max_uses: body.maxUses,
            created_by: principal.name,
          }),
        ),
    }),
    route({
      method: 'get',
      path: '/api/tokens/{id}',
      summary: 'One bootstrap token',
      tag: 'tokens',
      permission: 'read',
      resource: 'bootstrap-token',
      params: idParams,
      response: { status: 200, description: 'The token (without its secret).', schema: tokenSchema },
      handler: async ({ db, principal, params }) => {
        const row = await findBootstrapToken(db, principal.tenantId, params.id);
        if (!row) throw problems.notFound('bootstrap token', params.id);
        return { body: presentToken(row) };
      },
    }),
    route({
      method: 'post',
      path: '/api/tokens/{id}/revoke',
      summary: 'Revoke a bootstrap token (no new enrolment with it)',
      tag: 'tokens',
      permission: 'operate',
      resource: 'bootstrap-token',
      params: idParams,
      response: { status: 200, description: 'The revoked token.', schema: tokenSchema },
      handler: async ({ db, principal, params }) => {
        return { body: presentToken(await revokeBootstrapToken(db, principal.tenantId, params.id)) };
      },
    }),
  ];
}
