/**
 * The Git source pages in a real Chromium against a real installation (api, worker on the
 * suite's Temporal dev server syncing a real bare repository on disk over file://), signed in
 * through the real test identity provider: an admin registers a source from the form, forces
 * a sync and sees its run arrive live with its commit and the configurations it made (linked),
 * pauses and resumes it, rotates the webhook token (shown once, copied through the clipboard,
 * then accepted by the webhook endpoint), edits it with If-Match (its rollout template too)
 * and deletes one; a viewer reads sources and runs with no write button. axe-core on every
 * page, a screenshot of each under test-artifacts/console/.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { insertGitSource } from '../../db/repos/git-sources';
import { finishSyncRun, insertSyncRun } from '../../db/repos/git-sync-runs';
import {
  CONSOLE_ORIGIN,
  expectAccessible,
  heapHolds,
  launchBrowser,
  newContext,
  newSignedInPage,
  onPage,
  tableRows,
  confirmDialog,
  confirmOperation,
} from '../support/browser';
import { createTestRepository, type TestRepository } from '../../scripts/infra/git';
import { startRolloutEnv, type RolloutEnv } from '../support/rollout-env';

let env: RolloutEnv;
let browser: Browser;
let page: Page;
let repo: TestRepository;
let workDir: string;
let admin: string;
/** The source the admin registers through the form. */
let sourceId: string;
const SOURCE_NAME = 'fleet-config';
const cspViolations: string[] = [];

const call = (method: string, path: string, body?: unknown) => env.t.call(method, path, { token: admin, body });

async function apiGet(path: string): Promise<any> {
  const reply = await call('GET', path);
  expect(reply.status).toBe(200);
  return reply.body;
}

/** A delivery from the Git host with `token`, as the proxy in front of the api forwards it (HTTPS). */
const deliver = (id: string, token: string) =>
  env.t.call('POST', `/api/git/webhook/${id}`, {
    raw: '{"ref":"refs/heads/main"}',
    headers: { 'content-type': 'application/json', 'x-forwarded-proto': 'https', 'x-service-webhook-token': token },
  });

/** The sync runs table, newest first: [started, trigger, outcome, commit, files changed, errors, took]. */
const runs = () => tableRows(page, 'Sync runs');

const shownState = () => page.getByRole('region', { name: 'Source' }).getByTestId('source-state').textContent();

/**
 * Holds the page's reads of the source (`GET /api/git-sources/{id}`: the server answers at once,
 * the page gets the answer only once released), as a slow network would; how many were held.
 */
async function holdSourceReads(id: string) {
  const url = `${CONSOLE_ORIGIN}/api/git-sources/${id}`;
  let held = 0;
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  await page.route(url, async (route) => {
    const response = await route.fetch({ url: url.replace(CONSOLE_ORIGIN, env.t.baseUrl) }); // fleet.test is the browser's name
    held++;
    await released;
    await route.fulfill({ response });
  });
  return {
    held: () => held,
    release: async () => {
      release();
      await page.unrouteAll({ behavior: 'wait' }); // the held answers delivered first
    },
  };
}

beforeAll(async () => {
  workDir = await mkdtemp(join(tmpdir(), 'fleet-console-git-'));
  env = await startRolloutEnv({
    workerEnv: { Git__WorkDir: workDir },
    apiEnv: { Http__TrustProxy: 'true' }, // webhooks arrive "over HTTPS" through a proxy (Production refuses HTTP)
  });
  admin = await env.t.token('default.admin');
  repo = await createTestRepository();
  await repo.commit(
    {
      'collectors/otel-collector.yaml': 'receivers:\n  otlp: {}\n',
      'collectors/edge/agent.json': '{ "port": 4317 }\n',
    },
    { message: 'first configurations' },
  );
  browser = await launchBrowser(env.t, { secureContext: true });
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await env?.close();
  await repo?.remove();
  if (workDir) await rm(workDir, { recursive: true, force: true });
});

