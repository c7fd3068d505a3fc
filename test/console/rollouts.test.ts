/**
 * The rollouts pages in a real Chromium against a real installation (api, agent gateway,
 * worker on the suite's Temporal dev server, simulated agents over TLS), signed in through
 * the real test identity provider: the list filters and pages through the URL; an operator
 * starts a rollout, watches its progress arrive through the hub, pauses, resumes and rolls it
 * back, each after a confirmation; a viewer gets no operation; axe-core passes on each page.
 * Screenshots under test-artifacts/console/.
 */
import type { Browser, Page } from 'playwright-core';
import { insertRollout } from '../../db/repos/rollouts';
import {
  CONSOLE_ORIGIN,
  expectAccessible,
  launchBrowser,
  newContext,
  newSignedInPage,
  onPage,
  tableRows,
  confirmOperation,
  pageCutOffFromHub,
  refusedInDialog,
} from '../support/browser';
import { publishConfiguration, type PublishedVersion } from '../support/configurations';
import { eventually } from '../support/eventually';
import { startRolloutEnv, type RolloutEnv } from '../support/rollout-env';

let env: RolloutEnv;
let browser: Browser;
let page: Page;
let groupId: string;
let v2: PublishedVersion;
/** The rollout the operator drives: v2 to three agents that run v1, one a batch, a long bake. */
let rolloutId: string;
/** One of the past rollouts: aborted, so an operator may still roll it back. */
let pastRolloutId: string;
const ROLLOUT_NAME = 'Debug exporter for the canary';
/** Rollouts of the past, written to the database: enough for a second page of the list. */
const PAST_ROLLOUTS = 26;

const call = (method: string, path: string, body?: unknown) => env.t.call(method, path, { token: env.operator, body });

/** The Progress table's counts of one row ('All', 'Batch 1', 'Rollback'): total, pending, applying, deferred … skipped. */
async function progress(name: string): Promise<string[] | undefined> {
  return (await tableRows(page, 'Progress')).find((cells) => cells[0] === name)?.slice(1, 8); // not the bar
}

const shownState = () => page.getByRole('region', { name: 'Rollout' }).getByTestId('rollout-state').textContent();

/** A rollout written to the database as if it had run long ago and been aborted (no agent of it pushed). */
async function insertAbortedRollout(
  name: string,
  version: Pick<PublishedVersion, 'configurationId' | 'version' | 'contentHash'>,
) {
  const row = await insertRollout(env.t.database.db, {
    tenant_id: 'default',
    name,
    description: null,
    configuration_id: version.configurationId,
    version: version.version,
    content_hash: version.contentHash,
    target: { groupIds: [groupId], agentIds: [], labelSelector: null },
    strategy: { batchSize: 1, bakeSeconds: 0, applyTimeoutSeconds: 300, maxFailurePercent: 0, onFailure: 'pause' },
    created_by: 'history',
  });
  await env.t.database.db('rollouts').where({ id: row.id }).update({ state: 'aborted' });
  return row.id;
}

async function seedPastRollouts(version: PublishedVersion): Promise<void> {
  for (let i = 0; i < PAST_ROLLOUTS; i++) {
    pastRolloutId = await insertAbortedRollout(`past-${String(i).padStart(2, '0')}`, version);
  }
}

/** v1 rolled out to the fleet first, so rolling v2 back restores something. */
async function fleetOnV1(): Promise<PublishedVersion> {
  const [v1, second] = await publishConfiguration(env.t, env.operator, [
    'exporters:\n  otlp: {}\n',
    'exporters:\n  debug: {}\n',
  ]);
  v2 = second!;
  const first = await call('POST', '/api/rollouts', {
    configurationId: v1!.configurationId,
    version: v1!.version,
    target: { groupIds: [groupId] },
    strategy: { batchSize: 3 },
  });
  expect((await call('POST', `/api/rollouts/${first.body.id}/start`)).status).toBe(200);
  await eventually(
    async () => expect((await call('GET', `/api/rollouts/${first.body.id}`)).body.state).toBe('completed'),
    20_000,
  );
  return v1!;
}

