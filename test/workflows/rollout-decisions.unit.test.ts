/**
 * The rollout workflow's decisions alone: its activities are stubs over an in-memory
 * rollout, so each case says what the workflow does with what the activities answer
 * (judge a batch, bake, roll back, pause, follow an operator), on Temporal's time-skipping
 * test server, in about a second each. The same workflow with its real activities on
 * Postgres and real agents is test/api/rollouts.test.ts and test/workflows/rollout-time-skipping.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { heartbeat, sleep } from '@temporalio/activity';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import {
  bundleWorkflowCode,
  DefaultLogger,
  Runtime,
  Worker,
  type WorkflowBundleWithSourceMap,
} from '@temporalio/worker';
import type { LoadedRollout, TransitionResult } from '../../activities/rollouts';
import type { RolloutState, RolloutStrategy } from '../../domain/rollouts';
import {
  operateRolloutUpdate,
  rolloutStatusQuery,
  rolloutWorkflowType,
  type BatchOutcome,
  type RolloutCounts,
  type RolloutWorkflow,
} from '../../workflows/definitions';
import { eventually } from '../support/eventually';
import { startTimeSkippingTemporal } from '../support/time-skipping';

let temporal: TestWorkflowEnvironment;
let bundle: WorkflowBundleWithSourceMap;
beforeAll(async () => {
  if (!Runtime._instance) Runtime.install({ logger: new DefaultLogger('WARN') });
  temporal = await startTimeSkippingTemporal();
  bundle = await bundleWorkflowCode({
    workflowsPath: require.resolve('../../workflows'),
    logger: new DefaultLogger('WARN'),
  });
}, 90_000);
afterAll(() => temporal?.teardown());

const STRATEGY: RolloutStrategy = {
  batchSize: 1,
  bakeSeconds: 3600,
  applyTimeoutSeconds: 300,
  maxFailurePercent: 0,
  onFailure: 'pause',
};

type Answer = Pick<BatchOutcome, 'succeeded' | 'failed' | 'skipped'>;

/**
 * A rollout that exists only in memory, `running` from the start, with one agent per batch
 * answering as `answers` say. `calls` records what the workflow asked for, in order.
 */
function stubRollout(
  strategy: RolloutStrategy,
  answers: Answer[],
  /** The health gate's watch of batch `batch` baking until `until` (default: nobody fails). */
  watch: (batch: number, until: number) => Promise<number> = async () => 0,
  /** A rollout created with a startAt starts out `pending` (the default: already `running`). */
  created: { state?: RolloutState; startAt?: number } = {},
) {
  const calls: string[] = [];
  /** When (the test server's skipped time) each batch was pushed, and each window wait announced. */
  const pushedAt: number[] = [];
  const announced: Array<{ batch: number; opensAt: number }> = [];
  let state: RolloutState = created.state ?? 'running';
  let rowVersion = 1;
  let reason: string | null = null;
  const counts: RolloutCounts = {
    progress: { total: answers.length, pending: 0, applying: 0, deferred: 0, succeeded: 0, failed: 0, skipped: 0 },
    rollback: null,
  };
  const activities = {
    async loadRollout(): Promise<LoadedRollout> {
      return {
        tenantId: 'default',
        state,
        rowVersion,
        currentBatch: 0,
        strategy,
        reason,
        counts,
        summary: 'stub',
        startAt: created.startAt ?? null,
      };
    },
    async transitionRollout(change: { from: RolloutState[]; to: RolloutState; reason?: string | null }) {
      if (!change.from.includes(state)) return { ok: false, why: 'state', state, rowVersion } as TransitionResult;
      calls.push(`→ ${change.to}`);
      state = change.to;
      rowVersion += 1;
      if (change.reason !== undefined) reason = change.reason;
      return { ok: true, state, rowVersion, counts } as TransitionResult;
    },
    async prepareBatch({ batch }: { batch: number }) {
      calls.push(`prepare ${batch}`);
      return { running: state === 'running', agents: batch <= answers.length ? 1 : 0, denied: 0 };
    },
    async pushBatch({ batch }: { batch: number }) {
      calls.push(`push ${batch}`);
      pushedAt.push(await temporal.currentTimeMs());
      return { pushed: 1, skipped: 0 };
    },
    async awaitBatch({ batch }: { batch: number }) {
      return { batch, pushed: 1, ...answers[batch - 1]!, awaited: 1, counts };
    },
    async watchBatchHealth({ batch, until }: { batch: number; until: number }) {
      calls.push(`watch ${batch}`);
      const failedNow = await watch(batch, until);
      const answer = answers[batch - 1]!;
      const outcome = {
        batch,
        pushed: 1,
        ...answer,
        succeeded: answer.succeeded - failedNow,
        failed: answer.failed + failedNow,
      };
      return { failedNow, outcome, counts };
    },
    async announceWindowWait(wait: { batch: number; opensAt: number }) {
      announced.push({ batch: wait.batch, opensAt: wait.opensAt });
    },
    async abandonBatch() {
      calls.push('abandon');
      return 0;
    },
    async startRollback() {
      calls.push('roll back');
      return { pushed: 1 };
    },
    async awaitRollback() {
      return { waitingAfterTimeout: 0 };
    },
  };
  return { calls, activities, counts, reason: () => reason, pushedAt, announced };
}

