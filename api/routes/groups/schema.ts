import type { GroupRow, GroupView } from '../../../db/repos/groups';
import { problems } from '../../problems';
import { z } from '../../http/zod';

const LABEL_KEY = /^[A-Za-z0-9._\/-]{1,63}$/;

export const labelsSchema = z
  .record(z.string().regex(LABEL_KEY, 'label keys are 1-63 of A-Z a-z 0-9 . _ / -'), z.string().max(256))
  .refine((value) => Object.keys(value).length <= 64, 'at most 64 labels');

const labelSelector = z
  .string()
  .regex(/^[A-Za-z0-9._\/-]{1,63}:.{0,256}$/s, 'must be key:value')
  .openapi({ description: '`key:value`; repeat the parameter to require several labels (all must match).' });

/** `label=k:v`, repeatable: the query string gives one string or several. */
export const labelQuery = z.union([labelSelector, z.array(labelSelector).max(20)]).optional();

/** The label pairs of a `label` query value, or undefined when none; a key named twice with two values is a 400. */
export function labelFilter(value: string | string[] | undefined): Record<string, string> | undefined {
  if (value === undefined) return undefined;
  const pairs: Record<string, string> = {};
  for (const selector of Array.isArray(value) ? value : [value]) {
    const at = selector.indexOf(':');
    const key = selector.slice(0, at);
    const wanted = selector.slice(at + 1);
    if (key in pairs && pairs[key] !== wanted) {
      throw problems.validation([{ path: 'query.label', message: `label '${key}' cannot equal two values at once` }]);
    }
    pairs[key] = wanted;
  }
  return pairs;
}

export const groupBody = z
  .object({
    name: z.string().trim().min(1).max(100),
    description: z.string().max(2000).default(''),
    labels: labelsSchema.default({}),
  })
  .strict()
  .openapi('GroupWrite');

export const groupSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string(),
    labels: z.record(z.string(), z.string()),
    memberCount: z.number().int(),
    createdAt: z.string(),
    updatedAt: z.string(),
    deletedAt: z.string().nullable(),
  })
  .openapi('Group');

export const groupListQuery = z.object({
  q: z.string().min(1).max(100).optional().openapi({ description: 'Substring of the name (case-insensitive).' }),
  label: labelQuery,
  includeDeleted: z.enum(['true', 'false']).optional().openapi({ description: 'Show soft-deleted groups too.' }),
});

export const memberBody = z.object({ agentId: z.guid() }).strict().openapi('GroupMemberAdd');

export function presentGroup(row: GroupRow, memberCount: number): z.infer<typeof groupSchema> {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    labels: row.labels,
    memberCount,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    deletedAt: row.deleted_at?.toISOString() ?? null,
  };
}

export const presentGroupView = (row: GroupView) => presentGroup(row, row.member_count);