beforeAll(async () => {
  env = await startRolloutEnv();
  browser = await launchBrowser(env.t);
  groupId = (await env.fleet(3)).groupId;
  const v1 = await fleetOnV1();
  await seedPastRollouts(v1);
  const created = await call('POST', '/api/rollouts', {
    name: ROLLOUT_NAME,
    description: 'Adds the debug exporter to see what the canary drops.',
    configurationId: v2.configurationId,
    version: v2.version,
    target: { groupIds: [groupId] },
    // The bake holds the rollout running after its first batch, long enough to pause it there.
    strategy: { batchSize: 1, bakeSeconds: 600 },
  });
  expect(created.status).toBe(201);
  rolloutId = created.body.id;
  page = await newSignedInPage(await newContext(browser), 'olivia', '/rollouts');
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await env?.close();
});

test('the list pages with the API’s cursor and filters by state, all in a URL that can be reloaded', async () => {
  await onPage(async () => expect(await tableRows(page, 'Rollouts')).toHaveLength(25));
  expect((await tableRows(page, 'Rollouts'))[0]?.slice(0, 2)).toEqual([ROLLOUT_NAME, 'pending']);
  await expectAccessible(page, 'rollouts');

  await page.getByRole('button', { name: 'Next page' }).click();
  await onPage(async () => expect(await tableRows(page, 'Rollouts')).toHaveLength(PAST_ROLLOUTS + 2 - 25));
  expect(new URL(page.url()).searchParams.get('cursor')).toBeTruthy();
  await page.reload();
  await onPage(async () => expect(await tableRows(page, 'Rollouts')).toHaveLength(3));

  await page.getByRole('combobox', { name: 'State' }).click();
  await page.getByRole('option', { name: 'pending', exact: true }).click();
  await page.waitForURL((url) => url.searchParams.get('state') === 'pending' && !url.searchParams.has('cursor'));
  await onPage(async () =>
    expect((await tableRows(page, 'Rollouts')).map((cells) => cells[0])).toEqual([ROLLOUT_NAME]),
  );
  await page.reload();
  await onPage(async () =>
    expect((await tableRows(page, 'Rollouts')).map((cells) => cells[0])).toEqual([ROLLOUT_NAME]),
  );
}, 60_000);