afterEach(() => {
  expect(cspViolations).toEqual([]);
});

test('an admin registers a source from the form; a refused one shows the problem; its first sync shows with its commit', async () => {
  page = await newSignedInPage(await newContext(browser), 'alice', '/git-sources', cspViolations);
  await page.getByRole('heading', { name: 'Git sources' }).waitFor();
  await onPage(async () =>
    expect(await tableRows(page, 'Git sources')).toEqual([['No Git source matches these filters.']]),
  );

  await page.getByRole('link', { name: 'New Git source' }).click();
  await page.waitForURL(`${CONSOLE_ORIGIN}/git-sources/new`);
  await page.getByRole('textbox', { name: 'Name', exact: true }).fill(SOURCE_NAME);
  await page.getByLabel('Repository URL').fill(repo.url);
  await page.getByLabel('Path', { exact: true }).fill('collectors');
  // A number out of range is said at the field, never changed behind the operator's back.
  const poll = page.getByLabel('Poll interval (seconds)');
  for (const [typed, kept] of [
    ['1', '1'],
    ['999999', '999,999'],
  ] as const) {
    await poll.fill(typed);
    await page.getByLabel('Path', { exact: true }).focus();
    expect(await poll.inputValue()).toMatch(new RegExp(`^(${typed}|${kept})$`));
    await page.getByText('Must be 5 to 86,400 seconds').waitFor();
  }
  await poll.fill('3600'); // the forced syncs below are the test's, not a poll's
  expect(await page.getByText('Must be 5 to 86,400 seconds').count()).toBe(0);
  // Credentials a file:// repository does not take: the API's problem, and the token not echoed.
  await page.getByRole('combobox', { name: 'Credentials' }).click();
  await page.getByRole('option', { name: 'HTTPS: an access token' }).click();
  await page.getByLabel('Access token').fill('glpat-not-for-a-file-repository');
  expect(await page.getByLabel('Access token').getAttribute('type')).toBe('password');
  await expectAccessible(page, 'git-source-create');
  await page.getByRole('button', { name: 'Create Git source' }).click();
  const alert = page.getByRole('alert');
  await alert.waitFor();
  expect(await alert.textContent()).toContain('Request validation failed');
  expect(await alert.textContent()).toContain('body.credentials: a file:// repository takes no credentials');
  expect(await alert.textContent()).not.toContain('glpat-');

  await page.getByRole('combobox', { name: 'Credentials' }).click();
  await page.getByRole('option', { name: /^None/ }).click();
  await page.getByRole('button', { name: 'Create Git source' }).click();
  await page.waitForURL((url) => /^\/git-sources\/[0-9a-f-]{36}$/.test(url.pathname));
  sourceId = new URL(page.url()).pathname.split('/')[2]!;
  await page.getByRole('heading', { name: SOURCE_NAME }).waitFor();
  // The token typed into the form is nowhere in the page's memory once the form is gone.
  expect(await heapHolds(page, ['glpat-not-for-a-file-repository'])).toEqual([]);
  expect(await apiGet(`/api/git-sources/${sourceId}`)).toMatchObject({
    name: SOURCE_NAME,
    repoUrl: repo.url,
    branch: 'main',
    path: 'collectors',
    pollIntervalSeconds: 3600,
    credentials: null,
  });

  // Its loop syncs at once: the run, its commit and the two configurations it created.
  const tip = await repo.tip();
  await onPage(async () => {
    const [run] = await runs();
    expect(run?.slice(1, 4)).toEqual(['poll', 'succeeded', tip.slice(0, 8)]);
    expect(run?.[4]).toContain('created otel-collector v1');
    expect(run?.[4]).toContain('created edge/agent v1');
  });
  await page.getByRole('region', { name: 'Source' }).getByText(tip.slice(0, 8)).waitFor();
  await expectAccessible(page, 'git-source');
}, 90_000);

