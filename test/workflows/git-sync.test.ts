/**
 * The git-sync loop end to end: real repositories (bare on disk, and over smart HTTP with
 * basic auth), the real worker on the suite's Temporal dev server, the real api, and
 * simulated agents for the rollout-template pipeline.
 */
import { createHash, randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ensureTenant } from '../../db/repos/tenants';
import { REPOSITORY_UNREACHABLE } from '../../activities/git/repository';
import { sealCredentials, type GitCredentials } from '../../domain/git/credentials';
import {
  gitSyncWakeSignal,
  gitSyncStatusQuery,
  gitSyncWorkflowId,
  gitSyncWorkflowType,
  type GitSyncWake,
  type GitSyncWorkflow,
} from '../../workflows/definitions';
import { gitSourceIdKey, tenantIdKey } from '../../workflows/search-attributes';
import { eventually } from '../support/eventually';
import { recordHistories } from '../support/histories';
import { createTestRepository, startSmartHttpServer, type TestRepository } from '../../scripts/infra/git';
import { capturedLogger } from '../support/logs';
import { testOutbound } from '../support/outbound';
import { freePort } from '../support/processes';
import { testInfra } from '../support/infra-env';
import { startRolloutEnv, type RolloutEnv } from '../support/rollout-env';
import { serverCertificate, testCa } from '../support/tls';
import { expectConfigurationCreatedAsShown, expectRolloutCreatedAsShown } from '../support/events';

const { logger: workerLogger, lines: logLines } = capturedLogger('info');

let env: RolloutEnv;
let admin: string;
let workDir: string;
let fileRoot: string;
const repositories: TestRepository[] = [];

beforeAll(async () => {
  workDir = await mkdtemp(join(tmpdir(), 'fleet-git-work-'));
  // The worker reads file:// repositories under this directory only (every repository this
  // file makes is there), so "outside Git:FileRoots" is somewhere real on any machine.
  fileRoot = await mkdtemp(join(tmpdir(), 'fleet-git-roots-'));
  env = await startRolloutEnv({
    workerLogger,
    workerOutbound: testOutbound(workerLogger),
    workerEnv: { Git__WorkDir: workDir, Git__FileRoots: fileRoot },
    apiEnv: { Http__TrustProxy: 'true' }, // webhooks arrive "over HTTPS" through a proxy (Production refuses HTTP)
  });
  await ensureTenant(env.t.database.db, 'default');
  admin = await env.t.token('default.admin');
}, 60_000);
afterAll(async () => {
  await env?.close();
  await Promise.all(repositories.map((repository) => repository.remove()));
  await rm(workDir, { recursive: true, force: true });
  await rm(fileRoot, { recursive: true, force: true });
});

const db = () => env.t.database.db;
const call = (method: string, path: string, body?: unknown) => env.t.call(method, path, { token: env.operator, body });

async function repository(files: Parameters<TestRepository['commit']>[0] = { 'otel.yaml': 'receivers: {}\n' }) {
  const repo = await createTestRepository(fileRoot);
  repositories.push(repo);
  await repo.commit(files, { message: 'first configurations' });
  return repo;
}

interface SourceOptions {
  pollIntervalSeconds?: number;
  paused?: boolean;
  autoPublish?: boolean;
  path?: string;
  credentials?: GitCredentials;
  rolloutTemplate?: unknown;
}

/** A source registered through the API (which starts its loop), with a webhook token. */
async function registerSource(repoUrl: string, fields: Record<string, unknown> = {}) {
  const created = await call('POST', '/api/git-sources', {
    name: `source-${randomUUID().slice(0, 8)}`,
    repoUrl,
    branch: 'main',
    pollIntervalSeconds: 3600,
    ...fields,
  });
  expect(created.status).toBe(201);
  const issued = await env.t.call('POST', `/api/git-sources/${created.body.id}/webhook-token`, { token: admin });
  expect(issued.status).toBe(201);
  return { id: created.body.id as string, webhookToken: issued.body.token as string };
}

/** A delivery from the Git host: an unparsed body and the token, behind an HTTPS proxy. */
async function deliver(source: { id: string; webhookToken: string }) {
  const reply = await env.t.call('POST', `/api/git/webhook/${source.id}`, {
    raw: '{"ref":"refs/heads/main"}',
    headers: {
      'content-type': 'application/json',
      'x-forwarded-proto': 'https',
      'x-service-webhook-token': source.webhookToken,
    },
  });
  return reply;
}

interface ApiRun {
  id: string;
  trigger: string;
  status: string;
  commitSha: string | null;
  changes: Array<{
    path: string;
    configurationId: string;
    name: string;
    change: string;
    version?: number;
    rolloutId?: string;
  }>;
  fileErrors: Array<{ path: string; error: string }>;
  error: string | null;
  rolloutId: string | null;
}

/** Waits until the source has `count` runs, all finished, through GET .../sync-runs (oldest first). */
async function runsThroughApi(sourceId: string, count: number, timeoutMs = 15_000): Promise<ApiRun[]> {
  return eventually(async () => {
    const page = await call('GET', `/api/git-sources/${sourceId}/sync-runs`);
    expect(page.status).toBe(200);
    const runs = [...(page.body.items as ApiRun[])].reverse();
    expect(runs.length).toBeGreaterThanOrEqual(count);
    expect(runs.map((run) => run.status)).not.toContain('running');
    return runs;
  }, timeoutMs);
}

/** A Git source row, as the api writes it (credentials sealed with the api's key). */
async function createSource(repoUrl: string, options: SourceOptions = {}): Promise<string> {
  const id = randomUUID();
  await db()('git_sources').insert({
    id,
    tenant_id: 'default',
    name: `source-${id.slice(0, 8)}`,
    repo_url: repoUrl,
    branch: 'main',
    path: options.path ?? '',
    poll_interval_seconds: options.pollIntervalSeconds ?? 3600,
    auto_publish: options.autoPublish ?? false,
    paused: options.paused ?? false,
    rollout_template: options.rolloutTemplate ? JSON.stringify(options.rolloutTemplate) : null,
    created_by: 'test',
    ...sealCredentials(env.t.settings.encryptionKey!, id, options.credentials ?? null),
  });
  return id;
}