test('an operator starts the rollout, watches it arrive live, pauses, resumes and rolls it back, each confirmed', async () => {
  await page.goto(`${CONSOLE_ORIGIN}/rollouts?state=pending`);
  await page.getByRole('link', { name: ROLLOUT_NAME }).click();
  await page.waitForURL(`${CONSOLE_ORIGIN}/rollouts/${rolloutId}`);
  await page.getByRole('heading', { name: ROLLOUT_NAME }).waitFor();
  const facts = await page.getByRole('region', { name: 'Rollout' }).textContent();
  expect(facts).toContain('Adds the debug exporter to see what the canary drops.');
  expect(facts).toContain('batches of 1, bake 600 s, apply timeout 300 s, max failures 0 %, on failure pause');
  await onPage(async () => expect(await progress('All')).toEqual(['3', '3', '0', '0', '0', '0', '0']));

  await confirmOperation(page, 'Start');
  // The first batch's result comes through the hub: nothing else refreshes the page.
  await onPage(async () => expect(await progress('Batch 1')).toEqual(['1', '0', '0', '0', '1', '0', '0']));
  expect(await shownState()).toBe('running');
  await onPage(async () => expect(await progress('All')).toEqual(['3', '2', '0', '0', '1', '0', '0']));
  await expectAccessible(page, 'rollout-detail');

  await confirmOperation(page, 'Pause');
  await onPage(async () => expect(await shownState()).toBe('paused'));
  expect((await call('GET', `/api/rollouts/${rolloutId}`)).body.state).toBe('paused');
  // An operator's pause has no reason to give: no "Reason: none".
  expect(await page.getByRole('region', { name: 'Rollout' }).textContent()).not.toContain('Reason');
  await confirmOperation(page, 'Resume');
  await onPage(async () => expect(await shownState()).toBe('running'));

  await confirmOperation(page, 'Roll back');
  await onPage(async () => expect(await shownState()).toBe('rolled-back'));
  await onPage(async () => expect(await progress('Rollback')).toEqual(['', '0', '0', '', '1', '0', '0']));
  const reason = (await call('GET', `/api/rollouts/${rolloutId}`)).body.reason;
  expect(await page.getByRole('region', { name: 'Rollout' }).textContent()).toContain(reason);
  await onPage(async () =>
    expect(await page.getByRole('region', { name: 'Rollout' }).textContent()).toContain(
      'Rollback1 of 1 restored, 0 failed, 0 skipped',
    ),
  );
  // The timeline: what happened, by whom, and why, in order.
  await onPage(async () => {
    const what = (await tableRows(page, 'Timeline')).map((cells) => cells[1]);
    expect(what).toEqual([
      'created',
      expect.stringMatching(/^started by /),
      'batch 1 done: 1 succeeded, 0 failed, 0 deferred, 0 skipped of 3 so far',
      expect.stringMatching(/^paused by /),
      expect.stringMatching(/^resumed by /),
      expect.stringMatching(/^rolling-back by /),
      'rolled-back',
    ]);
  });
  expect((await tableRows(page, 'Timeline'))[5]?.[2]).toBe(reason);
  expect(await page.getByRole('group', { name: 'Operations' }).count()).toBe(0);

  // The agent of batch 1 had v1 before and got it back; the others were never pushed.
  await page.getByRole('combobox', { name: 'Agent state' }).click();
  await page.getByRole('option', { name: 'succeeded', exact: true }).click();
  await page.waitForURL((url) => url.searchParams.get('state') === 'succeeded');
  await onPage(async () => {
    const results = await tableRows(page, 'Agent results');
    expect(results.map((cells) => cells.slice(1, 3).concat(cells.slice(4, 6)))).toEqual([
      ['1', 'succeeded', 'v1', 'succeeded'],
    ]);
  });
  // The agent by its name, with its id.
  const [agentId] = (await call('GET', `/api/rollouts/${rolloutId}/agents?state=succeeded`)).body.items.map(
    (item: { agentId: string }) => item.agentId,
  );
  const agent = (await call('GET', `/api/agents/${agentId}`)).body;
  expect((await tableRows(page, 'Agent results'))[0]?.[0]).toBe(`${agent.name}${agent.id}`);
  // Its history in this rollout, in order, opened in the page.
  await page.getByRole('button', { name: `History of ${agent.name}` }).click();
  await onPage(async () =>
    expect((await tableRows(page, 'Agent history')).map((cells) => cells.slice(1, 3))).toEqual([
      ['pushed', 'v2'],
      ['applied', 'v2'],
      ['rollback-pushed', 'v1'],
      ['rollback-applied', 'v1'],
    ]),
  );
  await expectAccessible(page, 'rollout-rolled-back');
}, 90_000);

test('an operation decided on a view the rollout has left is refused with 412, shown in the dialog as the problem', async () => {
  const created = await call('POST', '/api/rollouts', {
    name: 'Second canary',
    configurationId: v2.configurationId,
    version: v2.version,
    target: { groupIds: [groupId] },
    strategy: { batchSize: 1, bakeSeconds: 600 },
  });
  expect((await call('POST', `/api/rollouts/${created.body.id}/start`)).status).toBe(200);
  // A slow network between this page and the hub: its events are held back, so the page
  // keeps showing the rollout as it was when another operator pauses it.
  const stale = await pageCutOffFromHub(page.context());
  try {
    await stale.goto(`${CONSOLE_ORIGIN}/rollouts/${created.body.id}`);
    await stale.getByRole('heading', { name: 'Second canary' }).waitFor();
    await onPage(async () =>
      expect(await stale.getByRole('region', { name: 'Rollout' }).getByTestId('rollout-state').textContent()).toBe(
        'running',
      ),
    );
    expect((await call('POST', `/api/rollouts/${created.body.id}/pause`)).status).toBe(200);

    await stale.getByRole('group', { name: 'Operations' }).getByRole('button', { name: 'Pause' }).click();
    const dialog = stale.getByRole('dialog', { name: 'Pause' });
    expect(await refusedInDialog(dialog, 'Pause')).toContain(
      `If-Match does not match the current ETag of rollout '${created.body.id}'.`,
    );
    await expectAccessible(stale, 'rollout-operation-refused');
    // Asked again, the dialog starts afresh: the refusal was about the attempt before.
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await dialog.waitFor({ state: 'detached' });
    await stale.getByRole('group', { name: 'Operations' }).getByRole('button', { name: 'Pause' }).click();
    await dialog.getByRole('button', { name: 'Pause' }).waitFor();
    expect(await dialog.getByRole('alert').count()).toBe(0);
  } finally {
    await stale.close();
  }
  expect((await call('GET', `/api/rollouts/${created.body.id}`)).body.state).toBe('paused');
  // Its agents are free for the next test's rollout.
  expect((await call('POST', `/api/rollouts/${created.body.id}/abort`)).status).toBe(200);
}, 60_000);

