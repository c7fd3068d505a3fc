/**
 * The inbound Git webhook, `POST /api/git/webhook/{sourceId}`: a Git host's signal to look
 * at the tip of the branch. No bearer token: the source's own webhook token authenticates
 * it. The body is never parsed (the sweep reads the truth from the tree), only held to a
 * size limit. The answer comes once the loop has the signal, not after the sweep.
 */
import type { Settings } from '../../../platform/settings';
import { findGitSourceById, type GitSourceRow } from '../../../db/repos/git-sources';
import type { Db } from '../../../db/connection';
import { hashToken, sameHash } from '../../../domain/tokens/secret-token';
import type { AppContext } from '../../http/context';
import { route, type RouteDef } from '../../http/route';
import { z } from '../../http/zod';
import { discardBody } from '../../middleware/json-body';
import { Problem } from '../../problems';
import type { GitSyncWorkflows } from './workflow-client';
import { isUuid } from '../../../db/uuid';

/** Push payloads are a few KiB (GitHub's with 20 commits, tens); the service never reads them. */
export const WEBHOOK_BODY_LIMIT = 1024 * 1024;

/** Compared against when there is nothing to compare against, so every refusal does the same work. */
const NO_HASH = hashToken('');

/** One answer for an unknown source, a missing token, a source without a token and a wrong token: no oracle. */
const refused = () =>
  new Problem(
    'unauthorized',
    'A valid webhook token for this source is required: header X-Service-Webhook-Token (or X-Gitlab-Token), or query parameter token.',
  );

const acceptedSchema = z
  .object({ status: z.enum(['accepted', 'paused']), detail: z.string() })
  .openapi('GitWebhookAccepted');

/**
 * In Production the webhook takes HTTPS only, whatever the settings: a token sent in clear
 * is a token given away. Behind a TLS-terminating proxy the request is HTTPS when
 * Http:TrustProxy is on and the proxy's X-Forwarded-Proto says so (Koa's `ctx.secure`).
 */
function refusePlainHttp(ctx: AppContext, settings: Pick<Settings, 'isDevelopment'>): void {
  if (!settings.isDevelopment && !ctx.secure) {
    throw new Problem('https-required', 'The webhook accepts HTTPS only: send it to the https:// URL of the service.');
  }
}

/** The token from X-Service-Webhook-Token, else X-Gitlab-Token (GitLab's secret field), else `?token=`. */
function presentedToken(ctx: AppContext, query: string | undefined): string | undefined {
  return ctx.get('x-service-webhook-token') || ctx.get('x-gitlab-token') || query || undefined;
}

/**
 * The source whose token was presented. Every refusal is recorded in the audit trail (by the
 * trail's middleware), in the source's tenant when the path names one, so its auditors see
 * deliveries with a stale token; the caller cannot tell which case it was.
 */
async function authenticate(db: Db, ctx: AppContext, id: string, token: string | undefined): Promise<GitSourceRow> {
  const source = isUuid(id) ? await findGitSourceById(db, id) : undefined;
  if (source) ctx.state.resource = { type: 'git-source', id: source.id };
  ctx.state.caller = { type: 'webhook', tenantId: source?.tenant_id ?? null, name: null, id: null };
  const matches = sameHash(hashToken(token ?? ''), source?.webhook_token_hash ?? NO_HASH);
  if (!source || !token || !source.webhook_token_hash || !matches) throw refused();
  ctx.state.caller = { type: 'webhook', tenantId: source.tenant_id, name: source.name, id: source.id };
  return source;
}

export function gitWebhookRoutes(options: { settings: Readonly<Settings>; db: Db; workflows: GitSyncWorkflows }) {
  const { settings, workflows } = options;
  return [
    route({
      method: 'post',
      path: '/api/git/webhook/{sourceId}',
      summary: "Inbound Git webhook: check the tip of the source's branch",
      tag: 'git-sources',
      permission: 'public', // the source's webhook token, not a bearer token
      opaqueBody: true,
      transactional: false, // waits on Temporal: no transaction held meanwhile
      params: z.object({ sourceId: z.string() }),
      query: z.object({
        token: z
          .string()
          .optional()
          .openapi({ description: 'The webhook token, for hosts that cannot send X-Service-Webhook-Token.' }),
      }),
      response: { status: 202, description: 'The source was signalled (or is paused).', schema: acceptedSchema },
      handler: async ({ db, params, query, ctx }) => {
        refusePlainHttp(ctx, settings);
        const source = await authenticate(db, ctx, params.sourceId, presentedToken(ctx, query.token));
        await discardBody(ctx, WEBHOOK_BODY_LIMIT);
        if (source.paused) {
          return { status: 202, body: { status: 'paused', detail: 'The source is paused: no sync run happens.' } };
        }
        await workflows.wake(source, { reason: 'webhook' });
        return {
          status: 202,
          body: { status: 'accepted', detail: 'The branch tip is checked; a sync run follows if it moved.' },
        };
      },
    }),
  ] satisfies RouteDef[];
}