/** What the api does on create, webhook, sync, change and delete: signal-with-start. */
async function wake(sourceId: string, wake: GitSyncWake, historyLimit?: number) {
  await env.client.workflow.signalWithStart<GitSyncWorkflow, [GitSyncWake]>(gitSyncWorkflowType, {
    workflowId: gitSyncWorkflowId(sourceId),
    taskQueue: env.taskQueue,
    args: [{ sourceId, tenantId: 'default', historyLimit }],
    signal: gitSyncWakeSignal,
    signalArgs: [wake],
    typedSearchAttributes: [
      { key: gitSourceIdKey, value: sourceId },
      { key: tenantIdKey, value: 'default' },
    ],
  });
}

interface Run {
  id: string;
  trigger: string;
  status: string;
  commit_sha: string | null;
  changes: Array<{ path: string; name: string; change: string; version?: number; configurationId: string }>;
  file_errors: Array<{ path: string; error: string }>;
  error: string | null;
  rollout_id: string | null;
}

const runsOf = async (sourceId: string): Promise<Run[]> =>
  db()('git_sync_runs').where({ source_id: sourceId }).orderBy('started_at', 'asc');

/** Waits for the source's `count`-th run to finish, and returns all runs. */
async function finishedRuns(sourceId: string, count: number, timeoutMs = 15_000): Promise<Run[]> {
  return eventually(async () => {
    const runs = await runsOf(sourceId);
    expect(runs.length).toBeGreaterThanOrEqual(count);
    expect(runs.slice(0, count).map((run) => run.status)).not.toContain('running');
    return runs;
  }, timeoutMs);
}

/** Waits until the loop has handled every signal it received and is idle (no activity in flight). */
async function idle(sourceId: string) {
  const handle = env.client.workflow.getHandle(gitSyncWorkflowId(sourceId));
  await eventually(async () => {
    const { events } = await handle.fetchHistory();
    const list = events ?? [];
    const lastSignal = list.findLastIndex((event) => event.workflowExecutionSignaledEventAttributes);
    const lastTask = list.findLastIndex((event) => event.workflowTaskCompletedEventAttributes);
    expect(lastTask).toBeGreaterThan(lastSignal);
    const scheduled = list.filter((event) => event.activityTaskScheduledEventAttributes).length;
    const done = list.filter(
      (event) =>
        event.activityTaskCompletedEventAttributes ||
        event.activityTaskFailedEventAttributes ||
        event.activityTaskTimedOutEventAttributes,
    ).length;
    expect(done).toBe(scheduled);
  }, 15_000);
}

/** The server processes waiting for a row lock in a statement on `table`. */
async function waitingOnLock(table: string): Promise<number[]> {
  const waiting = await db().raw(
    `SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query ILIKE ? AND pid <> pg_backend_pid()`,
    [`%${table}%`],
  );
  return waiting.rows.map((row: { pid: number }) => row.pid);
}

async function configurationNamed(name: string) {
  const list = await call('GET', `/api/configurations?q=${encodeURIComponent(name)}`);
  return (list.body.items as Array<{ id: string; name: string }>).find((item) => item.name === name);
}

test('a push then a webhook: one run attributed to webhook, with the new SHA and the changed configurations; their versions carry the commit', async () => {
  const repo = await repository({ 'prod/otel-collector.yaml': 'receivers: {}\n', 'prod/agent.json': '{"a": 1}\n' });
  const source = await registerSource(repo.url, { path: 'prod' });
  const [first] = await runsThroughApi(source.id, 1);
  expect(first).toMatchObject({ trigger: 'poll', status: 'succeeded', commitSha: await repo.tip() });
  expect(first!.changes.map((change) => [change.name, change.change]).sort()).toEqual([
    ['agent', 'created'],
    ['otel-collector', 'created'],
  ]);

  const sha = await repo.commit(
    { 'prod/otel-collector.yaml': 'receivers:\n  otlp: {}\n' },
    { message: 'add the otlp receiver', author: 'Bob Builder' },
  );
  expect((await deliver(source)).status).toBe(202);
  const runs = await runsThroughApi(source.id, 2);
  expect(runs).toHaveLength(2);
  expect(runs[1]).toMatchObject({ trigger: 'webhook', status: 'succeeded', commitSha: sha, fileErrors: [] });
  expect(runs[1]!.changes).toEqual([
    expect.objectContaining({
      path: 'prod/otel-collector.yaml',
      name: 'otel-collector',
      change: 'updated',
      version: 2,
    }),
  ]);
  expect((await call('GET', `/api/git-sources/${source.id}`)).body.lastSyncedSha).toBe(sha);
  // The Temporal UI: the loop's summary names the source; its query says what woke the last run.
  const loop = env.client.workflow.getHandle(gitSyncWorkflowId(source.id));
  const named = (await call('GET', `/api/git-sources/${source.id}`)).body.name;
  expect(await (await loop.describe()).staticSummary()).toBe(`Git sync of '${named}'`);
  await eventually(async () =>
    expect(await loop.query(gitSyncStatusQuery)).toMatchObject({
      sourceId: source.id,
      name: named,
      branch: 'main',
      state: 'waiting',
      lastTrigger: 'webhook',
      lastRunId: runs[1]!.id,
      pendingWakes: 0,
    }),
  );

  const configuration = await configurationNamed('otel-collector');
  const shown = await call('GET', `/api/configurations/${configuration!.id}`);
  expect(shown.body).toMatchObject({
    managedBy: source.id,
    sourcePath: 'prod/otel-collector.yaml',
    sourceRemovedAt: null,
    format: 'yaml',
    latestVersion: 2,
    publishedVersion: null,
  });
  const version = await call('GET', `/api/configurations/${configuration!.id}/versions/2`);
  expect(version.body).toMatchObject({
    content: 'receivers:\n  otlp: {}\n',
    state: 'draft',
    author: 'git:Bob Builder',
    provenance: {
      sourceId: source.id,
      path: 'prod/otel-collector.yaml',
      commitSha: sha,
      author: 'Bob Builder',
      message: 'add the otlp receiver',
    },
  });
  const events = await db()('events')
    .where({ subject: source.id })
    .where('type', 'like', 'git.sync-run.%')
    .orderBy('seq')
    .pluck('type');
  expect(events).toEqual([
    'git.sync-run.started',
    'git.sync-run.succeeded',
    'git.sync-run.started',
    'git.sync-run.succeeded',
  ]);

  // Git owns it: the API refuses edits.
  const edit = await call('POST', `/api/configurations/${configuration!.id}/versions`, { content: 'x: 1\n' });
  expect(edit.status).toBe(409);
  expect(edit.body.type).toMatch(/managed-by-git$/);
});

