/**
 * What the federated rollout activities share: a part as the workflow names it, its context
 * (rows and key), and what it reports, recorded on its row with the
 * `federation.rollout.installation-updated` event.
 */
import type { Knex } from 'knex';
import { isDeepStrictEqual } from 'node:util';
import { emitEvents } from '../../db/repos/events';
import {
  findFederatedRolloutById,
  findInstallation,
  touchFederatedRollout,
  updateInstallation,
  type InstallationChanges,
} from '../../db/repos/federated-rollouts';
import { installationId } from '../../db/repos/installation';
import { federationKey } from '../../domain/federation/rollout-calls';
import type { InstallationState } from '../../domain/rollouts';
import type { PartContext, PartStatus } from './rollout-parts';

/** One installation's part of a federated rollout, as the workflow names it. */
export type Part = { federatedRolloutId: string; position: number };

/** The part's federated rollout, its installation row and its key; a part that does not exist fails the activity. */
export async function contextOf(db: Knex, { federatedRolloutId, position }: Part): Promise<PartContext> {
  const rollout = await findFederatedRolloutById(db, federatedRolloutId);
  const installation = await findInstallation(db, federatedRolloutId, position);
  if (!rollout || !installation) throw new Error(`federated rollout ${federatedRolloutId}/${position} does not exist`);
  return { rollout, installation, key: federationKey(await installationId(db), federatedRolloutId, position) };
}

/** Records what the part reported; a change is announced, and a new state is a new ETag. */
export async function record(
  db: Knex,
  { federatedRolloutId, position }: Part,
  changes: InstallationChanges,
): Promise<void> {
  await db.transaction(async (trx) => {
    const updated = await updateInstallation(trx, federatedRolloutId, position, changes);
    if (!updated) return;
    const { before, after } = updated;
    const changed = (['state', 'progress', 'problem', 'rollout_id'] as const).some(
      (column) => !isDeepStrictEqual(before[column], after[column]),
    );
    if (!changed) return;
    if (before.state !== after.state) await touchFederatedRollout(trx, federatedRolloutId);
    const rollout = (await findFederatedRolloutById(trx, federatedRolloutId))!;
    await emitEvents(trx, [
      {
        tenantId: rollout.tenant_id,
        type: 'federation.rollout.installation-updated',
        source: `/api/federation/rollouts/${federatedRolloutId}`,
        subject: federatedRolloutId,
        data: {
          federatedRolloutId,
          position,
          installation: after.installation_name,
          peerId: after.peer_id,
          state: after.state,
          rolloutId: after.rollout_id,
          progress: after.progress,
          problem: after.problem,
        },
      },
    ]);
  });
}

/** The changes to a part's row that a status read from its installation makes (and clears its problem). */
export const reported = (status: PartStatus): InstallationChanges => ({
  state: status.state as InstallationState,
  rollout_id: status.rolloutId,
  remote_configuration_id: status.configurationId,
  remote_version: status.version,
  progress: status.progress,
  problem: null,
});