test('"Sync now" makes a manual run that arrives live with the new commit; its configurations link to their pages', async () => {
  const pushed = await repo.commit(
    { 'collectors/otel-collector.yaml': 'receivers:\n  otlp: {}\nexporters:\n  debug: {}\n' },
    { message: 'add the debug exporter' },
  );
  // The source's read that "Sync now" starts is still under way when the run's events arrive.
  const slowReads = await holdSourceReads(sourceId);
  await page.getByRole('button', { name: 'Sync now' }).click();
  await onPage(async () => {
    const [run] = await runs();
    expect(run?.slice(1, 4)).toEqual(['manual', 'succeeded', pushed.slice(0, 8)]);
    expect(run?.[4]).toBe('updated otel-collector v2');
  });
  expect(slowReads.held()).toBeGreaterThan(0);
  await slowReads.release();
  // That read may be from before the run ended: the page reads the source again after it.
  await page.getByRole('region', { name: 'Source' }).getByText(pushed.slice(0, 8)).waitFor();
  const [apiRun] = (await apiGet(`/api/git-sources/${sourceId}/sync-runs`)).items;
  expect(apiRun).toMatchObject({ trigger: 'manual', status: 'succeeded', commitSha: pushed });

  const link = page.getByRole('table', { name: 'Sync runs' }).getByRole('link', { name: 'otel-collector' }).first();
  expect(await link.getAttribute('href')).toBe(`/configurations/${apiRun.changes[0].configurationId}`);
  await link.click();
  await page.getByRole('heading', { name: 'otel-collector' }).waitFor();
  await page.getByText('Managed by Git', { exact: true }).waitFor();
  await page.goBack();
  await page.getByRole('heading', { name: SOURCE_NAME }).waitFor();
}, 90_000);

test('pause and resume, each after a confirmation; a paused source offers no sync', async () => {
  await confirmOperation(page, 'Pause');
  await onPage(async () => expect(await shownState()).toBe('paused'));
  expect((await apiGet(`/api/git-sources/${sourceId}`)).paused).toBe(true);
  expect(await page.getByRole('button', { name: 'Sync now' }).isDisabled()).toBe(true);

  await confirmOperation(page, 'Resume');
  await onPage(async () => expect(await shownState()).toBe('active'));
  expect((await apiGet(`/api/git-sources/${sourceId}`)).paused).toBe(false);
  expect(await page.getByRole('button', { name: 'Sync now' }).isDisabled()).toBe(false);
}, 90_000);

test('the rotated webhook token is shown once, copied through the clipboard, and works at the webhook; the old one no longer does', async () => {
  const first = await call('POST', `/api/git-sources/${sourceId}/webhook-token`);
  expect(first.status).toBe(201);
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: CONSOLE_ORIGIN });
  await page.reload();
  const webhook = page.getByRole('region', { name: 'Webhook' });
  await webhook.getByText(`${CONSOLE_ORIGIN}/api/git/webhook/${sourceId}`).waitFor();

  await webhook.getByRole('button', { name: 'Rotate webhook token' }).click();
  const confirmation = page.getByRole('dialog', { name: 'Rotate webhook token' });
  await confirmation.getByRole('button', { name: 'Rotate webhook token' }).click();
  const dialog = page.getByRole('dialog', { name: 'New webhook token' });
  await dialog.getByText('It will not be shown again', { exact: false }).waitFor();
  const token = await dialog.getByLabel('Webhook token').inputValue();
  expect(token).toMatch(/^svc-wh\./);
  await dialog.getByText(`${CONSOLE_ORIGIN}/api/git/webhook/${sourceId}`).waitFor();
  await dialog.getByRole('button', { name: 'Copy token' }).click();
  await dialog.getByRole('button', { name: 'Copied' }).waitFor();
  expect(await page.evaluate('navigator.clipboard.readText()')).toBe(token);
  await expectAccessible(page, 'git-source-webhook-token');

  // Closed, the token is gone from the page, and it was never in the URL or the browser's storage.
  await confirmDialog(dialog, 'Done');
  expect(await page.content()).not.toContain(token);
  expect(page.url()).not.toContain(token);
  const stored = await page.evaluate('JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage })');
  expect(stored).not.toContain(token);
  expect(await heapHolds(page, [token])).toEqual([]); // nor anywhere in the page's memory

  // The old token is refused at once; the copied one makes a run of a pushed commit, which arrives live.
  expect((await deliver(sourceId, first.body.token)).status).toBe(401);
  const pushed = await repo.commit(
    { 'collectors/edge/agent.json': '{ "port": 4318 }\n' },
    { message: 'move the port' },
  );
  const delivered = await deliver(sourceId, token);
  expect(delivered.status).toBe(202);
  expect(delivered.body).toMatchObject({ status: 'accepted' });
  await onPage(async () => {
    const [run] = await runs();
    expect(run?.slice(1, 4)).toEqual(['webhook', 'succeeded', pushed.slice(0, 8)]);
    expect(run?.[4]).toBe('updated edge/agent v2');
  });
}, 90_000);