test('20 webhooks in a row for one push make exactly one run', async () => {
  const repo = await repository();
  const source = await registerSource(repo.url);
  await runsThroughApi(source.id, 1);
  const sha = await repo.commit({ 'otel.yaml': 'receivers:\n  otlp: {}\n' });
  const replies = await Promise.all(Array.from({ length: 20 }, () => deliver(source)));
  expect(replies.map((reply) => reply.status)).toEqual(Array(20).fill(202));
  await runsThroughApi(source.id, 2);
  await idle(source.id);
  const runs = await runsThroughApi(source.id, 2);
  expect(runs.map((run) => [run.trigger, run.commitSha])).toEqual([
    ['poll', expect.any(String)],
    ['webhook', sha],
  ]);
});

test('a push with no webhook is found by the poll timer', async () => {
  const repo = await repository();
  const sourceId = await createSource(repo.url, { pollIntervalSeconds: 1 });
  await wake(sourceId, { reason: 'source-changed' });
  await finishedRuns(sourceId, 1);
  const sha = await repo.commit({ 'otel.yaml': 'receivers:\n  polled: {}\n' });
  const runs = await finishedRuns(sourceId, 2);
  expect(runs[1]).toMatchObject({ trigger: 'poll', status: 'succeeded', commit_sha: sha });
});

test('a paused source makes no run, whatever wakes it; resumed, it syncs', async () => {
  const repo = await repository();
  const sourceId = await createSource(repo.url, { paused: true });
  await wake(sourceId, { reason: 'source-changed' });
  await wake(sourceId, { reason: 'webhook' });
  await wake(sourceId, { reason: 'manual' });
  await idle(sourceId);
  expect(await runsOf(sourceId)).toEqual([]);

  await db()('git_sources').where({ id: sourceId }).update({ paused: false });
  await wake(sourceId, { reason: 'source-changed' });
  const [run] = await finishedRuns(sourceId, 1);
  expect(run).toMatchObject({ status: 'succeeded', commit_sha: await repo.tip() });
});

test('through the API: a paused source answers webhooks and makes no run; resumed, it syncs what was pushed', async () => {
  const repo = await repository();
  const source = await registerSource(repo.url);
  await runsThroughApi(source.id, 1);
  expect((await call('POST', `/api/git-sources/${source.id}/pause`)).status).toBe(200);
  const sha = await repo.commit({ 'otel.yaml': 'receivers:\n  paused: {}\n' });
  expect((await deliver(source)).status).toBe(202);
  await idle(source.id);
  expect(await runsThroughApi(source.id, 1)).toHaveLength(1);

  expect((await call('POST', `/api/git-sources/${source.id}/resume`)).status).toBe(200);
  const runs = await runsThroughApi(source.id, 2);
  expect(runs[1]).toMatchObject({ status: 'succeeded', commitSha: sha });
});

test('a forced sweep runs at the same tip, attributed to manual', async () => {
  const repo = await repository();
  const source = await registerSource(repo.url);
  await runsThroughApi(source.id, 1);
  expect((await call('POST', `/api/git-sources/${source.id}/sync`)).status).toBe(202);
  const runs = await runsThroughApi(source.id, 2);
  expect(runs[1]).toMatchObject({ trigger: 'manual', status: 'succeeded', commitSha: await repo.tip(), changes: [] });
});

test('a source read before a run is not answered 304 after it: its ETag moves with its runs', async () => {
  const repo = await repository();
  const source = await registerSource(repo.url);
  await runsThroughApi(source.id, 1);
  const before = await call('GET', `/api/git-sources/${source.id}`);
  const conditional = (etag: string) =>
    env.t.call('GET', `/api/git-sources/${source.id}`, { token: env.operator, headers: { 'if-none-match': etag } });
  expect((await conditional(before.headers.get('etag')!)).status).toBe(304);

  expect((await call('POST', `/api/git-sources/${source.id}/sync`)).status).toBe(202);
  const [, manual] = await runsThroughApi(source.id, 2);
  const after = await conditional(before.headers.get('etag')!);
  expect(after.status).toBe(200);
  expect(after.body.lastRun).toMatchObject({ id: manual!.id, status: 'succeeded' });
  expect(after.headers.get('etag')).not.toBe(before.headers.get('etag')!);
});

test('an invalid YAML file is reported with its line and column; the other files apply', async () => {
  const repo = await repository({
    'good.yaml': 'a: 1\n',
    'bad.yaml': 'a: [1, 2\nb: 3\n',
    'notes.md': '# not a configuration\n',
  });
  const sourceId = await createSource(repo.url, { autoPublish: true });
  await wake(sourceId, { reason: 'source-changed' });
  const [run] = await finishedRuns(sourceId, 1);
  expect(run!.status).toBe('succeeded');
  expect(run!.file_errors).toEqual([
    { path: 'bad.yaml', error: expect.stringMatching(/^line \d+, column \d+: invalid YAML/) },
  ]);
  expect(run!.changes).toEqual([
    expect.objectContaining({ path: 'good.yaml', name: 'good', change: 'created', version: 1, published: true }),
  ]);
  const good = await configurationNamed('good');
  expect((await call('GET', `/api/configurations/${good!.id}`)).body.publishedVersion).toBe(1);
  expect(await configurationNamed('bad')).toBeUndefined();
});

