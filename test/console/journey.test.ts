/**
 * An operator's whole journey through the console, in a real Chromium against a real
 * installation (api, agent gateway, worker on the suite's Temporal dev server, three
 * simulated agents over TLS), signed in on the real test identity provider's page: a new
 * configuration, its first version saved, published and rolled out to the fleet; a second
 * version rolled out one agent at a time, its progress arriving live, paused, resumed and
 * rolled back, after which the agent runs the first version again. Nothing is done through
 * the API but reading what the page claims.
 */
import type { Browser, Page } from 'playwright-core';
import {
  CONSOLE_ORIGIN,
  expectAccessible,
  launchBrowser,
  newContext,
  newSignedInPage,
  onPage,
  replaceEditorContent,
  screenshot,
  seriousAccessibilityViolations,
  tableRows,
  confirmOperation,
} from '../support/browser';
import { eventually } from '../support/eventually';
import { startRolloutEnv, type RolloutEnv } from '../support/rollout-env';

let env: RolloutEnv;
let browser: Browser;
let page: Page;
let groupName: string;
let agentIds: string[];
let agents: Awaited<ReturnType<RolloutEnv['fleet']>>['fleet']['agents'];
let configurationId: string;

const CONFIGURATION = 'journey-collector';
const V1 = 'receivers:\n  otlp: {}\nexporters:\n  otlp: {}\n';
const V2 = 'receivers:\n  otlp: {}\nexporters:\n  otlp: {}\n  debug: {}\n';
const EDITOR = 'Content of the new version (yaml)';

const apiGet = async (path: string) => {
  const reply = await env.t.call('GET', path, { token: env.operator });
  expect(reply.status).toBe(200);
  return reply.body;
};

const rolloutState = () => page.getByRole('region', { name: 'Rollout' }).getByTestId('rollout-state').textContent();

/** The Progress table's counts of one row ('All', 'Batch 1', 'Rollback'): total … skipped. */
async function progress(row: string): Promise<string[] | undefined> {
  return (await tableRows(page, 'Progress')).find((cells) => cells[0] === row)?.slice(1, 8); // not the bar
}

/** A draft saved in the editor and published from the configuration's page, as `vN`. */
async function saveAndPublish(version: number, content: string): Promise<void> {
  await page.getByRole('link', { name: 'New version' }).click();
  await page.waitForURL(`${CONSOLE_ORIGIN}/configurations/${configurationId}/new-version`);
  await replaceEditorContent(page, EDITOR, content);
  await page.getByRole('button', { name: 'Save as draft' }).click();
  await page.waitForURL(`${CONSOLE_ORIGIN}/configurations/${configurationId}`);
  await page.getByRole('button', { name: `Publish v${version}` }).click();
  const dialog = page.getByRole('dialog', { name: `Publish v${version}` });
  await dialog.getByRole('button', { name: `Publish v${version}` }).click();
  await dialog.waitFor({ state: 'detached' });
  await onPage(async () =>
    expect((await tableRows(page, 'Versions'))[0]?.slice(0, 2)).toEqual([`v${version}`, 'published']),
  );
}

/** A rollout of `vN` to the fleet's group made with the form, once its dry run allows it; its page opens. */
async function createRollout(name: string, version: number, strategy: { batchSize: number; bakeSeconds: number }) {
  await page.getByRole('navigation', { name: 'Console areas' }).getByRole('link', { name: 'Rollouts' }).click();
  await page.getByRole('link', { name: 'New rollout' }).click();
  await page.waitForURL(`${CONSOLE_ORIGIN}/rollouts/new`);
  await page.getByLabel('Name').fill(name);
  await page.getByRole('combobox', { name: 'Configuration' }).click();
  await page.getByRole('option', { name: CONFIGURATION, exact: true }).click();
  await page.getByRole('combobox', { name: 'Published version' }).click();
  await page.getByRole('option', { name: `v${version}`, exact: true }).click();
  await page.getByRole('combobox', { name: 'Target groups' }).click();
  await page.getByRole('option', { name: groupName, exact: true }).click();
  await page.keyboard.press('Escape');
  await page.getByLabel('Agents per batch').fill(String(strategy.batchSize));
  await page.getByLabel('Bake (seconds)').fill(String(strategy.bakeSeconds));
  await page.getByRole('button', { name: 'Preview policies' }).click();
  await onPage(async () =>
    expect(await page.getByRole('status').textContent()).toContain('3 agents judged, none denied.'),
  );
  await page.getByRole('button', { name: 'Create rollout' }).click();
  await page.getByRole('heading', { name }).waitFor();
  await onPage(async () => expect(await rolloutState()).toBe('pending'));
}