test('edit sends If-Match: saved on the source as shown (a rollout template too), refused with 412 on one changed meanwhile; delete asks first', async () => {
  await page.getByRole('group', { name: 'Operations' }).getByRole('link', { name: 'Edit' }).click();
  await page.waitForURL(`${CONSOLE_ORIGIN}/git-sources/${sourceId}/edit`);
  await page.getByRole('heading', { name: `Edit ${SOURCE_NAME}` }).waitFor();
  expect(await page.getByLabel('Repository URL').inputValue()).toBe(repo.url);
  await page.getByLabel('Poll interval (seconds)').fill('600');
  await expectAccessible(page, 'git-source-edit');
  await page.getByRole('button', { name: 'Save settings' }).click();
  await page.waitForURL(`${CONSOLE_ORIGIN}/git-sources/${sourceId}`);
  await onPage(async () => expect((await apiGet(`/api/git-sources/${sourceId}`)).pollIntervalSeconds).toBe(600));

  // A rollout for each version a sync publishes: the template's group and strategy, from the form.
  const canaries = (await call('POST', '/api/groups', { name: 'git-canaries' })).body;
  await page.getByRole('group', { name: 'Operations' }).getByRole('link', { name: 'Edit' }).click();
  await page.getByLabel('Poll interval (seconds)').waitFor();
  const rollOut = page.getByLabel('Roll out each published version');
  expect(await rollOut.isDisabled()).toBe(true); // only published versions are rolled out
  await page.getByLabel('Publish synced versions at once (otherwise they are drafts)').check();
  await rollOut.check();
  await page.getByRole('combobox', { name: 'Target groups' }).click();
  await page.getByRole('option', { name: 'git-canaries', exact: true }).click();
  await page.keyboard.press('Escape');
  await page.getByLabel('Agents per batch').fill('2');
  await page.getByLabel('Bake (seconds)').fill('60');
  await expectAccessible(page, 'git-source-edit-template');
  await page.getByRole('button', { name: 'Save settings' }).click();
  await page.waitForURL(`${CONSOLE_ORIGIN}/git-sources/${sourceId}`);
  expect((await apiGet(`/api/git-sources/${sourceId}`)).rolloutTemplate).toEqual({
    target: { groupIds: [canaries.id], agentIds: [], labelSelector: null },
    strategy: {
      batchSize: 2,
      bakeSeconds: 60,
      applyTimeoutSeconds: 300,
      maxFailurePercent: 0,
      onFailure: 'pause',
      offlineAgents: 'defer',
      lateArrivalSeconds: 7 * 86_400,
    },
  });
  await onPage(async () => {
    const facts = await page.getByRole('region', { name: 'Source' }).textContent();
    expect(facts).toContain('group git-canaries');
    expect(facts).toContain('batches of 2, bake 60 s, apply timeout 300 s, max failures 0 %, on failure pause');
  });

  // Another operator changes it while the form is open: saving what this page shows is refused.
  await page.getByRole('group', { name: 'Operations' }).getByRole('link', { name: 'Edit' }).click();
  await page.getByLabel('Poll interval (seconds)').waitFor();
  const current = await apiGet(`/api/git-sources/${sourceId}`);
  const meanwhile = await call('PUT', `/api/git-sources/${sourceId}`, {
    name: SOURCE_NAME,
    repoUrl: current.repoUrl,
    branch: current.branch,
    path: current.path,
    pollIntervalSeconds: 900,
    autoPublish: false,
  });
  expect(meanwhile.status).toBe(200);
  await page.getByLabel('Poll interval (seconds)').fill('1200');
  await page.getByRole('button', { name: 'Save settings' }).click();
  const alert = page.getByRole('alert', { name: 'Precondition failed' });
  await alert.waitFor();
  expect(await alert.textContent()).toMatch(/Precondition failed/i);
  expect((await apiGet(`/api/git-sources/${sourceId}`)).pollIntervalSeconds).toBe(900);
  // No dead end: the latest, with this form's change on top, saved with the latest ETag.
  await page.getByRole('button', { name: 'Load the latest and re-apply my changes' }).click();
  const reapplied = page.getByRole('status').filter({ hasText: 'Your changes are on the latest version' });
  await reapplied.waitFor();
  expect(await reapplied.textContent()).toContain(
    'Changed meanwhile: pollIntervalSeconds, autoPublish, rolloutTemplate',
  );
  expect(await reapplied.textContent()).toContain('You changed pollIntervalSeconds too: yours is kept.');
  expect(await page.getByLabel('Poll interval (seconds)').inputValue()).toBe('1200');
  expect(await page.getByLabel('Publish synced versions at once (otherwise they are drafts)').isChecked()).toBe(false);
  await expectAccessible(page, 'git-source-reapplied');
  await page.getByRole('button', { name: 'Save settings' }).click();
  await page.waitForURL(`${CONSOLE_ORIGIN}/git-sources/${sourceId}`);
  expect(await apiGet(`/api/git-sources/${sourceId}`)).toMatchObject({
    pollIntervalSeconds: 1200,
    autoPublish: false,
    rolloutTemplate: null,
  });

  // A second source, deleted from its page after the confirmation.
  const other = await call('POST', '/api/git-sources', {
    name: 'to-delete',
    repoUrl: `file://${tmpdir()}/gone-${randomUUID()}.git`,
    branch: 'main',
    pollIntervalSeconds: 3600,
  });
  expect(other.status).toBe(201);
  await page.goto(`${CONSOLE_ORIGIN}/git-sources/${other.body.id}`);
  await page.getByRole('heading', { name: 'to-delete' }).waitFor();
  // Its first sync (of a repository that is not there) fails, which moves its ETag; the page,
  // refreshed by that run's event, then deletes the source as it is (else: 412, as it should).
  await onPage(async () =>
    expect(await page.getByRole('region', { name: 'Source' }).textContent()).toMatch(/Last run\s*failed/),
  );
  await confirmOperation(page, 'Delete');
  await page.waitForURL(`${CONSOLE_ORIGIN}/git-sources`);
  expect((await call('GET', `/api/git-sources/${other.body.id}`)).status).toBe(404);
}, 90_000);

