import type { GitSourceView } from '../../../db/repos/git-sources';
import type { SyncRunRow } from '../../../db/repos/git-sync-runs';
import {
  branchProblem,
  caBundleProblem,
  CA_BUNDLE_MAX_BYTES,
  credentialsMismatch,
  normalCaBundle,
  normalTreePath,
  repoUrlProblem,
  treePathProblem,
} from '../../../domain/git/source-fields';
import { gitSourceView } from '../../../domain/git/sources';
import { pageQuery } from '../../http/pagination';
import { plainText, TRIMMED_SPACE, TRIMMED_SPACE_CHARS } from '../../http/text';
import { z } from '../../http/zod';
import { rolloutSchema, strategySchema, targetSchema } from '../rollouts/schema';

/** Turns a domain check (`why` a value is refused, or undefined) into a zod refinement. */
const refusedWhen =
  (why: (value: string) => string | undefined) =>
  (value: string, ctx: z.core.$RefinementCtx<string>): void => {
    const message = why(value);
    if (message) ctx.addIssue({ code: 'custom', message });
  };

/*
 * Each rule below is a pattern, so the document states it as it is checked (`pattern`):
 * no refinement the document would not show.
 */

const SPACE = TRIMMED_SPACE;

/** A secret: printable text, no control characters and no surrounding spaces; zod's messages never quote it. */
const SECRET_TEXT = new RegExp(`^(?!${SPACE})[^\\u0000-\\u001f\\u007f]*(?<!${SPACE})$`);
const secretText = (max: number) =>
  z.string().min(1).max(max).regex(SECRET_TEXT, 'must not contain control characters or surrounding spaces');

/** A private key in PEM or OpenSSH form, as sent (line ends CRLF or LF, spaces around). */
const PEM_PRIVATE_KEY =
  /^\s*-----BEGIN ([A-Z0-9 ]+ )?PRIVATE KEY-----\r?\n[\s\S]+\r?\n-----END ([A-Z0-9 ]+ )?PRIVATE KEY-----\s*$/;

/**
 * known_hosts lines: host pattern(s), key type, base64 key, an optional comment; blank lines
 * and `#` comment lines aside; at least one. Written so that each line can be read one way
 * only (a host never starts with `#`), so the pattern runs in linear time on any input.
 */
const HOST_LINE =
  '[ \\t]*(@[a-z-]+ )?[^\\s#]\\S* (ssh-[a-z0-9-]+|ecdsa-sha2-[a-z0-9-]+|sk-[a-z0-9@.-]+) [A-Za-z0-9+/]+=*([ \\t][^\\r\\n]*)?\\r?';
const OTHER_LINE = '[ \\t]*(#[^\\r\\n]*)?\\r?';
const KNOWN_HOSTS = new RegExp(`^(${OTHER_LINE}\\n)*${HOST_LINE}(\\n(${HOST_LINE}|${OTHER_LINE}))*$`);

const httpsCredentials = z
  .object({
    kind: z.literal('https'),
    username: plainText(z.string().min(1).max(256))
      .refine((name) => !name.includes(':'), 'must not contain : (basic auth separates user and password with it)')
      .optional()
      .openapi({ description: 'For hosts that want one with a token (Bitbucket: the account; GitLab: any).' }),
    token: secretText(4096).openapi({ description: 'The password or access token. Write-only.' }),
  })
  .strict();

const sshCredentials = z
  .object({
    kind: z.literal('ssh'),
    privateKey: z
      .string()
      .max(16_384)
      .regex(
        PEM_PRIVATE_KEY,
        'must be an unencrypted private key in PEM or OpenSSH form (-----BEGIN … PRIVATE KEY-----)',
      )
      .transform((key) => key.replace(/\r\n/g, '\n').trim() + '\n')
      .openapi({ description: 'Write-only.' }),
    knownHosts: z
      .string()
      .max(65_536)
      .regex(KNOWN_HOSTS, 'must be known_hosts lines (host keytype base64key), e.g. the output of ssh-keyscan')
      .transform((text) => text.replace(/\r\n/g, '\n').trim() + '\n')
      .openapi({ description: "The server's host key(s), pinned: git refuses any other." }),
  })
  .strict();

export const credentialsBody = z
  .discriminatedUnion('kind', [httpsCredentials, sshCredentials])
  .openapi('GitCredentialsWrite', {
    description: 'Write-only: stored encrypted, never returned (a source shows only `{ kind, configured }`).',
  });
export type CredentialsBody = z.infer<typeof credentialsBody>;

export const rolloutTemplateBody = z
  .object({ target: targetSchema, strategy: strategySchema })
  .strict()
  .openapi('GitRolloutTemplate', {
    description: 'A rollout created and started for every version a sync publishes (needs `autoPublish`).',
  });

/**
 * branchProblem and treePathProblem as patterns, for the document: a client (and the fuzzer)
 * can keep to them; test/domain/git-source-fields.unit.test.ts holds each to its function.
 */