/** Runs the workflow over the stub until `until` returns; the time-skipping server skips the bakes. */
async function run<T>(
  stub: ReturnType<typeof stubRollout>,
  until: (handle: Awaited<ReturnType<TestWorkflowEnvironment['client']['workflow']['start']>>) => Promise<T>,
): Promise<T> {
  const taskQueue = `decisions-${randomUUID()}`;
  const worker = await Worker.create({
    connection: temporal.nativeConnection,
    namespace: temporal.namespace ?? 'default',
    taskQueue,
    workflowBundle: bundle,
    activities: stub.activities,
    // A cancelled activity hears of it at its next heartbeat that reaches the server: at once, here.
    maxHeartbeatThrottleInterval: '50 ms',
    defaultHeartbeatThrottleInterval: '50 ms',
  });
  return worker.runUntil(async () => {
    const handle = await temporal.client.workflow.start<RolloutWorkflow>(rolloutWorkflowType, {
      taskQueue,
      workflowId: `rollout:${randomUUID()}`,
      args: [{ rolloutId: randomUUID(), tenantId: 'default' }],
    });
    return until(handle);
  });
}

const ok: Answer = { succeeded: 1, failed: 0, skipped: 0 };
const failed: Answer = { succeeded: 0, failed: 1, skipped: 0 };

test('healthy batches bake an hour each (in skipped time) and the rollout completes once no agent is left', async () => {
  const stub = stubRollout(STRATEGY, [ok, ok, ok]);
  const outcome = await run(stub, (handle) => handle.result());
  expect(outcome.state).toBe('completed');
  expect(stub.calls).toEqual([
    'prepare 1',
    'push 1',
    'prepare 2',
    'push 2',
    'prepare 3',
    'push 3',
    'prepare 4',
    '→ completed',
  ]);
});

test('a batch over maxFailurePercent with onFailure rollback rolls back, and no further batch is pushed', async () => {
  const stub = stubRollout({ ...STRATEGY, onFailure: 'rollback' }, [ok, failed, ok]);
  const outcome = await run(stub, (handle) => handle.result());
  expect(outcome.state).toBe('rolled-back');
  expect(stub.calls).toEqual([
    'prepare 1',
    'push 1',
    'prepare 2',
    'push 2',
    '→ rolling-back',
    'roll back',
    '→ rolled-back',
  ]);
  expect(stub.reason()).toBe('1 of 1 agents of batch 2 failed (100.0% > maxFailurePercent 0)');
});

test('within maxFailurePercent a failed agent does not stop the rollout', async () => {
  const half: Answer = { succeeded: 1, failed: 1, skipped: 0 };
  const stub = stubRollout({ ...STRATEGY, maxFailurePercent: 50 }, [half, ok]);
  expect((await run(stub, (handle) => handle.result())).state).toBe('completed');
});

