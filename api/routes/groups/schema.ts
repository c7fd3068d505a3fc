import type { GroupRow, GroupView } from '../../../db/repos/groups';
import { groupView } from '../../../domain/groups';
import { labelQuery, labelsSchema } from '../../http/labels';
import { plainText } from '../../http/text';
import { z } from '../../http/zod';

export const groupBody = z
  .object({
    name: plainText().trim().min(1).max(100),
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

/** The group as the API shows it: the same view its events carry. */
export const presentGroup: (row: GroupRow, memberCount: number) => z.infer<typeof groupSchema> = groupView;

export const presentGroupView = (row: GroupView) => presentGroup(row, row.member_count);