const NOT_BRANCH_CHARS = `${TRIMMED_SPACE_CHARS}\\u0000-\\u001f\\u007f-\\u009f~^:?*[\\\\`;
export const BRANCH_PATTERN = new RegExp(
  '^(?!refs/)(?!-)(?!@$)(?!HEAD$)(?!/)(?!.*/$)(?!.*//)(?!.*\\.\\.)(?!.*@\\{)(?!.*\\.$)(?!(?:.*/)?\\.)(?!.*\\.lock(?:/|$))' +
    `[^${NOT_BRANCH_CHARS}]{1,255}$`,
);
const NOT_PATH_CHARS = `${TRIMMED_SPACE_CHARS.replace(' ', '')}\\u0000-\\u001f\\u007f-\\u009f\\\\`;
export const TREE_PATH_PATTERN = new RegExp(
  `^$|^(?!/)(?!.*//)(?!(?:.*/)?\\.{1,2}(?:/|$))[^${NOT_PATH_CHARS}]{1,1024}$`,
);

const sourceFields = {
  name: plainText().trim().min(1).max(100),
  repoUrl: z
    .string()
    .trim()
    .max(2048)
    .superRefine(refusedWhen(repoUrlProblem))
    .openapi({
      // A format of our own: a URL git can read, of a scheme and a shape this service takes.
      format: 'git-repository-url',
      description:
        'https://, ssh:// or file://, without credentials in it. file:// only under the directories the ' +
        'installation allows (Git:FileRoots; none by default).',
      example: 'https://github.com/acme/fleet-config.git',
    }),
  branch: z
    .string()
    .superRefine(refusedWhen(branchProblem))
    .openapi({ example: 'main', pattern: BRANCH_PATTERN.source }),
  path: z.string().default('').superRefine(refusedWhen(treePathProblem)).transform(normalTreePath).openapi({
    description: "Directory of the tree whose files become configurations ('' = the root).",
    pattern: TREE_PATH_PATTERN.source,
  }),
  pollIntervalSeconds: z
    .number()
    .int()
    .min(5)
    .max(86_400)
    .optional()
    .openapi({ description: 'Seconds between polls of the branch (default Git:DefaultPollIntervalSeconds, 60).' }),
  autoPublish: z.boolean().default(false),
  // A union with null, not .nullable(), which would make the registered component nullable.
  rolloutTemplate: z.union([rolloutTemplateBody, z.null()]).default(null),
  caCertificate: z
    .string()
    .max(CA_BUNDLE_MAX_BYTES)
    .superRefine(refusedWhen(caBundleProblem))
    .transform(normalCaBundle)
    .nullable()
    .default(null)
    .openapi({
      description:
        "PEM certificates of the CA(s) that issued an https:// repository's server certificate (an internal " +
        "CA): git trusts these for this source alone, in place of the system's store. null: the system's store.",
    }),
};

type SourceFields = {
  repoUrl: string;
  caCertificate: string | null;
  autoPublish: boolean;
  rolloutTemplate: unknown;
  credentials?: CredentialsBody | null;
};

/** The rules between fields: credentials fit the URL's scheme, a rollout template needs autoPublish. */
function checkAcrossFields(body: SourceFields, ctx: z.core.$RefinementCtx<SourceFields>) {
  if (body.rolloutTemplate && !body.autoPublish) {
    ctx.addIssue({
      code: 'custom',
      path: ['rolloutTemplate'],
      message: 'needs autoPublish: true (only published versions are rolled out)',
    });
  }
  if (body.caCertificate !== null && !/^\s*https:/i.test(body.repoUrl)) {
    ctx.addIssue({ code: 'custom', path: ['caCertificate'], message: 'is for https:// repositories only' });
  }
  if (body.credentials && repoUrlProblem(body.repoUrl) === undefined) {
    const mismatch = credentialsMismatch(body.repoUrl, body.credentials.kind);
    if (mismatch) ctx.addIssue({ code: 'custom', path: ['credentials'], message: mismatch });
  }
}

/** The scheme a repository URL starts with, as the URL parser reads it (any case, after the spaces trim() drops). */
const schemePattern = (scheme: string) =>
  `^${SPACE}*${[...scheme].map((c) => `[${c.toLowerCase()}${c.toUpperCase()}]`).join('')}://`;

/** checkAcrossFields, as the document states it. */
const ACROSS_FIELDS = {
  allOf: [
    ...(['https', 'ssh'] as const).map((kind) => ({
      if: {
        required: ['repoUrl', 'credentials'],
        properties: { repoUrl: { pattern: schemePattern(kind) }, credentials: { type: 'object' } },
      },
      then: { properties: { credentials: { properties: { kind: { const: kind } } } } },
    })),
    {
      if: { required: ['repoUrl'], properties: { repoUrl: { pattern: schemePattern('file') } } },
      then: { properties: { credentials: { type: 'null' } } },
    },
    {
      if: { required: ['caCertificate'], properties: { caCertificate: { type: 'string' } } },
      then: { required: ['repoUrl'], properties: { repoUrl: { pattern: schemePattern('https') } } },
    },
    {
      if: { required: ['rolloutTemplate'], properties: { rolloutTemplate: { type: 'object' } } },
      then: { required: ['autoPublish'], properties: { autoPublish: { const: true } } },
    },
  ],
};