test('a file deleted from the branch marks its configuration; back again, the mark is cleared', async () => {
  const repo = await repository({ 'keep.yaml': 'a: 1\n', 'gone.yaml': 'b: 2\n' });
  const sourceId = await createSource(repo.url);
  await wake(sourceId, { reason: 'source-changed' });
  await finishedRuns(sourceId, 1);
  await repo.commit({ 'gone.yaml': null }, { message: 'remove gone' });
  await wake(sourceId, { reason: 'webhook' });
  const runs = await finishedRuns(sourceId, 2);
  expect(runs[1]!.changes).toEqual([expect.objectContaining({ path: 'gone.yaml', change: 'removed' })]);
  const gone = await configurationNamed('gone');
  const shown = await call('GET', `/api/configurations/${gone!.id}`);
  expect(shown.body.sourceRemovedAt).toEqual(expect.any(String));

  await repo.commit({ 'gone.yaml': 'b: 2\n' }, { message: 'restore gone' });
  await wake(sourceId, { reason: 'webhook' });
  const again = await finishedRuns(sourceId, 3);
  expect(again[2]!.changes).toEqual([expect.objectContaining({ path: 'gone.yaml', change: 'restored' })]);
  expect((await call('GET', `/api/configurations/${gone!.id}`)).body.sourceRemovedAt).toBeNull();
});

describe('trees as they are hosted', () => {
  /** A configuration's content at a version, through the API. */
  const contentOf = async (name: string, version = 1) => {
    const found = await configurationNamed(name);
    const shown = await call('GET', `/api/configurations/${found!.id}/versions/${version}`);
    return shown.body.content as string;
  };

  test('a symbolic link to a file of the source is followed (that content, under the link’s name); a link leaving the source is that file’s error, never its text', async () => {
    const tag = `ln-${randomUUID().slice(0, 6)}`;
    const app = 'receivers: { otlp: {} }\n';
    const repo = await repository({
      [`${tag}/app.yaml`]: app,
      [`${tag}/app-link.yaml`]: { link: 'app.yaml' },
      [`${tag}/nested/chain.yaml`]: { link: '../app-link.yaml' },
      [`${tag}/up.yaml`]: { link: '../shared/base.yaml' },
      [`${tag}/abs.yaml`]: { link: '/etc/hostname' },
      [`${tag}/gone.yaml`]: { link: 'missing.yaml' },
      [`${tag}/loop.yaml`]: { link: 'loop.yaml' },
      'shared/base.yaml': 'exporters: {}\n',
    });
    const sourceId = await createSource(repo.url, { path: tag });
    await wake(sourceId, { reason: 'source-changed' });
    const [run] = await finishedRuns(sourceId, 1);
    expect(run!.status).toBe('succeeded');
    expect(run!.changes.map((change) => change.name).sort()).toEqual(['app', 'app-link', 'nested/chain']);
    expect(await contentOf('app-link')).toBe(app);
    expect(await contentOf('nested/chain')).toBe(app);
    const errors = Object.fromEntries(run!.file_errors.map((error) => [error.path, error.error]));
    expect(errors).toEqual({
      [`${tag}/up.yaml`]: `a symbolic link to '../shared/base.yaml', outside the source's path '${tag}'`,
      [`${tag}/abs.yaml`]: `a symbolic link to '/etc/hostname', outside the source's path '${tag}'`,
      [`${tag}/gone.yaml`]: "a symbolic link to 'missing.yaml', which is not a file of the commit",
      [`${tag}/loop.yaml`]: 'more than 8 symbolic links in a row',
    });
    const managed = await db()('configurations').where({ managed_by: sourceId }).pluck('name');
    expect(managed.sort()).toEqual(['app', 'app-link', 'nested/chain']);
  });

  test('two files that name one configuration are both errors naming each other: nothing is created, and unrelated commits add no version', async () => {
    const tag = `dup-${randomUUID().slice(0, 6)}`;
    const repo = await repository({ [`${tag}.yaml`]: 'a: 1\n', [`${tag}-other.yaml`]: 'b: 1\n' });
    const sourceId = await createSource(repo.url, { autoPublish: true });
    await wake(sourceId, { reason: 'source-changed' });
    await finishedRuns(sourceId, 1);
    const existing = await configurationNamed(tag);

    await repo.commit({ [`${tag}.yml`]: 'a: 2\n' }, { message: 'a second file for the same name' });
    await wake(sourceId, { reason: 'webhook' });
    const runs = await finishedRuns(sourceId, 2);
    const both = `both name the configuration '${tag}'; rename or remove all but one`;
    expect(runs[1]!.changes).toEqual([]);
    expect(runs[1]!.file_errors).toEqual([
      { path: `${tag}.yaml`, error: `'${tag}.yaml' and '${tag}.yml' ${both}` },
      { path: `${tag}.yml`, error: `'${tag}.yml' and '${tag}.yaml' ${both}` },
    ]);
    // Unrelated commits: the configuration stays as it was, not removed, no version added.
    for (const round of [2, 3]) {
      await repo.commit({ [`${tag}-other.yaml`]: `b: ${round}\n` }, { message: `unrelated ${round}` });
      await wake(sourceId, { reason: 'webhook' });
      const after = await finishedRuns(sourceId, round + 1);
      expect(after[round]!.changes).toEqual([expect.objectContaining({ name: `${tag}-other`, change: 'updated' })]);
    }
    const shown = await call('GET', `/api/configurations/${existing!.id}`);
    expect(shown.body).toMatchObject({ latestVersion: 1, sourceRemovedAt: null });
    expect(await contentOf(tag)).toBe('a: 1\n');
  });

  test('a tree that fails the same way at the same tip (1,001 files) adds one failed run, not one per poll; fixed, the next poll syncs', async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i <= 1000; i++) files[`many/f${i}.yaml`] = `i: ${i}\n`;
    const repo = await repository(files);
    const sourceId = await createSource(repo.url, { path: 'many', pollIntervalSeconds: 1 });
    await wake(sourceId, { reason: 'source-changed' });
    const [run] = await finishedRuns(sourceId, 1);
    expect(run).toMatchObject({ status: 'failed', commit_sha: await repo.tip() });
    expect(run!.error).toBe("1001 configuration files under 'many'; a source holds at most 1000");
    await eventually(async () => {
      const { events } = await env.client.workflow.getHandle(gitSyncWorkflowId(sourceId)).fetchHistory();
      expect((events ?? []).filter((event) => event.timerFiredEventAttributes).length).toBeGreaterThanOrEqual(3);
    }, 30_000);
    await idle(sourceId);
    expect(await runsOf(sourceId)).toHaveLength(1);

    await repo.commit({ 'many/f1000.yaml': null }, { message: 'back to 1,000' });
    const runs = await finishedRuns(sourceId, 2, 60_000);
    expect(runs[1]).toMatchObject({ status: 'succeeded', trigger: 'poll', commit_sha: await repo.tip() });
    await call('POST', `/api/git-sources/${sourceId}/pause`);
  }, 120_000);
});