/** The configuration version each agent of the fleet reports as applied. */
async function appliedVersions(): Promise<(number | undefined)[]> {
  return Promise.all(
    agentIds.map(async (id) => {
      const agent = await apiGet(`/api/agents/${id}`);
      return agent.applied?.configurationId === configurationId ? agent.applied.version : undefined;
    }),
  );
}

beforeAll(async () => {
  env = await startRolloutEnv();
  const fleet = await env.fleet(3);
  agentIds = fleet.ids;
  agents = fleet.fleet.agents;
  groupName = (await apiGet(`/api/groups/${fleet.groupId}`)).name;
  browser = await launchBrowser(env.t);
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await env?.close();
});

test('an operator signs in and makes a configuration with a first version, published', async () => {
  page = await newSignedInPage(await newContext(browser), 'olivia', '/');
  await page.getByRole('heading', { name: 'Overview' }).waitFor();
  await page.getByRole('navigation', { name: 'Console areas' }).getByRole('link', { name: 'Configurations' }).click();
  await page.getByRole('button', { name: 'New configuration' }).click();
  const dialog = page.getByRole('dialog', { name: 'New configuration' });
  await dialog.getByLabel('Name').fill(CONFIGURATION);
  await dialog.getByRole('button', { name: 'Create' }).click();
  await page.waitForURL((url) => /^\/configurations\/[0-9a-f-]{36}$/.test(url.pathname));
  configurationId = new URL(page.url()).pathname.split('/')[2]!;

  await saveAndPublish(1, V1);
  const published = await apiGet(`/api/configurations/${configurationId}/versions/1`);
  expect(published).toMatchObject({ state: 'published', content: V1 });
}, 90_000);

test('the first version goes to the whole fleet, its completion arriving live', async () => {
  await createRollout('First version everywhere', 1, { batchSize: 3, bakeSeconds: 0 });
  await confirmOperation(page, 'Start');
  await onPage(async () => expect(await rolloutState()).toBe('completed'));
  await onPage(async () => expect(await progress('All')).toEqual(['3', '0', '0', '0', '3', '0', '0']));
  expect(await appliedVersions()).toEqual([1, 1, 1]);
}, 90_000);