test('onFailure pause waits for an operator: a resume goes on with the next batch, an abort ends it', async () => {
  const stub = stubRollout(STRATEGY, [failed, ok, ok]);
  const outcome = await run(stub, async (handle) => {
    const status = () => handle.query(rolloutStatusQuery);
    await eventually(async () => expect((await status()).state).toBe('paused'));
    const resumed = await handle.executeUpdate(operateRolloutUpdate, {
      args: [{ operation: 'resume', actor: 'alice' }],
    });
    expect(resumed.state).toBe('running');
    // Batch 2 answered: it bakes for an hour, and the abort arrives meanwhile.
    await eventually(async () => expect((await status()).lastBatch?.batch).toBe(2));
    const aborted = await handle.executeUpdate(operateRolloutUpdate, {
      args: [{ operation: 'abort', actor: 'alice' }],
    });
    expect(aborted.state).toBe('aborted');
    return handle.result();
  });
  expect(outcome.state).toBe('aborted');
  expect(stub.calls).toEqual(['prepare 1', 'push 1', '→ paused', '→ running', 'prepare 2', 'push 2', '→ aborted']);
});

const GATED: RolloutStrategy = { ...STRATEGY, healthGate: { unhealthyAfterSeconds: 60, maxDisconnects: 3 } };

test('the health gate watches each batch while it bakes; agents it fails judge the batch again and roll it back', async () => {
  const stub = stubRollout({ ...GATED, onFailure: 'rollback' }, [ok, ok, ok], async (batch) => (batch === 2 ? 1 : 0));
  const outcome = await run(stub, (handle) => handle.result());
  expect(outcome.state).toBe('rolled-back');
  expect(stub.calls).toEqual([
    'prepare 1',
    'push 1',
    'watch 1',
    'prepare 2',
    'push 2',
    'watch 2',
    '→ rolling-back',
    'roll back',
    '→ rolled-back',
  ]);
  expect(stub.reason()).toBe('1 of 1 agents of batch 2 failed (100.0% > maxFailurePercent 0)');
});

test('a pause stops the health watch; after the resume it watches on to the same end of the bake', async () => {
  const untils: number[] = [];
  const stub = stubRollout(GATED, [ok], async (_batch, until) => {
    untils.push(until);
    if (untils.length > 1) return 0;
    // The first watch runs until the pause cancels it (heartbeats deliver the cancellation).
    for (;;) {
      heartbeat();
      await sleep(20);
    }
  });
  const outcome = await run(stub, async (handle) => {
    await eventually(async () => expect(stub.calls).toContain('watch 1'));
    await handle.executeUpdate(operateRolloutUpdate, { args: [{ operation: 'pause', actor: 'alice' }] });
    await handle.executeUpdate(operateRolloutUpdate, { args: [{ operation: 'resume', actor: 'alice' }] });
    return handle.result();
  });
  expect(outcome.state).toBe('completed');
  expect(stub.calls).toEqual([
    'prepare 1',
    'push 1',
    'watch 1',
    '→ paused',
    '→ running',
    'watch 1',
    'prepare 2',
    '→ completed',
  ]);
  expect(untils[1]).toBe(untils[0]);
});

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

test('a rollout started before its startAt is scheduled until then (pause and resume keep it so), and its first batch goes at startAt', async () => {
  const startAt = (await temporal.currentTimeMs()) + 3 * DAY;
  const stub = stubRollout({ ...STRATEGY, bakeSeconds: 0 }, [ok, ok], undefined, { state: 'pending', startAt });
  const outcome = await run(stub, async (handle) => {
    const operate = (operation: 'start' | 'pause' | 'resume') =>
      handle.executeUpdate(operateRolloutUpdate, { args: [{ operation, actor: 'alice' }] });
    expect((await operate('start')).state).toBe('scheduled');
    expect((await operate('pause')).state).toBe('paused');
    expect((await operate('resume')).state).toBe('scheduled');
    expect((await handle.query(rolloutStatusQuery)).state).toBe('scheduled');
    return handle.result(); // the test server skips the three days
  });
  expect(outcome.state).toBe('completed');
  expect(stub.calls).toEqual([
    '→ scheduled',
    '→ paused',
    '→ scheduled',
    '→ running',
    'prepare 1',
    'push 1',
    'prepare 2',
    'push 2',
    'prepare 3',
    '→ completed',
  ]);
  expect(stub.pushedAt[0]).toBeGreaterThanOrEqual(startAt);
});