test('an operator creates a rollout with the form once the policy dry run for exactly those choices is shown; its group opens', async () => {
  // The fleet's agents are free again: the rollouts of the tests above have ended.
  const group = (await call('GET', `/api/groups/${groupId}`)).body;
  await page.goto(`${CONSOLE_ORIGIN}/rollouts`);
  await page.getByRole('link', { name: 'New rollout' }).click();
  await page.waitForURL(`${CONSOLE_ORIGIN}/rollouts/new`);
  await page.getByLabel('Name').fill('From the form');
  await page.getByRole('combobox', { name: 'Configuration' }).click();
  await page.getByRole('option', { name: v2.name, exact: true }).click();
  await page.getByRole('combobox', { name: 'Published version' }).click();
  await page.getByRole('option', { name: `v${v2.version}`, exact: true }).click();
  await page.getByRole('combobox', { name: 'Target groups' }).click();
  await page.getByRole('option', { name: group.name, exact: true }).click();
  await page.keyboard.press('Escape');
  // Batches of a share of the target: the dry run judges that share.
  await page.getByRole('combobox', { name: 'Batches of' }).click();
  await page.getByRole('option', { name: 'a share of the target (%)' }).click();
  await page.getByLabel('Percent of the target per batch').fill('50');
  // Weekends only, in Berlin, and not before the day after tomorrow.
  await page.getByRole('button', { name: 'Add a time window' }).click();
  const window = page.getByRole('group', { name: 'Window 1', exact: true });
  for (const day of ['Mon', 'Tue', 'Wed', 'Thu', 'Fri']) await window.getByLabel(day, { exact: true }).uncheck();
  for (const day of ['Sat', 'Sun']) await window.getByLabel(day, { exact: true }).check();
  await window.getByLabel('From').fill('00:00');
  await window.getByLabel('To').fill('24:00');
  // Typed and picked with the keyboard, as the only match: a click on the option raced the
  // dropdown's placement under load (the field's own row once took the click).
  const timeZone = window.getByRole('combobox', { name: 'Time zone' });
  await timeZone.fill('Europe/Berl');
  await page.getByRole('option', { name: 'Europe/Berlin', exact: true }).waitFor();
  await timeZone.press('ArrowDown');
  await timeZone.press('Enter');
  await onPage(async () => expect(await timeZone.inputValue()).toBe('Europe/Berlin'));
  const later = new Date(Date.now() + 2 * 86_400_000);
  const local = await page.evaluate(
    (ms) => new Date(ms - new Date(ms).getTimezoneOffset() * 60_000).toISOString().slice(0, 16),
    later.getTime(),
  );
  await page.getByLabel('Start at').fill(local);
  const startAt = await page.evaluate((value) => new Date(value).toISOString(), local);
  expect(await page.getByRole('button', { name: 'Create rollout' }).isDisabled()).toBe(true);

  await page.getByRole('button', { name: 'Preview policies' }).click();
  const verdict = page.getByRole('status');
  await verdict.waitFor();
  expect(await verdict.textContent()).toContain('The policies allow this push');
  expect(await verdict.textContent()).toContain('3 agents judged, none denied.');
  await expectAccessible(page, 'rollout-new');

  await page.getByRole('button', { name: 'Create rollout' }).click();
  await page.getByRole('heading', { name: 'From the form' }).waitFor();
  const id = new URL(page.url()).pathname.split('/').at(-1);
  const created = (await call('GET', `/api/rollouts/${id}`)).body;
  expect(created).toMatchObject({
    state: 'pending',
    configurationId: v2.configurationId,
    version: v2.version,
    target: { groupIds: [groupId] },
    strategy: {
      batchPercent: 50,
      bakeSeconds: 0,
      applyTimeoutSeconds: 300,
      maxFailurePercent: 0,
      onFailure: 'pause',
      windows: [{ days: ['sat', 'sun'], from: '00:00', to: '24:00', timeZone: 'Europe/Berlin' }],
    },
    startAt,
    progress: { total: 3 },
  });
  await onPage(async () => expect(await shownState()).toBe('pending'));
  expect(await page.getByRole('region', { name: 'Rollout' }).textContent()).toContain('batches of 50 %');
  expect(await page.getByRole('region', { name: 'Rollout' }).textContent()).toContain(
    'batches start only sat,sun 00:00–24:00 Europe/Berlin',
  );

  // Its target group, by name, opens the group's page.
  await page.getByRole('region', { name: 'Rollout' }).getByRole('link', { name: group.name, exact: true }).click();
  await page.waitForURL(`${CONSOLE_ORIGIN}/groups/${groupId}`);
  await page.getByRole('heading', { level: 2, name: group.name }).waitFor();
  await onPage(async () => expect(await page.getByRole('region', { name: 'Group' }).textContent()).toContain('3'));
}, 60_000);