test('a source deleted during its sweep: the sweep stops, and no configuration stays managed by the deleted source', async () => {
  const repo = await repository({ 'race/b.yaml': 'b: 1\n' });
  const source = await registerSource(repo.url);
  await runsThroughApi(source.id, 1);
  const b = (await configurationNamed('race/b'))!;

  // The next sweep's file transaction for b waits on this lock, holding the source, so the delete comes in mid-sweep.
  const lock = await db().transaction();
  await lock.raw('SELECT id FROM configurations WHERE id = ? FOR UPDATE', [b.id]);
  await repo.commit({ 'race/b.yaml': 'b: 2\n', 'race/c.yaml': 'c: 1\n' }, { message: 'b and c' });
  expect((await deliver(source)).status).toBe(202);
  await eventually(async () => expect(await waitingOnLock('configurations')).toHaveLength(1));
  const deleting = call('DELETE', `/api/git-sources/${source.id}`);
  // the delete waits for the sweep's file
  await eventually(async () => expect(await waitingOnLock('git_sources')).toHaveLength(1));
  await lock.rollback();
  expect((await deleting).status).toBe(204);

  const handle = env.client.workflow.getHandle(gitSyncWorkflowId(source.id));
  await eventually(async () => expect((await handle.describe()).status.name).toBe('COMPLETED'), 20_000);
  expect(await db()('configurations').where({ managed_by: source.id })).toEqual([]);
  expect((await call('GET', `/api/configurations/${b.id}`)).body).toMatchObject({ managedBy: null, latestVersion: 2 });
});

test('a name another configuration already uses is that file’s error; the configuration is not taken over', async () => {
  const taken = `taken-${randomUUID().slice(0, 8)}`;
  const created = await call('POST', '/api/configurations', { name: taken, format: 'yaml' });
  expect(created.status).toBe(201);
  const repo = await repository({ [`${taken}.yaml`]: 'a: 1\n' });
  const sourceId = await createSource(repo.url);
  await wake(sourceId, { reason: 'source-changed' });
  const [run] = await finishedRuns(sourceId, 1);
  expect(run!.file_errors).toEqual([
    { path: `${taken}.yaml`, error: expect.stringContaining('is not managed by this source') },
  ]);
  expect((await call('GET', `/api/configurations/${created.body.id}`)).body.managedBy).toBeNull();
});

describe('over smart HTTP with basic auth', () => {
  const TOKEN = 'glpat-s3cr3t-token-value-0123456789';
  const WRONG = 'glpat-wrong-token-value-9876543210';

  test('the right token syncs; a wrong one fails the run with an error, and log lines, that never show it', async () => {
    const repo = await repository({ 'otel.yaml': 'receivers: {}\n' });
    const server = await startSmartHttpServer(dirname(repo.bare), TOKEN);
    try {
      const url = `${server.baseUrl}repo.git`;
      const good = await createSource(url, { credentials: { kind: 'https', username: 'ci', token: TOKEN } });
      await wake(good, { reason: 'source-changed' });
      const [run] = await finishedRuns(good, 1);
      expect(run).toMatchObject({ status: 'succeeded', commit_sha: await repo.tip() });
      const config = await readFile(join(workDir, good, 'config'), 'utf8');
      expect(config).not.toContain(TOKEN);
      expect(config).not.toContain(server.baseUrl);

      const bad = await createSource(url, { credentials: { kind: 'https', token: WRONG } });
      await wake(bad, { reason: 'webhook' });
      const [failed] = await finishedRuns(bad, 1);
      expect(failed).toMatchObject({ status: 'failed', commit_sha: null });
      expect(failed!.error).toBe(
        'the repository refused the credentials (HTTP 401): check the token (and the username, for hosts that want one)',
      );
      expect(server.refused).toBeGreaterThan(0);
      const secrets = [WRONG, TOKEN, Buffer.from(`git:${WRONG}`).toString('base64')];
      const logged = logLines.join('');
      expect(logged).toContain(bad); // the failure was logged, with the source
      for (const secret of secrets) {
        expect(failed!.error).not.toContain(secret);
        expect(logged).not.toContain(secret);
      }
    } finally {
      await server.close();
    }
  });
});

