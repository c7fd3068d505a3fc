import type { PolicyRow } from '../../../db/repos/policies';
import { MAX_EXPRESSION_LENGTH } from '../../../domain/policies/cel';
import { policyView } from '../../../domain/policies/operations';
import { pageQuery } from '../../http/pagination';
import { someNonEmpty, z } from '../../http/zod';
import { batchPercentSchema, batchSizeSchema } from '../rollouts/schema';

const name = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/, '1-100 of A-Z a-z 0-9 . _ -, starting with a letter or digit');
const expression = z.string().min(1).max(MAX_EXPRESSION_LENGTH).openapi({
  // A format of our own: no pattern can say "type-checks to bool" (docs/fuzzing.md).
  format: 'cel-bool',
  description:
    'CEL over `agent`, `configuration`, `version` and `rollout` (see docs/policies.md); must type-check to bool.',
});
const scope = z
  .array(z.uuid())
  .max(100)
  .default([])
  .transform((ids) => ids.map((id) => id.toLowerCase()))
  .openapi({ description: 'Group ids the policy applies to; empty: every group.' });

export const policyBody = z
  .object({
    name,
    description: z.string().max(2000).default(''),
    expression,
    scope,
    enabled: z.boolean().default(true).openapi({ description: 'Only approved, enabled policies are enforced.' }),
  })
  .strict()
  .openapi('PolicyWrite');

export const checkBody = z.object({ expression }).strict().openapi('PolicyCheck');

export const checkSchema = z.object({ ok: z.literal(true) }).openapi('PolicyCheckResult');

export const policySchema = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string(),
    expression: z.string(),
    scope: z.array(z.string()),
    state: z.enum(['draft', 'approved']),
    enabled: z.boolean(),
    builtin: z.boolean(),
    author: z.string(),
    approver: z.string().nullable(),
    approvedAt: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi('Policy');

export type Policy = z.infer<typeof policySchema>;

/** The policy as the API shows it: the same view its events carry. */
export const presentPolicy: (row: PolicyRow) => Policy = policyView;

export const policyListQuery = pageQuery
  .extend({
    state: z.enum(['draft', 'approved']).optional(),
    enabled: z
      .enum(['true', 'false'])
      .transform((value) => value === 'true')
      .optional()
      .openapi({ description: '`true` or `false`.' }),
  })
  .strict();

export const policyId = z.object({ id: z.uuid() });

const ids = (what: string) =>
  z
    .array(z.uuid())
    .max(100_000)
    .optional()
    .openapi({ description: `${what} ids.` });

export const evaluateBody = z
  .object({
    configurationId: z.uuid(),
    version: z.number().int().min(1).max(2_147_483_647),
    target: z
      .object({ groupIds: ids('Group'), agentIds: ids('Agent') })
      .strict()
      .refine((t) => (t.groupIds?.length ?? 0) + (t.agentIds?.length ?? 0) > 0, 'name at least one group or agent')
      .openapi(someNonEmpty('groupIds', 'agentIds')),
    rollout: z
      .object({ batchPercent: batchPercentSchema.optional(), batchSize: batchSizeSchema.optional() })
      .strict()
      .optional()
      .openapi({ description: 'The push to judge; absent: one batch of the whole target.' }),
  })
  .strict()
  .openapi('PolicyEvaluate');

const denial = z.object({
  policyId: z.string(),
  name: z.string(),
  error: z.string().optional().openapi({ description: 'Set when the policy failed at run time (which denies).' }),
});

export const evaluationSchema = z
  .object({
    allowed: z.boolean(),
    verdicts: z.array(z.object({ agentId: z.string(), allowed: z.boolean(), deniedBy: z.array(denial) })),
  })
  .openapi('PolicyEvaluation');