export const createSourceBody = z
  .object({ ...sourceFields, credentials: credentialsBody.nullable().default(null) })
  .strict()
  .superRefine(checkAcrossFields)
  .openapi('GitSourceCreate', ACROSS_FIELDS);

export const updateSourceBody = z
  .object({
    ...sourceFields,
    credentials: credentialsBody.nullable().optional().openapi({
      description: 'Omitted: kept (unless repoUrl moves to another host). null: removed. An object: replaced.',
    }),
  })
  .strict()
  .superRefine(checkAcrossFields)
  .openapi('GitSourceUpdate', ACROSS_FIELDS);

export const sourceListQuery = pageQuery
  .extend({
    q: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .openapi({ description: 'Part of the name or repository URL (case-insensitive).' }),
    paused: z.enum(['true', 'false']).optional(),
  })
  .strict();

export const sourceId = z.object({ id: z.uuid() });

const lastRunSchema = z.object({
  id: z.string(),
  trigger: z.enum(['webhook', 'poll', 'manual']),
  commitSha: z.string().nullable(),
  status: z.enum(['running', 'succeeded', 'failed']),
  error: z.string().nullable(),
  startedAt: z.string(),
  finishedAt: z.string().nullable(),
});

export const sourceSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    repoUrl: z.string(),
    branch: z.string(),
    path: z.string(),
    pollIntervalSeconds: z.number().int(),
    autoPublish: z.boolean(),
    paused: z.boolean(),
    credentials: z
      .object({ kind: z.enum(['https', 'ssh']), configured: z.literal(true) })
      .nullable()
      .openapi({ description: 'Whether credentials are stored, and their kind; never their content.' }),
    caCertificate: z.string().nullable().openapi({ description: 'The CA bundle trusted for this source alone.' }),
    webhook: z.object({
      url: z.string().openapi({ description: 'Where the Git host sends its webhook.' }),
      configured: z.boolean().openapi({ description: 'A webhook token was generated.' }),
      createdAt: z.string().nullable(),
    }),
    rolloutTemplate: rolloutSchema.pick({ target: true, strategy: true }).nullable(),
    lastSyncedSha: z.string().nullable(),
    lastSyncedAt: z.string().nullable(),
    lastRun: lastRunSchema.nullable(),
    createdBy: z.string(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi('GitSource');

export const webhookTokenSchema = z
  .object({
    token: z.string().openapi({ description: 'Shown once; only its hash is stored.' }),
    createdAt: z.string(),
    url: z.string(),
  })
  .openapi('GitWebhookToken');

export const syncRequestedSchema = z
  .object({ sourceId: z.string(), trigger: z.literal('manual'), syncRuns: z.string() })
  .openapi('GitSyncRequested');

export const syncRunSchema = z
  .object({
    id: z.string(),
    trigger: z.enum(['webhook', 'poll', 'manual']),
    commitSha: z.string().nullable(),
    status: z.enum(['running', 'succeeded', 'failed']),
    changes: z.array(z.record(z.string(), z.unknown())),
    fileErrors: z.array(z.object({ path: z.string(), error: z.string() })),
    error: z.string().nullable(),
    rolloutId: z.string().nullable(),
    startedAt: z.string(),
    finishedAt: z.string().nullable(),
    durationMs: z.number().int().nullable(),
  })
  .openapi('GitSyncRun');

export const syncRunsQuery = pageQuery.strict();

const iso = (date: Date | string | null) => (date === null ? null : new Date(date).toISOString());

/** The URL a Git host posts to for `sourceId`. */
export const webhookUrl = (baseUrl: string, sourceId: string) => `${baseUrl}/api/git/webhook/${sourceId}`;

/** How a source reads (domain/git/sources.ts), with the URL its webhook is posted to on this api. */
export function presentSource(row: GitSourceView, baseUrl: string): z.infer<typeof sourceSchema> {
  return gitSourceView(row, webhookUrl(baseUrl, row.id));
}

export function presentSyncRun(row: SyncRunRow): z.infer<typeof syncRunSchema> {
  return {
    id: row.id,
    trigger: row.trigger,
    commitSha: row.commit_sha,
    status: row.status,
    changes: row.changes as unknown as Record<string, unknown>[],
    fileErrors: row.file_errors,
    error: row.error,
    rolloutId: row.rollout_id,
    startedAt: row.started_at.toISOString(),
    finishedAt: iso(row.finished_at),
    durationMs: row.finished_at ? row.finished_at.getTime() - row.started_at.getTime() : null,
  };
}