test('the form finds a configuration by name however many others there are; a version page rolls that version out', async () => {
  // 250 more configurations: the form once offered only the first 200 and searched within them.
  for (let i = 0; i < 250; i += 25) {
    await Promise.all(
      Array.from({ length: 25 }, (_, j) =>
        call('POST', '/api/configurations', { name: `another-${i + j}`, format: 'yaml' }),
      ),
    );
  }
  await page.goto(`${CONSOLE_ORIGIN}/rollouts/new`);
  const field = page.getByRole('combobox', { name: 'Configuration' });
  await field.fill(v2.name);
  await page.getByRole('option', { name: v2.name, exact: true }).click();
  await page.getByRole('combobox', { name: 'Published version' }).click();
  await page.getByRole('option', { name: `v${v2.version}`, exact: true }).click();
  expect(await field.inputValue()).toBe(v2.name);

  // From the version itself: the form opens with the configuration and the version chosen.
  await page.goto(`${CONSOLE_ORIGIN}/configurations/${v2.configurationId}/versions/${v2.version}`);
  await page.getByRole('link', { name: 'Roll out this version' }).click();
  await page.waitForURL(`${CONSOLE_ORIGIN}/rollouts/new?configurationId=${v2.configurationId}&version=${v2.version}`);
  await onPage(async () => expect(await field.inputValue()).toBe(v2.name));
  await onPage(async () =>
    expect(await page.getByRole('combobox', { name: 'Published version' }).inputValue()).toBe(`v${v2.version}`),
  );
  await expectAccessible(page, 'rollout-new-preselected');
}, 60_000);

test('a rollback that restored nobody says so', async () => {
  // An aborted rollout that never pushed to anyone: rolling it back restores nothing.
  const id = await insertAbortedRollout('never-pushed', (await call('GET', `/api/rollouts/${pastRolloutId}`)).body);
  await page.goto(`${CONSOLE_ORIGIN}/rollouts/${id}`);
  await page.getByRole('heading', { name: 'never-pushed' }).waitFor();
  await confirmOperation(page, 'Roll back');
  await onPage(async () => expect(await shownState()).toBe('rolled-back'));
  await onPage(async () =>
    expect(await page.getByRole('region', { name: 'Rollout' }).textContent()).toContain(
      'Rollbacknothing was restored: no agent had been pushed',
    ),
  );
}, 60_000);

test('a viewer sees a rollout but none of the operations an operator gets there', async () => {
  await page.goto(`${CONSOLE_ORIGIN}/rollouts/${pastRolloutId}`);
  await page.getByRole('heading', { name: 'past-25' }).waitFor();
  expect(await page.getByRole('group', { name: 'Operations' }).getByRole('button').allTextContents()).toEqual([
    'Roll back',
  ]);

  const viewerContext = await newContext(browser);
  try {
    const viewer = await newSignedInPage(viewerContext, 'victor', `/rollouts/${pastRolloutId}`);
    await viewer.getByRole('heading', { name: 'past-25' }).waitFor();
    await viewer.getByRole('table', { name: 'Agent results' }).locator('tbody tr').first().waitFor();
    expect(await viewer.getByTestId('person').getByLabel('role viewer').count()).toBe(1);
    expect(await viewer.getByRole('group', { name: 'Operations' }).count()).toBe(0);
    const buttons = await viewer.getByRole('button').allTextContents();
    for (const operation of ['Start', 'Pause', 'Resume', 'Abort', 'Roll back'])
      expect(buttons).not.toContain(operation);
  } finally {
    await viewerContext.close();
  }
}, 60_000);
