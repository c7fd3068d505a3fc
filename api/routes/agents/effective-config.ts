/**
 * `GET /api/agents/{id}/effective-configuration`: what the agent last reported running, as
 * kept (secrets redacted), and how it differs from its desired configuration, redacted by
 * the same rule (docs/agent-gateway.md, "Effective configuration").
 */
import { findEffectiveConfig } from '../../../db/repos/agent-effective-configs';
import { findAgent } from '../../../db/repos/agents';
import { findConfiguration } from '../../../db/repos/configurations';
import { findVersionWithContent } from '../../../db/repos/configuration-versions';
import type { Db } from '../../../db/connection';
import type { AgentRow } from '../../../db/repos/agents';
import type { EffectiveConfigRow } from '../../../db/repos/agent-effective-configs';
import { diffEffectiveWithDesired } from '../../../domain/configurations/content-check';
import { EFFECTIVE_CONFIG_MAX_BYTES, fileOfDesired, REDACTED } from '../../../domain/effective-config';
import { TaskTooCostly } from '../../../platform/thread-pool';
import { route, type RouteDef } from '../../http/route';
import { z } from '../../http/zod';
import { Problem, problems } from '../../problems';

const effectiveConfigSchema = z
  .object({
    agentId: z.string(),
    hash: z.string().openapi({ description: 'sha256 (hex) of what the agent reported (`effectiveConfigHash`).' }),
    reportedAt: z
      .string()
      .openapi({ description: 'When the agent reported this configuration (first, if it repeated it).' }),
    kept: z.boolean().openapi({
      description: `False when it was over ${EFFECTIVE_CONFIG_MAX_BYTES / 1024} KiB: its files are listed with their sizes, without content.`,
    }),
    redactedValues: z
      .number()
      .int()
      .openapi({ description: `Values replaced by \`${REDACTED}\` before it was stored.` }),
    files: z.array(
      z.object({
        name: z.string(),
        contentType: z.string(),
        bytes: z.number().int().openapi({ description: 'Size as reported, before redaction.' }),
        content: z.string().nullable().openapi({ description: 'Redacted; null when not kept.' }),
      }),
    ),
    desired: z
      .object({
        configurationId: z.string(),
        name: z.string(),
        version: z.number().int(),
        hash: z.string(),
        matches: z.boolean().openapi({ description: 'The agent reports exactly the desired content (same hash).' }),
        file: z.string().nullable().openapi({ description: 'The reported file compared with it.' }),
        diff: z
          .string()
          .nullable()
          .openapi({
            description:
              'Unified diff from the desired version to the reported file, both redacted by the same rule; empty when they are the same. ' +
              'Null when there is nothing to compare: no file by its name among several, a configuration not kept, a version gone.',
          }),
      })
      .nullable()
      .openapi({ description: "The agent's desired configuration and version; null when it has none." }),
  })
  .openapi('AgentEffectiveConfiguration');

type Desired = NonNullable<z.infer<typeof effectiveConfigSchema>['desired']>;

async function compareWithDesired(db: Db, agent: AgentRow, kept: EffectiveConfigRow): Promise<Desired | null> {
  const { desired_configuration_id: configurationId, desired_version: version, desired_hash: hash } = agent;
  if (!configurationId || version === null || !hash) return null;
  const [configuration, desiredVersion] = await Promise.all([
    findConfiguration(db, agent.tenant_id, configurationId),
    findVersionWithContent(db, configurationId, version),
  ]);
  const name = configuration?.name ?? configurationId;
  const base = { configurationId, name, version, hash, matches: kept.hash === hash };
  const file = fileOfDesired(kept.files, name);
  if (!configuration || !desiredVersion || !file || file.content === null)
    return { ...base, file: file?.name ?? null, diff: null };
  const desired = { name, format: configuration.format, version, content: desiredVersion.content };
  try {
    return {
      ...base,
      file: file.name,
      diff: await diffEffectiveWithDesired(desired, { ...file, content: file.content }),
    };
  } catch (error) {
    if (error instanceof TaskTooCostly) return { ...base, file: file.name, diff: null };
    throw error;
  }
}

export function effectiveConfigRoute(): RouteDef {
  return route({
    method: 'get',
    path: '/api/agents/{id}/effective-configuration',
    summary: 'What the agent reports running (secrets redacted), and how it differs from its desired configuration',
    tag: 'agents',
    permission: 'read',
    resource: 'agent',
    params: z.object({ id: z.guid() }),
    response: {
      status: 200,
      description: 'The effective configuration as kept. 404 when the agent has reported none yet.',
      schema: effectiveConfigSchema,
    },
    handler: async ({ db, principal, params }) => {
      const agent = await findAgent(db, principal.tenantId, params.id);
      if (!agent) throw problems.notFound('agent', params.id);
      const kept = await findEffectiveConfig(db, principal.tenantId, agent.id);
      if (!kept)
        throw new Problem(
          'not-found',
          `Agent '${agent.name}' (${agent.id}) has not reported an effective configuration yet.`,
        );
      return {
        body: {
          agentId: agent.id,
          hash: kept.hash,
          reportedAt: kept.reported_at.toISOString(),
          kept: kept.kept,
          redactedValues: kept.redacted,
          files: kept.files,
          desired: await compareWithDesired(db, agent, kept),
        },
      };
    },
  });
}
