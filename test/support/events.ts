/** Checks on the events the service stores in its outbox (what subscribers receive). */
import type { Knex } from 'knex';

/**
 * A rollout's `rollout.created` has one shape whoever created the rollout (an operator, a
 * Git template, a federation peer): the rollout's own path as source, and as data the
 * rollout as `GET /api/rollouts/{id}` shows it (`shown`, read from the API), pending.
 */
export async function expectRolloutCreatedAsShown(
  db: Knex,
  rolloutId: string,
  shown: Record<string, unknown>,
): Promise<void> {
  const events = await db('events').where({ subject: rolloutId, type: 'rollout.created' }).select('source', 'data');
  expect(events).toHaveLength(1);
  const [{ source, data }] = events;
  expect(source).toBe(`/api/rollouts/${rolloutId}`);
  expect(Object.keys(data).sort()).toEqual(Object.keys(shown).sort());
  expect(data).toMatchObject({
    id: rolloutId,
    state: 'pending',
    configurationId: shown.configurationId,
    version: shown.version,
    contentHash: shown.contentHash,
    target: shown.target,
    strategy: shown.strategy,
    createdBy: shown.createdBy,
    createdAt: shown.createdAt,
  });
}

/**
 * A configuration's `configuration.created` has one shape whoever created it (an operator,
 * a Git source's new file, a federated copy): as data the configuration as
 * `GET /api/configurations/{id}` shows it (`shown`) when it was created.
 */
export async function expectConfigurationCreatedAsShown(
  db: Knex,
  configurationId: string,
  shown: Record<string, unknown>,
): Promise<void> {
  const events = await db('events')
    .where({ subject: configurationId, type: 'configuration.created' })
    .select('source', 'data');
  expect(events).toHaveLength(1);
  const [{ source, data }] = events;
  expect(source).toBe('/api/configurations');
  expect(Object.keys(data).sort()).toEqual(Object.keys(shown).sort());
  expect(data).toMatchObject({
    id: configurationId,
    name: shown.name,
    format: shown.format,
    managedBy: shown.managedBy,
    sourcePath: shown.sourcePath,
    createdAt: shown.createdAt,
  });
}