describe('over HTTPS, the server’s certificate issued by an internal CA', () => {
  const TOKEN = 'gitea-token-0123456789abcdef';

  test('a source given the CA syncs; without it, or with another CA, the run says the certificate is not trusted; missing credentials say so', async () => {
    const ca = await testCa('Acme internal CA');
    const repo = await repository({ 'otel.yaml': 'receivers: {}\n' });
    const server = await startSmartHttpServer(dirname(repo.bare), TOKEN, {
      tls: await serverCertificate(ca, ['127.0.0.1']),
    });
    try {
      const url = `${server.baseUrl}repo.git`;
      const credentials = { kind: 'https', token: TOKEN };
      const trusting = await registerSource(url, { credentials, caCertificate: ca.certificatePem });
      const [run] = await runsThroughApi(trusting.id, 1);
      expect(run).toMatchObject({ status: 'succeeded', commitSha: await repo.tip() });
      const shown = await call('GET', `/api/git-sources/${trusting.id}`);
      expect(shown.body.caCertificate).toBe(ca.certificatePem.replace(/\r\n/g, '\n').trim() + '\n');

      const untrusted =
        /^the repository's TLS certificate is not trusted \(.+\); if an internal CA issued it, give the source that CA's certificate as caCertificate$/;
      const system = await registerSource(url, { credentials });
      const another = await registerSource(url, {
        credentials,
        caCertificate: (await testCa('Other CA')).certificatePem,
      });
      for (const source of [system, another]) {
        const [failed] = await runsThroughApi(source.id, 1);
        expect(failed).toMatchObject({ status: 'failed' });
        expect(failed!.error).toMatch(untrusted);
      }

      const anonymous = await registerSource(url, { caCertificate: ca.certificatePem });
      const [refused] = await runsThroughApi(anonymous.id, 1);
      expect(refused!.error).toBe('the repository asks for credentials (HTTP 401); the source has none');
    } finally {
      await server.close();
    }
  });
});

test('an SSH key is used from a private file that is deleted after; the refused connection fails the run, neutrally, without the key', async () => {
  const privateKey = `-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA-${randomUUID()}\n-----END OPENSSH PRIVATE KEY-----\n`;
  const keyDirs = async () => (await readdir(tmpdir())).filter((name) => name.startsWith('fleet-git-access-'));
  const before = await keyDirs();
  // Port 1 on loopback: nothing listens, so ssh fails at once (no sshd on the test machine).
  const sourceId = await createSource('ssh://git@127.0.0.1:1/fleet.git', {
    credentials: { kind: 'ssh', privateKey, knownHosts: '127.0.0.1 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIE' },
  });
  await wake(sourceId, { reason: 'manual' });
  const [run] = await finishedRuns(sourceId, 1);
  expect(run).toMatchObject({ status: 'failed', trigger: 'manual' });
  // A closed port reads as any destination that does not answer; why is the log's.
  expect(run!.error).toBe(REPOSITORY_UNREACHABLE);
  expect(logLines.filter((line) => line.includes('outbound connection failed')).join('')).toContain(
    'Connection refused',
  );
  expect(logLines.join('')).not.toContain(privateKey.split('\n')[1]);
  expect(await keyDirs()).toEqual(before);
});

test('an unreachable repository fails the run with a clear error; a poll meeting the same failure adds no run', async () => {
  const sourceId = await createSource(`file://${fileRoot}/${randomUUID()}/fleet-repo.git`, { pollIntervalSeconds: 1 });
  await wake(sourceId, { reason: 'source-changed' });
  const [run] = await finishedRuns(sourceId, 1);
  expect(run).toMatchObject({ status: 'failed', trigger: 'poll' });
  expect(run!.error).toMatch(/does not appear to be a git repository|not found|No such/i);
  // Three more polls: still one run.
  await eventually(async () => {
    const { events } = await env.client.workflow.getHandle(gitSyncWorkflowId(sourceId)).fetchHistory();
    expect((events ?? []).filter((event) => event.timerFiredEventAttributes).length).toBeGreaterThanOrEqual(3);
  }, 15_000);
  await idle(sourceId);
  expect(await runsOf(sourceId)).toHaveLength(1);
});