test('the second version, one agent at a time: live progress, paused, resumed and rolled back to the first', async () => {
  await page.getByRole('navigation', { name: 'Console areas' }).getByRole('link', { name: 'Configurations' }).click();
  await page.getByRole('link', { name: CONFIGURATION }).click();
  await page.waitForURL(`${CONSOLE_ORIGIN}/configurations/${configurationId}`);
  await saveAndPublish(2, V2);

  // A long bake holds the rollout after its first agent, where the operator pauses it.
  await createRollout('Debug exporter, carefully', 2, { batchSize: 1, bakeSeconds: 600 });
  // What it pushes and to whom, by name (the rollout itself holds only their ids).
  await onPage(async () => {
    const facts = await page.getByRole('region', { name: 'Rollout' }).textContent();
    expect(facts).toContain(`${CONFIGURATION} v2`);
    expect(facts).toContain(`group ${groupName}`);
  });
  await confirmOperation(page, 'Start');
  // The first batch's result comes through the hub: nothing else refreshes the page.
  await onPage(async () => expect(await progress('Batch 1')).toEqual(['1', '0', '0', '0', '1', '0', '0']));
  expect(await rolloutState()).toBe('running');
  await expectAccessible(page, 'journey-rollout-live');

  await confirmOperation(page, 'Pause');
  await onPage(async () => expect(await rolloutState()).toBe('paused'));
  expect(await seriousAccessibilityViolations(page)).toEqual([]); // the paused badge's contrast too

  // The overview pictures the fleet mid-rollout: one agent on v2, two behind on v1, the
  // rollout paused after 1 of 3, and agents online from the worker's census.
  await page.getByRole('navigation', { name: 'Console areas' }).getByRole('link', { name: 'Overview' }).click();
  const versions = page.getByRole('list', { name: `Agents of ${CONFIGURATION} by desired version` });
  await onPage(async () =>
    expect(await versions.getByRole('listitem').allTextContents()).toEqual(['v2 (published): 1', 'v1: 2']),
  );
  const configurations = page.getByTestId('configurations-by-version');
  expect(await configurations.textContent()).toContain('3 agents, 2 behind');
  const inFlight = page.getByTestId('rollouts-in-flight');
  await onPage(async () => {
    expect(await inFlight.textContent()).toContain('Debug exporter, carefully');
    expect(await inFlight.textContent()).toContain('paused, batch 1');
    expect(await inFlight.textContent()).toContain('1 succeeded, 0 failed, 0 applying, 0 deferred of 3');
  });
  await onPage(async () =>
    expect(await page.getByTestId('online-chart').getAttribute('aria-label')).toMatch(
      /^Agents online over the last 24 hours: (between \d+ and \d+|\d+ throughout), of \d+ enrolled at the last count\.$/,
    ),
  );
  await expectAccessible(page, 'overview-mid-rollout');
  // The version behind leads to its agents.
  await versions.getByRole('link', { name: 'v1: 2' }).click();
  await page.waitForURL((url) => url.pathname === '/agents' && url.searchParams.get('version') === '1');
  await onPage(async () => expect(await tableRows(page, 'Agents')).toHaveLength(2));
  await page.goBack();
  await page.goBack();
  await onPage(async () => expect(await rolloutState()).toBe('paused'));
  await confirmOperation(page, 'Resume');
  await onPage(async () => expect(await rolloutState()).toBe('running'));
  await confirmOperation(page, 'Roll back');
  await onPage(async () => expect(await rolloutState()).toBe('rolled-back'));
  await onPage(async () => expect(await progress('Rollback')).toEqual(['', '0', '0', '', '1', '0', '0']));
  await screenshot(page, 'journey-rolled-back');

  // What the fleet runs: the agent of batch 1 is back on v1; the others never left it.
  await eventually(async () => expect(await appliedVersions()).toEqual([1, 1, 1]), 20_000);
}, 120_000);

test('an agent runs what it should, until someone edits it on its host: its page shows the difference', async () => {
  const agent = agents[0]!;
  await page.goto(`${CONSOLE_ORIGIN}/agents/${agent.id}`);
  const section = page.getByRole('region', { name: 'Effective configuration' });
  await onPage(async () => expect(await section.textContent()).toContain('It runs exactly its desired'));
  // Edited by hand on the host: the debug exporter added, which v1 does not have.
  agent.setEffectiveConfig({ [CONFIGURATION]: { body: V2, contentType: 'text/yaml' } });
  await eventually(async () =>
    expect((await apiGet(`/api/agents/${agent.id}/effective-configuration`)).desired.matches).toBe(false),
  );
  await page.reload();
  await onPage(async () => expect(await section.textContent()).toContain('It does not run its desired'));
  const rows = await tableRows(page, 'Side-by-side diff');
  expect(rows.some((cells) => cells[3]?.includes('debug: {}'))).toBe(true);
  await expectAccessible(page, 'agent-effective-configuration');
}, 60_000);
