/**
 * The rollout template's half of the GitOps pipeline: for every version a sweep published,
 * a rollout with the template's target and strategy, created and moved to `running` the way
 * an operator's create + start would (target check, one active rollout per agent, the
 * approved policies judging every target agent). The git-sync workflow then starts each
 * rollout's workflow. A refusal is that file's error in the run, and no rollout is left behind.
 */
import type { Knex } from 'knex';
import type { GitSourceRow } from '../../db/repos/git-sources';
import {
  addSyncRunRollout,
  type SyncRunChange,
  type SyncRunFileError,
  type SyncRunRow,
} from '../../db/repos/git-sync-runs';
import { findRolloutById } from '../../db/repos/rollouts';
import { DomainError } from '../../domain/errors';
import { createRollout, STRATEGY_DEFAULTS } from '../../domain/rollout-creation';
import type { FetchedCommit } from './repository';
import type { RolloutStrategy, RolloutTarget } from '../../domain/rollouts';

export interface RolloutTemplate {
  target: Partial<RolloutTarget>;
  strategy: Partial<RolloutStrategy>;
}

/** What the workflow needs to start a rollout's workflow. */
export interface TemplateRollout {
  rolloutId: string;
  configurationId: string;
  tenantId: string;
}

export function templateOf(source: GitSourceRow): RolloutTemplate | undefined {
  const template = source.rollout_template as RolloutTemplate | null;
  return template?.target && template.strategy ? template : undefined;
}

/** Moves a template's rollout from `pending` to `running`, as an operator's start would. */
export type Transition = (rolloutId: string, actor: string) => Promise<unknown>;

/**
 * Creates and starts a rollout for each published change; records its id on the change and
 * on the run (in the rollout's transaction), or the refusal as the file's error.
 */
export async function createTemplateRollouts(
  db: Knex,
  run: Pick<SyncRunRow, 'id'>,
  source: GitSourceRow,
  template: RolloutTemplate,
  commit: FetchedCommit,
  changes: SyncRunChange[],
  transition: Transition,
): Promise<{ rollouts: TemplateRollout[]; fileErrors: SyncRunFileError[] }> {
  const rollouts: TemplateRollout[] = [];
  const fileErrors: SyncRunFileError[] = [];
  const actor = `git:${source.name}`;
  for (const change of changes) {
    if (!change.published || change.version === undefined) continue;
    try {
      const rolloutId = await db.transaction(async (trx) => {
        const id = await createTemplateRollout(trx, source, template, commit, change as Required<SyncRunChange>);
        await addSyncRunRollout(trx, run.id, id);
        return id;
      });
      await transition(rolloutId, actor);
      change.rolloutId = rolloutId;
      rollouts.push({ rolloutId, configurationId: change.configurationId, tenantId: source.tenant_id });
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      fileErrors.push({ path: change.path, error: `rollout not started: ${error.message}` });
    }
  }
  return { rollouts, fileErrors };
}

/**
 * The rollouts an earlier attempt of this run created (its worker died before the sweep
 * finished): a retry sees their files unchanged and would not create them again, so their
 * workflows are started from here. One still `pending` (the attempt died before starting it)
 * is moved to running first.
 */
export async function resumeTemplateRollouts(
  db: Knex,
  run: Pick<SyncRunRow, 'rollout_ids'>,
  source: GitSourceRow,
  transition: Transition,
): Promise<TemplateRollout[]> {
  const resumed: TemplateRollout[] = [];
  for (const id of run.rollout_ids) {
    const rollout = await findRolloutById(db, id);
    if (rollout?.state === 'pending') await transition(id, `git:${source.name}`);
    if (rollout?.state !== 'pending' && rollout?.state !== 'running') continue;
    resumed.push({ rolloutId: id, configurationId: rollout.configuration_id, tenantId: rollout.tenant_id });
  }
  return resumed;
}

async function createTemplateRollout(
  trx: Knex.Transaction,
  source: GitSourceRow,
  template: RolloutTemplate,
  commit: FetchedCommit,
  change: Required<Pick<SyncRunChange, 'configurationId' | 'version' | 'name' | 'path'>> & SyncRunChange,
): Promise<string> {
  const { row } = await createRollout(trx, {
    tenantId: source.tenant_id,
    name: `${change.name} v${change.version} from Git`,
    description: `${commit.sha.slice(0, 12)}: ${commit.message.split('\n')[0]}`.slice(0, 2000),
    configurationId: change.configurationId,
    version: change.version,
    target: {
      groupIds: template.target.groupIds ?? [],
      agentIds: template.target.agentIds ?? [],
      labelSelector: template.target.labelSelector ?? null,
    },
    strategy: { ...STRATEGY_DEFAULTS, ...template.strategy },
    createdBy: `git:${source.name}`,
    judge: true,
  });
  return row.id;
}