describe('where a repository may be (Git:FileRoots, the outbound policy)', () => {
  /** The log lines (JSON) of the worker that mention `text`. */
  const logged = (text: string) => logLines.filter((line) => line.includes(text));

  test('a file:// repository elsewhere on the host, outside Git:FileRoots, is refused: nothing is imported', async () => {
    const elsewhere = await createTestRepository(); // a real repository, outside the worker's root
    repositories.push(elsewhere);
    await elsewhere.commit({ 'otel.yaml': 'receivers: {}\n' });
    const sourceId = await createSource(elsewhere.url);
    await wake(sourceId, { reason: 'source-changed' });
    const [run] = await finishedRuns(sourceId, 1);
    expect(run).toMatchObject({ status: 'failed', commit_sha: null });
    expect(run!.error).toBe('file:// repositories are allowed only under the directories of the setting Git:FileRoots');
    expect(await db()('configurations').where({ managed_by: sourceId })).toEqual([]);

    // A symbolic link under the root that leads to it is refused as well.
    await symlink(elsewhere.bare, join(fileRoot, 'link.git'));
    const linked = await createSource(`file://${fileRoot}/link.git`);
    await wake(linked, { reason: 'source-changed' });
    const [linkedRun] = await finishedRuns(linked, 1);
    expect(linkedRun!.error).toMatch(/Git:FileRoots/);
  });

  test('the metadata address, a private network, an unknown name, a closed port, a plain HTTP service and Postgres all fail with the same words; the log says why', async () => {
    const closed = await freePort();
    const plainHttp = await startSmartHttpServer(tmpdir(), 'unused-token-0123456789');
    const urls = {
      metadata: 'https://metadata.test/fleet.git',
      intranet: 'https://intranet.test/fleet.git',
      sshMetadata: 'ssh://git@metadata.test/fleet.git',
      unknown: 'https://nowhere.test/fleet.git',
      closed: `https://127.0.0.1:${closed}/fleet.git`,
      plainHttp: `https://127.0.0.1:${new URL(plainHttp.baseUrl).port}/fleet.git`,
      postgres: `https://127.0.0.1:${new URL(testInfra().postgresUrl).port}/fleet.git`,
    };
    const errors: Record<string, string | null> = {};
    try {
      for (const [what, url] of Object.entries(urls)) {
        const sourceId = await createSource(url);
        await wake(sourceId, { reason: 'manual' });
        const [run] = await finishedRuns(sourceId, 1);
        errors[what] = run!.error;
      }
    } finally {
      await plainHttp.close();
    }
    expect(errors).toEqual(Object.fromEntries(Object.keys(urls).map((what) => [what, REPOSITORY_UNREACHABLE])));
    // Refused on the resolved address, before any connection: no connection to them failed.
    expect(logged('169.254.169.254 is link-local').length).toBeGreaterThanOrEqual(2);
    expect(logged('10.0.0.1 is private')).toHaveLength(1);
    expect(logged('outbound connection failed').filter((line) => /metadata|intranet/.test(line))).toEqual([]);
    expect(logged('nowhere.test could not be resolved (ENOTFOUND)')).toHaveLength(1);
    expect(logged(`127.0.0.1:${closed}`).join('')).toMatch(/ECONNREFUSED/);
  });

  test('a Git server whose name the policy resolves to an allowed address syncs', async () => {
    const repo = await repository({ 'otel.yaml': 'receivers: {}\n' });
    const server = await startSmartHttpServer(dirname(repo.bare), 'token-for-git-test-0123456789');
    try {
      const port = new URL(server.baseUrl).port;
      const sourceId = await createSource(`http://git.test:${port}/repo.git`, {
        credentials: { kind: 'https', token: 'token-for-git-test-0123456789' },
      });
      await wake(sourceId, { reason: 'source-changed' });
      const [run] = await finishedRuns(sourceId, 1);
      expect(run).toMatchObject({ status: 'succeeded', commit_sha: await repo.tip() });
    } finally {
      await server.close();
    }
  });
});

test('a source left without its loop (the api’s signal failed) gets one when a worker starts', async () => {
  const repo = await repository();
  const sourceId = await createSource(repo.url); // committed, but no signal reached Temporal
  const paused = await createSource(repo.url, { paused: true });
  await env.stopWorker();
  await env.startWorker();
  const [run] = await finishedRuns(sourceId, 1);
  expect(run).toMatchObject({ trigger: 'poll', status: 'succeeded', commit_sha: await repo.tip() });
  await idle(sourceId);
  expect(await runsOf(paused)).toEqual([]); // a paused source's loop starts when it is resumed
});

test('deleting the source ends its workflow', async () => {
  const repo = await repository();
  const source = await registerSource(repo.url);
  await runsThroughApi(source.id, 1);
  expect((await call('DELETE', `/api/git-sources/${source.id}`)).status).toBe(204);
  const handle = env.client.workflow.getHandle(gitSyncWorkflowId(source.id));
  await handle.result();
  expect((await handle.describe()).status.name).toBe('COMPLETED');
  await recordHistories(env.client, gitSyncWorkflowId(source.id), 'git-sync-deleted');
});

test('a deleted source’s working copy goes with it; a worker starting removes those of sources deleted while it was away', async () => {
  const repo = await repository();
  const source = await registerSource(repo.url);
  await runsThroughApi(source.id, 1);
  expect(await readdir(workDir)).toContain(source.id);
  expect((await call('DELETE', `/api/git-sources/${source.id}`)).status).toBe(204);
  await env.client.workflow.getHandle(gitSyncWorkflowId(source.id)).result();
  expect(await readdir(workDir)).not.toContain(source.id);
  await recordHistories(env.client, gitSyncWorkflowId(source.id), 'git-sync-deleted-removes-copy');

  // A copy left behind (deleted while no worker ran the loop's end), beside a live source's.
  const live = await registerSource(repo.url);
  await runsThroughApi(live.id, 1);
  const orphan = randomUUID();
  await mkdir(join(workDir, orphan, 'objects'), { recursive: true });
  await env.stopWorker();
  await env.startWorker();
  await eventually(async () => expect(await readdir(workDir)).not.toContain(orphan), 15_000);
  expect(await readdir(workDir)).toContain(live.id);
});

test('continue-as-new keeps the loop working with its pending wakes', async () => {
  const repo = await repository();
  const sourceId = await createSource(repo.url);
  await wake(sourceId, { reason: 'source-changed' }, 12);
  await finishedRuns(sourceId, 1);
  const shas: string[] = [];
  for (let i = 0; i < 4; i++) {
    shas.push(await repo.commit({ 'otel.yaml': `receivers: {}\nround: ${i}\n` }));
    await wake(sourceId, { reason: 'webhook' });
    await finishedRuns(sourceId, i + 2);
  }
  const runs = await runsOf(sourceId);
  expect(runs.slice(1).map((run) => [run.trigger, run.commit_sha])).toEqual(shas.map((sha) => ['webhook', sha]));
  const described = await env.client.workflow.getHandle(gitSyncWorkflowId(sourceId)).describe();
  expect(described.status.name).toBe('RUNNING');
  expect(described.runId).not.toBe(described.raw.workflowExecutionInfo?.firstRunId);
  await idle(sourceId); // the last run's first task done: a history of its start alone does not replay
  await recordHistories(env.client, gitSyncWorkflowId(sourceId), 'git-sync-continue-as-new');
});