test('an abort while scheduled ends the rollout without a batch', async () => {
  const startAt = (await temporal.currentTimeMs()) + DAY;
  const stub = stubRollout(STRATEGY, [ok], undefined, { state: 'pending', startAt });
  const outcome = await run(stub, async (handle) => {
    await handle.executeUpdate(operateRolloutUpdate, { args: [{ operation: 'start', actor: 'alice' }] });
    await handle.executeUpdate(operateRolloutUpdate, { args: [{ operation: 'abort', actor: 'alice' }] });
    return handle.result();
  });
  expect(outcome.state).toBe('aborted');
  expect(stub.calls).toEqual(['→ scheduled', '→ aborted']);
});

test('windows: each batch starts inside a window (Saturdays 10:00–11:00 UTC); a batch that bakes past the close waits a week for the next', async () => {
  const windows = [{ days: ['sat' as const], from: '10:00', to: '11:00', timeZone: 'UTC' }];
  const stub = stubRollout({ ...STRATEGY, bakeSeconds: 3600, windows }, [ok, ok, ok]);
  const outcome = await run(stub, (handle) => handle.result());
  expect(outcome.state).toBe('completed');
  expect(stub.pushedAt).toHaveLength(3);
  for (const at of stub.pushedAt) {
    const pushed = new Date(at);
    expect(pushed.getUTCDay()).toBe(6);
    expect(pushed.getUTCHours()).toBe(10);
  }
  // Each batch baked an hour past the close: the next waited for the next Saturday.
  expect(stub.pushedAt[1]! - stub.pushedAt[0]!).toBeGreaterThanOrEqual(7 * DAY - HOUR);
  expect(stub.pushedAt[2]! - stub.pushedAt[1]!).toBeGreaterThanOrEqual(7 * DAY - HOUR);
  // Batches 2 and 3 (and the completion's look for a batch 4) announced their wait with the opening.
  expect(stub.announced.map((wait) => wait.batch).slice(-3)).toEqual([2, 3, 4]);
  for (const wait of stub.announced) expect(new Date(wait.opensAt).getUTCHours()).toBe(10);
});

test('a week of late arrivals in seconds: the workflow holds the window, watching in slots of 12 hours, and closes it', async () => {
  const stub = stubRollout({ ...STRATEGY, offlineAgents: 'defer', lateArrivalSeconds: 7 * 86_400 }, [ok]);
  stub.counts.progress.deferred = 1; // offline at its push, and it never comes back
  const slots: number[] = [];
  let expiredAt = 0;
  Object.assign(stub.activities, {
    // The real watch polls for the agent until the slot's end; this one finds nobody at once.
    async awaitLateArrivals({ until }: { until?: number }) {
      slots.push(until ?? 0);
      return { done: false, deferred: 1, counts: stub.counts };
    },
    async expireLateArrivals() {
      expiredAt = await temporal.currentTimeMs();
      stub.counts.progress.deferred = 0;
      stub.counts.progress.skipped = 1;
      return { counts: stub.counts };
    },
  });
  const startedAt = await temporal.currentTimeMs();
  const outcome = await run(stub, (handle) => handle.result());
  expect(outcome).toMatchObject({ state: 'completed', counts: { progress: { deferred: 0, skipped: 1 } } });
  // Fourteen slots of 12 hours, each starting where the last ended (the last one cut at the
  // window's end), then the window closed.
  expect(slots).toHaveLength(14);
  for (let i = 1; i < slots.length; i++) expect(Math.abs(slots[i]! - slots[i - 1]! - 12 * HOUR)).toBeLessThan(60_000);
  // The batch baked its hour, the rollout completed, and the window ran 7 days from then.
  expect(expiredAt - startedAt).toBeGreaterThanOrEqual(7 * DAY + HOUR);
  expect(expiredAt - startedAt).toBeLessThan(7 * DAY + 2 * HOUR);
});
