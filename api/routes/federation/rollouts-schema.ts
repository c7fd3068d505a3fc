import { type FederatedRolloutRow, type InstallationRow } from '../../../db/repos/federated-rollouts';
import {
  federatedRolloutSummaryView,
  federatedRolloutView,
  installationView,
} from '../../../domain/federation/federated-rollouts';
import type { RolloutRow } from '../../../db/repos/rollouts';
import { z } from '../../http/zod';
import { createConfigurationBody } from '../configurations/schema';
import { createRolloutBody, strategySchema, targetSchema } from '../rollouts/schema';
import { FEDERATED_ROLLOUT_STATES, INSTALLATION_STATES, ROLLOUT_STATES, type Progress } from '../../../domain/rollouts';

/** A federated rollout spans at most this many installations. */
export const MAX_INSTALLATIONS = 20;

export const federatedRolloutId = z.object({ id: z.uuid() });

const installationBody = z
  .object({
    peerId: z
      .union([z.uuid(), z.literal('local')])
      .openapi({ description: 'A federation peer of this tenant, or `local` for this installation.' }),
    target: targetSchema,
    strategy: strategySchema,
  })
  .strict();

export const createFederatedRolloutBody = z
  .object({
    name: createRolloutBody.shape.name,
    description: createRolloutBody.shape.description,
    configurationId: z.uuid(),
    version: createRolloutBody.shape.version,
    mode: z.enum(['sequential', 'parallel']).default('sequential').openapi({
      description: '`sequential`: each installation after the previous one completed; `parallel`: all at once.',
    }),
    installations: z
      .array(installationBody)
      .min(1)
      .max(MAX_INSTALLATIONS)
      // No JSON Schema keyword says "unique by a member": stated for clients (and the fuzzer) as an extension.
      .openapi({ 'x-unique-by': 'peerId', description: 'Each installation once (`peerId`, in any case).' }),
  })
  .strict()
  .superRefine((body, ctx) => {
    const seen = new Set<string>();
    body.installations.forEach((installation, i) => {
      const peer = installation.peerId.toLowerCase();
      if (seen.has(peer))
        ctx.addIssue({
          code: 'custom',
          path: ['installations', i, 'peerId'],
          message: 'names an installation already listed',
        });
      seen.add(peer);
    });
  })
  .openapi('FederatedRolloutCreate');

const progressSchema = z.record(z.string(), z.number().int());

const installationSchema = z.object({
  position: z.number().int(),
  local: z.boolean().openapi({ description: "This installation's part." }),
  peerId: z
    .string()
    .nullable()
    .openapi({ description: 'The peer; null for this installation, or a peer since deleted.' }),
  name: z.string(),
  state: z.enum(INSTALLATION_STATES),
  rolloutId: z.string().nullable().openapi({ description: "The rollout's id on that installation." }),
  configurationId: z.string().nullable().openapi({ description: "The configuration's id on that installation." }),
  version: z.number().int().nullable().openapi({ description: 'The version number there (same content hash).' }),
  progress: progressSchema.nullable().openapi({ description: 'As that installation reports it.' }),
  problem: z
    .record(z.string(), z.unknown())
    .nullable()
    .openapi({ description: 'Why it was refused or could not be reached (the problem that installation answered).' }),
  target: z.record(z.string(), z.unknown()),
  strategy: z.record(z.string(), z.unknown()),
  updatedAt: z.string(),
});

export const federatedRolloutSummarySchema = z
  .object({
    id: z.string(),
    name: z.string().nullable(),
    description: z.string().nullable(),
    configurationId: z.string(),
    version: z.number().int(),
    contentHash: z.string(),
    mode: z.enum(['sequential', 'parallel']),
    state: z.enum(FEDERATED_ROLLOUT_STATES),
    reason: z.string().nullable(),
    createdBy: z.string(),
    createdAt: z.string(),
    updatedAt: z.string(),
    finishedAt: z.string().nullable(),
  })
  .openapi('FederatedRolloutSummary');

export const federatedDryRunSchema = z
  .object({
    allowed: z.boolean().openapi({ description: 'Every installation would take its part.' }),
    installations: z.array(
      z.object({
        installation: z.string(),
        peerId: z.string().nullable().openapi({ description: 'null: this installation.' }),
        allowed: z.boolean(),
        problem: z
          .record(z.string(), z.unknown())
          .nullable()
          .openapi({ description: 'Why it would refuse, as creating would answer it (an RFC 9457 problem).' }),
      }),
    ),
  })
  .openapi('FederatedRolloutDryRun');

export const federatedRolloutSchema = federatedRolloutSummarySchema
  .extend({ installations: z.array(installationSchema) })
  .openapi('FederatedRollout');

export const federatedRolloutListQuery = z.object({ state: z.enum(FEDERATED_ROLLOUT_STATES).optional() });

/** The views of domain/federation/federated-rollouts.ts, held to the document's schemas. */
export const presentFederatedRolloutSummary: (
  row: FederatedRolloutRow,
) => z.infer<typeof federatedRolloutSummarySchema> = federatedRolloutSummaryView;
export const presentInstallation: (row: InstallationRow) => z.infer<typeof installationSchema> = installationView;
export const presentFederatedRollout: (
  row: FederatedRolloutRow,
  installations: InstallationRow[],
) => z.infer<typeof federatedRolloutSchema> = federatedRolloutView;

// ---------------------------------------------------------------------------------------
// The receiver's endpoints (another installation calls them with its `peer` PAT)

/** `<origin installation id>:<federated rollout id>:<position>`: the caller's key for its part. */
export const incomingKey = z.object({
  key: z
    .string()
    .regex(
      /^[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}:[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}:[0-9]{1,2}$/,
      'must be <origin installation id>:<federated rollout id>:<position>',
    ),
});

const copiedConfiguration = z
  .object({
    name: createConfigurationBody.shape.name,
    format: createConfigurationBody.shape.format,
    content: z.string().openapi({ format: 'configuration-content', description: 'A document in `format`.' }),
  })
  .strict()
  .openapi('FederatedConfigurationCopy', {
    description: 'The version to roll out: copied into the configuration of this name (created when missing).',
  });

/** The dry run (`evaluate`) and the creation (`PUT {key}`) take the same body. */
export const incomingRolloutBody = z
  .object({
    configuration: copiedConfiguration,
    target: targetSchema,
    strategy: strategySchema,
    name: createRolloutBody.shape.name.nullable(),
    description: createRolloutBody.shape.description.nullable(),
  })
  .strict()
  .openapi('IncomingRollout');

export const incomingEvaluationSchema = z
  .object({ allowed: z.literal(true), agents: z.number().int().openapi({ description: 'Target agents here.' }) })
  .openapi('IncomingRolloutEvaluation');

export const incomingRolloutSchema = z
  .object({
    rolloutId: z.string(),
    configurationId: z.string(),
    version: z.number().int(),
    state: z.enum(ROLLOUT_STATES),
    reason: z.string().nullable(),
    progress: progressSchema,
  })
  .openapi('IncomingRolloutState');

export function presentIncomingRollout(row: RolloutRow, progress: Progress): z.infer<typeof incomingRolloutSchema> {
  return {
    rolloutId: row.id,
    configurationId: row.configuration_id,
    version: row.version,
    state: row.state,
    reason: row.reason,
    progress: { ...progress },
  };
}
