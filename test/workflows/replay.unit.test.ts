/**
 * Histories recorded from real runs (test/workflows/histories, by `npm run record:histories`)
 * of rollouts, Git sync loops, handovers, federated rollouts and the peer-health loop,
 * replayed against today's workflow code: a change that would make running workflows
 * non-deterministic fails here. When such a change is intended, it
 * must be versioned (`patched()`), not re-recorded away.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode, DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { HISTORIES_DIR, historyFromFile } from '../support/histories';

const files = readdirSync(HISTORIES_DIR)
  .filter((file) => file.endsWith('.json'))
  .sort();
const load = (file: string) => historyFromFile(readFileSync(path.join(HISTORIES_DIR, file), 'utf8'));

test('the recorded histories cover a completed rollout, pause and resume, continue-as-new and a rollback', () => {
  const types = files.map((file) =>
    (load(file).events ?? []).map((event) => Object.keys(event).find((key) => key.endsWith('Attributes'))).join(' '),
  );
  expect(files.length).toBeGreaterThanOrEqual(4);
  expect(types.some((events) => events.includes('workflowExecutionContinuedAsNewEventAttributes'))).toBe(true);
  expect(types.some((events) => events.includes('workflowExecutionCompletedEventAttributes'))).toBe(true);
  expect(files.some((file) => file.includes('rollback'))).toBe(true);
  expect(files.some((file) => file.includes('pause'))).toBe(true);
});

test('they cover every long-running workflow: Git sync, handovers, federated rollouts and peer health too', () => {
  for (const workflow of [
    'git-sync-',
    'handover-completed',
    'handover-compensated',
    'federated-rollout-',
    'peer-health',
  ])
    expect({ workflow, recorded: files.some((file) => file.startsWith(workflow)) }).toEqual({
      workflow,
      recorded: true,
    });
});

test('every recorded history replays against the current workflow code', async () => {
  if (!Runtime._instance) Runtime.install({ logger: new DefaultLogger('WARN') });
  const workflowBundle = await bundleWorkflowCode({
    workflowsPath: require.resolve('../../workflows'),
    logger: new DefaultLogger('WARN'),
  });
  const failures: string[] = [];
  for (const file of files) {
    await Worker.runReplayHistory({ workflowBundle }, load(file), file).catch((error: Error) =>
      failures.push(`${file}: ${error.message}`),
    );
  }
  expect(failures).toEqual([]);
}, 60_000);