test('the list pages with the API’s cursor and filters by name and state, all in a URL that reloads; runs page too', async () => {
  // 26 more sources (rows of their own: no loop runs them), one paused, one with 26 runs.
  const seeded: string[] = [];
  for (let i = 0; i < 26; i++) {
    const row = await insertGitSource(env.t.database.db, {
      id: randomUUID(),
      tenant_id: 'default',
      created_by: 'history',
      name: `seeded-${String(i).padStart(2, '0')}`,
      repo_url: `https://git.example.com/acme/seeded-${i}.git`,
      branch: 'main',
      path: '',
      poll_interval_seconds: 60,
      auto_publish: false,
      rollout_template: null,
      ca_certificate: null,
      paused: i === 7,
    });
    seeded.push(row.id);
  }
  const busy = seeded[25]!;
  for (let i = 0; i < 26; i++) {
    const run = await insertSyncRun(env.t.database.db, {
      tenant_id: 'default',
      source_id: busy,
      trigger: 'poll',
      commit_sha: `${String(i).padStart(2, '0')}${'a'.repeat(38)}`,
    });
    await finishSyncRun(env.t.database.db, run.id, {
      status: 'failed',
      changes: [],
      file_errors: [],
      error: `run ${i} could not read the repository`,
      rollout_id: null,
    });
  }

  await page.goto(`${CONSOLE_ORIGIN}/git-sources`);
  await onPage(async () => expect(await tableRows(page, 'Git sources')).toHaveLength(25));
  expect((await tableRows(page, 'Git sources'))[0]?.[0]).toBe(SOURCE_NAME);
  await page.getByRole('button', { name: 'Next page' }).click();
  await page.waitForURL((url) => url.searchParams.has('cursor'));
  await page.reload();
  await onPage(async () =>
    expect((await tableRows(page, 'Git sources')).map((cells) => cells[0])).toEqual(['seeded-24', 'seeded-25']),
  );
  expect((await tableRows(page, 'Git sources'))[1]?.[4]).toContain('run 25 could not read the repository');

  await page.getByLabel('Name or repository').fill('SEEDED');
  await page.getByRole('combobox', { name: 'State' }).click();
  await page.getByRole('option', { name: 'Paused' }).click();
  await page.getByRole('button', { name: 'Apply filters' }).click();
  await page.waitForURL((url) => url.search === '?q=SEEDED&paused=true');
  await page.reload();
  await onPage(async () =>
    expect((await tableRows(page, 'Git sources')).map((cells) => cells.slice(0, 2))).toEqual([['seeded-07', 'paused']]),
  );
  await expectAccessible(page, 'git-sources');

  await page.goto(`${CONSOLE_ORIGIN}/git-sources/${busy}`);
  await onPage(async () => expect(await runs()).toHaveLength(25));
  expect((await runs())[0]?.[5]).toBe('run 25 could not read the repository');
  await page.getByRole('button', { name: 'Older runs' }).click();
  await page.waitForURL((url) => url.searchParams.has('cursor'));
  await page.reload();
  await onPage(async () =>
    expect((await runs()).map((cells) => cells[5])).toEqual(['run 0 could not read the repository']),
  );

  await page.goto(`${CONSOLE_ORIGIN}/git-sources/not-an-id`);
  const alert = page.getByRole('alert');
  await alert.waitFor();
  expect(await alert.textContent()).toContain('Request validation failed');
  expect(await alert.textContent()).toContain('path.id');
}, 90_000);

test('a viewer sees the sources and their runs, and no write button', async () => {
  const context = await newContext(browser);
  try {
    const viewer = await newSignedInPage(context, 'victor', `/git-sources/${sourceId}`, cspViolations);
    await viewer.getByRole('heading', { name: SOURCE_NAME }).waitFor();
    await onPage(async () => expect((await tableRows(viewer, 'Sync runs')).length).toBeGreaterThanOrEqual(3));
    expect(await viewer.getByRole('button').allTextContents()).toEqual(['Sign out', 'Newest runs', 'Older runs']);
    expect(await viewer.getByRole('link', { name: 'Edit' }).count()).toBe(0);
    await expectAccessible(viewer, 'git-source-viewer');

    await viewer.goto(`${CONSOLE_ORIGIN}/git-sources`);
    await onPage(async () => expect(await tableRows(viewer, 'Git sources')).toHaveLength(25));
    expect(await viewer.getByRole('button').allTextContents()).toEqual([
      'Sign out',
      'Apply filters',
      'First page',
      'Next page',
    ]);
    expect(await viewer.getByRole('link', { name: 'New Git source' }).count()).toBe(0);
  } finally {
    await context.close();
  }
}, 90_000);