test('the pipeline: a commit reaches simulated agents as APPLIED through the rollout template, without any API call', async () => {
  const { groupId, fleet } = await env.fleet(3);
  const content = 'receivers:\n  otlp: {}\nexporters:\n  debug: {}\n';
  const repo = await repository({ 'pipeline.yaml': 'receivers: {}\n' });
  const source = await registerSource(repo.url, {
    autoPublish: true,
    rolloutTemplate: { target: { groupIds: [groupId] }, strategy: { batchSize: 2 } },
  });
  await runsThroughApi(source.id, 1);
  await fleet.waitForAll((state) => state.appliedStatus === 'APPLIED', 20_000);

  // From here on, only Git: a push and the host's webhook delivery.
  const sha = await repo.commit({ 'pipeline.yaml': content }, { message: 'ship the otlp receiver' });
  expect((await deliver(source)).status).toBe(202);
  const hash = createHash('sha256').update(content).digest('hex');
  await fleet.waitForAll((state) => state.lastConfigHash === hash && state.appliedStatus === 'APPLIED', 30_000);

  const runs = await runsThroughApi(source.id, 2);
  expect(runs[1]).toMatchObject({ trigger: 'webhook', status: 'succeeded', commitSha: sha, fileErrors: [] });
  const rolloutId = runs[1]!.rolloutId!;
  expect(runs[1]!.changes).toEqual([expect.objectContaining({ change: 'updated', version: 2, rolloutId })]);
  const name = (await call('GET', `/api/git-sources/${source.id}`)).body.name as string;
  await eventually(async () => {
    const rollout = await call('GET', `/api/rollouts/${rolloutId}`);
    expect(rollout.body).toMatchObject({ state: 'completed', createdBy: `git:${name}`, version: 2 });
  }, 20_000);
  await expectRolloutCreatedAsShown(db(), rolloutId, (await call('GET', `/api/rollouts/${rolloutId}`)).body);
  const configurationId = runs[1]!.changes[0]!.configurationId;
  const imported = await call('GET', `/api/configurations/${configurationId}`);
  await expectConfigurationCreatedAsShown(db(), configurationId, imported.body);
  await idle(source.id);
  await recordHistories(env.client, gitSyncWorkflowId(source.id), 'git-sync-rollout-template');
});

test('a worker that dies after the sweep created its rollout: the retried sweep starts that rollout, which reaches the agents', async () => {
  const { groupId, fleet } = await env.fleet(2);
  const repo = await repository({ 'crash.yaml': 'receivers: {}\n' });
  const source = await registerSource(repo.url, {
    autoPublish: true,
    rolloutTemplate: { target: { groupIds: [groupId] }, strategy: { batchSize: 2 } },
  });
  await runsThroughApi(source.id, 1);
  await fleet.waitForAll((state) => state.appliedStatus === 'APPLIED', 20_000);

  // The sweep's last step (marking the source synced) waits behind this lock, so the attempt
  // is caught after it created and recorded the rollout, before it finished the run.
  const lock = await db().transaction();
  await lock.raw('SELECT id FROM git_sources WHERE id = ? FOR NO KEY UPDATE', [source.id]); // runs may still reference it
  const content = 'receivers:\n  otlp: {}\n';
  const sha = await repo.commit({ 'crash.yaml': content }, { message: 'after the crash' });
  expect((await deliver(source)).status).toBe(202);
  const caught = await eventually(async () => {
    const run = await db()('git_sync_runs').where({ source_id: source.id, commit_sha: sha }).first();
    expect(run?.rollout_ids).toHaveLength(1);
    expect(run.status).toBe('running');
    return run as { id: string; rollout_ids: string[] };
  }, 20_000);
  const rolloutId = caught.rollout_ids[0]!;

  // The worker dies: its attempt's finishing transaction is cut off, so nothing after the rollout is kept.
  const stopped = env.stopWorker();
  const [blocked] = await eventually(async () => {
    const waiting = await waitingOnLock('git_sources');
    expect(waiting).toHaveLength(1);
    return waiting;
  });
  await db().raw('SELECT pg_terminate_backend(?)', [blocked!]);
  await lock.rollback();
  await stopped;
  await env.startWorker();

  const hash = createHash('sha256').update(content).digest('hex');
  await fleet.waitForAll((state) => state.lastConfigHash === hash && state.appliedStatus === 'APPLIED', 60_000);
  await eventually(async () => {
    const rollout = await call('GET', `/api/rollouts/${rolloutId}`);
    expect(rollout.body).toMatchObject({ state: 'completed', version: 2 });
  }, 20_000);
  const runs = await runsThroughApi(source.id, 2, 60_000);
  expect(runs[1]).toMatchObject({ commitSha: sha, status: 'succeeded', rolloutId });
  expect(await db()('rollouts').where({ configuration_id: (await configurationNamed('crash'))!.id })).toHaveLength(2);
  await idle(source.id);
}, 120_000);

test('a rollout template a policy denies: the run reports the file, the version is published, no rollout is left behind', async () => {
  const { groupId } = await env.fleet(1);
  const policy = await call('POST', '/api/policies', {
    name: `deny-${randomUUID().slice(0, 8)}`,
    expression: 'configuration.name != "denied"',
  });
  expect(policy.status).toBe(201);
  expect((await env.t.call('POST', `/api/policies/${policy.body.id}/approve`, { token: admin })).status).toBe(200);
  try {
    const repo = await repository({ 'denied.yaml': 'a: 1\n' });
    const source = await registerSource(repo.url, {
      autoPublish: true,
      rolloutTemplate: { target: { groupIds: [groupId] }, strategy: { batchSize: 1 } },
    });
    const [run] = await runsThroughApi(source.id, 1);
    expect(run).toMatchObject({ status: 'succeeded', rolloutId: null });
    expect(run!.fileErrors).toEqual([
      { path: 'denied.yaml', error: expect.stringContaining(`rollout not started: Policy '${policy.body.name}'`) },
    ]);
    expect(run!.changes).toEqual([expect.objectContaining({ name: 'denied', version: 1, published: true })]);
    const configuration = await configurationNamed('denied');
    const rollouts = await call('GET', `/api/rollouts?configurationId=${configuration!.id}`);
    expect(rollouts.body.items).toEqual([]);
  } finally {
    await db()('policies').where({ id: policy.body.id }).update({ enabled: false });
  }
});
