import { configurationView } from '../../../domain/configurations/configurations';
import type { ConfigurationRow } from '../../../db/repos/configurations';
import type { VersionRow, VersionWithContent } from '../../../db/repos/configuration-versions';
import { FORMATS } from '../../../domain/configurations/content';
import { pageQuery } from '../../http/pagination';
import { labelQuery, labelsSchema } from '../../http/labels';
import { z } from '../../http/zod';

const name = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$/, '1-200 of A-Z a-z 0-9 . _ / -, starting with a letter or digit')
  .openapi({
    description: 'Unique in the tenant. Git-managed configurations are named by their path without extension.',
  });

/** A path or query value that must be a version number: 1, 2, ... (an integer column). */
const MAX_VERSION = 2_147_483_647;
const versionNumber = z
  .string()
  .regex(/^[1-9][0-9]{0,9}$/, 'must be a positive integer')
  .transform(Number)
  .pipe(z.number().max(MAX_VERSION))
  .openapi({ type: 'integer', minimum: 1, maximum: MAX_VERSION, example: 1 });

export const configurationId = z.object({ id: z.uuid() });
export const versionParams = z.object({ id: z.uuid(), version: versionNumber });

export const createConfigurationBody = z
  .object({
    name,
    format: z.enum(FORMATS).openapi({
      description: 'How versions are parsed: `yaml` and `json` must parse; `text` is anything. Fixed at creation.',
    }),
    description: z.string().max(2000).default(''),
    labels: labelsSchema.default({}),
  })
  .strict()
  .openapi('ConfigurationCreate');

export const updateConfigurationBody = z
  .object({ name, description: z.string().max(2000).default(''), labels: labelsSchema.default({}) })
  .strict()
  .openapi('ConfigurationUpdate');

export const listConfigurationsQuery = pageQuery
  .extend({
    q: z.string().min(1).max(200).optional().openapi({ description: 'Part of the name (case-insensitive).' }),
    format: z.enum(FORMATS).optional(),
    label: labelQuery,
  })
  .strict();

export const listVersionsQuery = pageQuery.extend({ state: z.enum(['draft', 'published']).optional() }).strict();

export const saveDraftBody = z
  .object({
    content: z.string().openapi({
      format: 'configuration-content',
      description:
        "A document in the configuration's format: at most 1 MiB (1,048,576 bytes of UTF-8); YAML and JSON must parse.",
    }),
  })
  .strict()
  .openapi('ConfigurationDraft');

export const compareQuery = z.object({ from: versionNumber, to: versionNumber }).strict();

export const configurationSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string(),
    format: z.enum(FORMATS),
    labels: z.record(z.string(), z.string()),
    latestVersion: z.number().int().openapi({ description: 'Highest version number saved; 0 before the first draft.' }),
    publishedVersion: z.number().int().nullable().openapi({ description: 'Highest published version number, if any.' }),
    managedBy: z.string().nullable().openapi({
      description: 'The Git source that owns it; such configurations refuse edits (409 `managed-by-git`).',
    }),
    sourcePath: z.string().nullable().openapi({
      description: 'The file of the managing Git source it comes from; null when not managed by Git.',
    }),
    sourceRemovedAt: z.string().nullable().openapi({
      description:
        'When its file disappeared from the tracked branch (the configuration and its versions stay); null while the file is there.',
    }),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .openapi('Configuration');

const provenanceSchema = z
  .object({
    sourceId: z.string(),
    path: z.string().openapi({ description: 'The file in the repository.' }),
    commitSha: z.string(),
    author: z.string().openapi({ description: "The commit's author." }),
    message: z.string().openapi({ description: "The commit's message." }),
  })
  .openapi('ConfigurationVersionProvenance');

export const versionSummarySchema = z
  .object({
    configurationId: z.string(),
    version: z.number().int(),
    state: z.enum(['draft', 'published']),
    contentHash: z.string().openapi({ description: 'sha256 hex of the content as UTF-8.' }),
    author: z.string(),
    createdAt: z.string(),
    publishedAt: z.string().nullable(),
    publishedBy: z.string().nullable(),
    // A union with null, not provenanceSchema.nullable(), which would make the registered
    // component itself nullable in the OpenAPI document.
    provenance: z.union([provenanceSchema, z.null()]).openapi({
      description: 'The commit a Git sync saved this version from; null for versions saved through the API.',
    }),
  })
  .openapi('ConfigurationVersionSummary');

export const versionSchema = versionSummarySchema.extend({ content: z.string() }).openapi('ConfigurationVersion');

export const compareSchema = z
  .object({
    from: z.number().int(),
    to: z.number().int(),
    unifiedDiff: z.string(),
    changes: z
      .array(
        z.object({
          op: z.enum(['added', 'removed', 'changed']),
          path: z.string().openapi({ description: '`a.b[0].c`; other keys quoted as `a["x.y"]`; the root is `""`.' }),
          from: z.unknown().optional(),
          to: z.unknown().optional(),
        }),
      )
      .nullable()
      .openapi({ description: 'Key-level changes for YAML and JSON; null for text.' }),
  })
  .openapi('ConfigurationComparison');

/** The configuration as the API shows it: the same view its events carry. */
export const presentConfiguration: (row: ConfigurationRow) => z.infer<typeof configurationSchema> = configurationView;

export function presentVersionSummary(row: VersionRow): z.infer<typeof versionSummarySchema> {
  return {
    configurationId: row.configuration_id,
    version: row.version,
    state: row.state,
    contentHash: row.content_hash,
    author: row.author,
    createdAt: row.created_at.toISOString(),
    publishedAt: row.published_at?.toISOString() ?? null,
    publishedBy: row.published_by,
    provenance: row.provenance,
  };
}

export function presentVersion(row: VersionWithContent): z.infer<typeof versionSchema> {
  return { ...presentVersionSummary(row), content: row.content };
}
