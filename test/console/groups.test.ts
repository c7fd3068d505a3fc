/**
 * The group pages in a real Chromium against the real app, signed in on the real test
 * identity provider's page: an operator creates a group from the list, opens it, sees its
 * members (agents moved in through the API and through the page) in the API's cursor pages,
 * has a stale edit refused (412) and a delete with members refused (409) in their dialogs,
 * deletes it once empty, finds it among the deleted ones and restores it; an agent is moved
 * from its own page; a viewer reads all of it and gets no write. axe-core on every page, and
 * a screenshot of each under test-artifacts/console/.
 */
import type { Browser, Page } from 'playwright-core';
import { seedAgent, seedAgents } from '../support/agents-seed';
import { startTestApp, type TestApp } from '../support/app';
import {
  CONSOLE_ORIGIN,
  expectAccessible,
  launchBrowser,
  newContext,
  newSignedInPage,
  onPage,
  settled,
  tableRows,
  confirmDialog,
} from '../support/browser';

let t: TestApp;
let browser: Browser;
let page: Page;
let apiToken: string;
let seeded: string[];
let roaming: { id: string; name: string };
let groupId: string;
const cspViolations: string[] = [];

async function apiCall(method: string, path: string, body?: unknown): Promise<any> {
  const reply = await t.call(method, path, { token: apiToken, body });
  expect(reply.status).toBe(200);
  return reply.body;
}

const apiGet = (path: string) => apiCall('GET', path);

async function moveAll(agentIds: string[], toGroupId: string): Promise<void> {
  for (const id of agentIds) await apiCall('POST', `/api/agents/${id}/move`, { groupId: toGroupId });
}

/** Confirms the dialog a write's button opened, and waits until it closes. */
async function confirm(on: Page, label: string): Promise<void> {
  await on.getByRole('button', { name: label, exact: true }).click();
  const dialog = on.getByRole('dialog', { name: label });
  await confirmDialog(dialog, label, { exact: true });
}

/** Picks, in a searchable select, the option the API found for what was typed. */
async function choose(on: Page, select: string, typed: string, option: string | RegExp): Promise<void> {
  await on.getByRole('combobox', { name: select }).fill(typed);
  await on.getByRole('option', { name: option }).click();
}

/** A row of the page's facts table (Group, Agent), by its name. */
async function fact(on: Page, section: string, name: string): Promise<string> {
  const rows = await on.getByRole('region', { name: section }).locator('tr').allTextContents();
  return rows.find((row) => row.startsWith(name))?.slice(name.length) ?? '';
}

beforeAll(async () => {
  t = await startTestApp();
  apiToken = await t.pat('admin');
  seeded = await seedAgents(t.database.db, 'default', 26);
  const agent = await seedAgent(t.database.db, 'default', { name: 'roaming-agent' });
  roaming = { id: agent.id, name: agent.name };
  browser = await launchBrowser(t);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

afterEach(() => {
  expect(cspViolations).toEqual([]);
});

test('an operator creates a group from the list, whose filters and page are in the URL', async () => {
  page = await newSignedInPage(await newContext(browser), 'olivia', '/groups', cspViolations);
  await page.getByRole('heading', { name: 'Groups' }).waitFor();
  await onPage(async () => expect((await tableRows(page, 'Groups')).map((cells) => cells[0])).toEqual(['default']));

  await page.getByRole('button', { name: 'New group' }).click();
  const dialog = page.getByRole('dialog', { name: 'New group' });
  await dialog.getByLabel('Name').fill('edge-eu');
  await dialog.getByLabel('Description').fill('Edge collectors in Europe');
  await dialog.getByLabel('Labels').fill('region=eu\ntier=edge');
  await settled(dialog);
  await expectAccessible(page, 'group-create');
  await dialog.getByRole('button', { name: 'Save' }).click();
  await page.waitForURL((url) => /^\/groups\/[0-9a-f-]{36}$/.test(url.pathname));
  groupId = new URL(page.url()).pathname.split('/')[2]!;
  await page.getByRole('heading', { name: 'edge-eu' }).waitFor();
  expect(await apiGet(`/api/groups/${groupId}`)).toMatchObject({
    name: 'edge-eu',
    description: 'Edge collectors in Europe',
    labels: { region: 'eu', tier: 'edge' },
    deletedAt: null,
  });
  expect(await fact(page, 'Group', 'Labels')).toBe('region=eu, tier=edge');

  // Filters go to the URL, as the API's own query parameters, and survive a reload.
  await page.goto(`${CONSOLE_ORIGIN}/groups`);
  await page.getByLabel('Name').fill('EDGE');
  await page.getByLabel('Label').fill('region:eu');
  await page.getByRole('button', { name: 'Apply filters' }).click();
  await page.waitForURL((url) => url.search === '?q=EDGE&label=region%3Aeu');
  await page.reload();
  await onPage(async () =>
    expect(await tableRows(page, 'Groups')).toEqual([['edge-eu', '0', 'region=eu, tier=edge', expect.any(String)]]),
  );
  await expectAccessible(page, 'groups');
  await page.goto(`${CONSOLE_ORIGIN}/groups?label=region:us`);
  await onPage(async () => expect(await tableRows(page, 'Groups')).toEqual([['No group matches these filters.']]));
}, 90_000);

test('its members, moved in through the API and through the page, page with the API’s cursor', async () => {
  await moveAll(seeded.slice(0, 25), groupId);
  await page.goto(`${CONSOLE_ORIGIN}/groups/${groupId}`);
  await onPage(async () => expect(await tableRows(page, 'Members')).toHaveLength(25));

  // The 26th through the page: found by name, added after the confirmation (with If-Match).
  await choose(page, 'Agent to add', 'agent-000025', /^agent-000025/);
  await page.getByRole('button', { name: 'Add to group' }).click();
  const dialog = page.getByRole('dialog', { name: 'Add to group' });
  expect(await dialog.textContent()).toContain('into edge-eu');
  await confirmDialog(dialog, 'Add to group');
  await onPage(async () => expect(await fact(page, 'Group', 'Members')).toBe('26'));
  expect((await apiGet(`/api/agents/${seeded[25]}`)).groupId).toBe(groupId);
  await expectAccessible(page, 'group');

  // Members by id: a page of 25, then the last one; the cursor is in the URL and survives a reload.
  const ids = [...seeded].sort();
  await page.getByRole('button', { name: 'Next page' }).click();
  await page.waitForURL((url) => url.searchParams.has('cursor'));
  await page.reload();
  const last = await apiGet(`/api/agents/${ids[25]}`);
  await onPage(async () => expect((await tableRows(page, 'Members')).map((cells) => cells[0])).toEqual([last.name]));
  await page.getByRole('button', { name: 'First page' }).click();
  await onPage(async () => expect(await tableRows(page, 'Members')).toHaveLength(25));
}, 90_000);

test('a stale edit is 412 and a delete with members 409, in their dialogs; empty, it is deleted, found among the deleted and restored', async () => {
  // Edit: the form keeps the ETag it was filled with; a change made meanwhile wins.
  await page.getByRole('button', { name: 'Edit' }).click();
  const edit = page.getByRole('dialog', { name: 'Edit edge-eu' });
  await edit.getByLabel('Description').fill('Mine');
  const current = await t.call('GET', `/api/groups/${groupId}`, { token: apiToken });
  const theirs = await t.call('PUT', `/api/groups/${groupId}`, {
    token: apiToken,
    headers: { 'If-Match': current.headers.get('etag')! },
    body: { name: 'edge-eu', description: 'Theirs', labels: current.body.labels },
  });
  expect(theirs.status).toBe(200);
  // The page behind the dialog follows the change live (and with it the ETag it shows)…
  await onPage(async () => expect(await fact(page, 'Group', 'Description')).toBe('Theirs'));
  // …but the form was filled before it: saving it would lose their change.
  await edit.getByRole('button', { name: 'Save' }).click();
  const problem = edit.getByRole('alert').filter({ hasText: 'Precondition failed' });
  await problem.waitFor();
  expect((await apiGet(`/api/groups/${groupId}`)).description).toBe('Theirs');
  // No dead end: the latest group with this form's change on top, saying what changed meanwhile.
  await edit.getByText('Someone saved this group after you opened it').waitFor();
  await expectAccessible(page, 'group-edit-stale');
  await edit.getByRole('button', { name: 'Load the latest and re-apply my changes' }).click();
  await edit.getByText('Changed meanwhile: description. You changed description too: yours is kept.').waitFor();
  expect(await edit.getByLabel('Description').inputValue()).toBe('Mine');
  await edit.getByRole('button', { name: 'Save' }).click();
  await onPage(async () => expect(await fact(page, 'Group', 'Description')).toBe('Mine'));
  expect(await edit.count()).toBe(0);
  expect((await apiGet(`/api/groups/${groupId}`)).description).toBe('Mine');

  await page.getByRole('button', { name: 'Delete' }).click();
  const remove = page.getByRole('dialog', { name: 'Delete' });
  await remove.getByRole('button', { name: 'Delete' }).click();
  await remove.getByRole('alert').waitFor();
  expect(await remove.getByRole('alert').textContent()).toContain('still has agents');
  await remove.getByRole('button', { name: 'Cancel' }).click();

  // Emptied through the API: the page follows the moves live, then the delete goes through.
  const defaultGroup = (await apiGet('/api/groups?q=default')).items[0].id;
  await moveAll(seeded, defaultGroup);
  await onPage(async () => expect(await fact(page, 'Group', 'Members')).toBe('0'));
  await onPage(async () => expect(await tableRows(page, 'Members')).toEqual([['No agent in this group.']]));
  await confirm(page, 'Delete');
  await page.getByRole('button', { name: 'Restore' }).waitFor();
  expect((await apiGet(`/api/groups/${groupId}`)).deletedAt).not.toBeNull();
  expect(await page.getByRole('button', { name: 'Edit' }).count()).toBe(0);
  expect(await page.getByRole('combobox', { name: 'Agent to add' }).count()).toBe(0);

  // Not listed unless asked for; then listed as deleted.
  await page.goto(`${CONSOLE_ORIGIN}/groups`);
  await onPage(async () => expect((await tableRows(page, 'Groups')).map((cells) => cells[0])).toEqual(['default']));
  await page.getByLabel('Deleted groups too').check();
  await page.getByRole('button', { name: 'Apply filters' }).click();
  await page.waitForURL((url) => url.searchParams.get('includeDeleted') === 'true');
  await onPage(async () =>
    expect((await tableRows(page, 'Groups')).map((cells) => cells[0])).toEqual(['default', 'edge-eudeleted']),
  );
  await page.getByRole('link', { name: 'edge-eu' }).click();
  await page.getByRole('button', { name: 'Restore' }).waitFor();
  await expectAccessible(page, 'group-deleted');
  await confirm(page, 'Restore');
  await page.getByRole('button', { name: 'Delete' }).waitFor();
  expect(await fact(page, 'Group', 'State')).toBe('live');
  expect((await apiGet(`/api/groups/${groupId}`)).deletedAt).toBeNull();

  // The default group takes agents without one: the API refuses its delete (409), so none is offered.
  await page.goto(`${CONSOLE_ORIGIN}/groups/${defaultGroup}`);
  await page.getByRole('button', { name: 'Edit' }).waitFor();
  expect(await page.getByRole('button', { name: 'Delete' }).count()).toBe(0);
}, 90_000);

test('an operator moves an agent to another group from its page, which then shows the new group', async () => {
  await page.goto(`${CONSOLE_ORIGIN}/agents/${roaming.id}`);
  await page.getByRole('heading', { name: roaming.name }).waitFor();
  await onPage(async () => expect(await fact(page, 'Agent', 'Group')).toBe('default'));

  await choose(page, 'Move to group', 'edge', 'edge-eu');
  await page.getByRole('button', { name: 'Move', exact: true }).click();
  const dialog = page.getByRole('dialog', { name: 'Move' });
  expect(await dialog.textContent()).toContain(`Move ${roaming.name} to group edge-eu?`);
  await settled(dialog);
  await expectAccessible(page, 'agent-move');
  await confirmDialog(dialog, 'Move', { exact: true });
  await onPage(async () => expect(await fact(page, 'Agent', 'Group')).toBe('edge-eu'));
  expect((await apiGet(`/api/agents/${roaming.id}`)).groupId).toBe(groupId);

  await page.getByRole('region', { name: 'Agent' }).getByRole('link', { name: 'edge-eu' }).click();
  await page.waitForURL(`${CONSOLE_ORIGIN}/groups/${groupId}`);
  await onPage(async () => expect((await tableRows(page, 'Members')).map((cells) => cells[0])).toEqual([roaming.name]));
}, 90_000);

test('a viewer sees the groups, their members and agents, and no write button; a bad id is the API’s problem', async () => {
  const context = await newContext(browser);
  try {
    const viewer = await newSignedInPage(context, 'victor', '/groups', cspViolations);
    await onPage(async () => expect(await tableRows(viewer, 'Groups')).toHaveLength(2));
    expect(await viewer.getByRole('button').allTextContents()).toEqual([
      'Sign out',
      'Apply filters',
      'First page',
      'Next page',
    ]);

    await viewer.getByRole('link', { name: 'edge-eu' }).click();
    await onPage(async () =>
      expect((await tableRows(viewer, 'Members')).map((cells) => cells[0])).toEqual([roaming.name]),
    );
    expect(await viewer.getByRole('button').allTextContents()).toEqual(['Sign out', 'First page', 'Next page']);
    expect(await viewer.getByRole('combobox').count()).toBe(0);
    await expectAccessible(viewer, 'group-viewer');

    await viewer.getByRole('link', { name: roaming.name }).click();
    await viewer.getByRole('heading', { name: roaming.name }).waitFor();
    await onPage(async () => expect(await fact(viewer, 'Agent', 'Group')).toBe('edge-eu'));
    expect(await viewer.getByRole('button').allTextContents()).toEqual(['Sign out']);
    expect(await viewer.getByRole('combobox', { name: 'Move to group' }).count()).toBe(0);

    await viewer.goto(`${CONSOLE_ORIGIN}/groups/not-an-id`);
    const alert = viewer.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toContain('Request validation failed');
    expect(await alert.textContent()).toContain('path.id');
  } finally {
    await context.close();
  }
}, 90_000);

test('the groups list pages with the API’s cursor, in a URL that can be reloaded', async () => {
  for (let i = 0; i < 24; i++) {
    const created = await t.call('POST', '/api/groups', { token: apiToken, body: { name: `extra-${i}` } });
    expect(created.status).toBe(201);
  }
  // 26 groups, oldest first: a page of 25, then the last one made.
  await page.goto(`${CONSOLE_ORIGIN}/groups`);
  await onPage(async () => expect(await tableRows(page, 'Groups')).toHaveLength(25));
  await page.getByRole('button', { name: 'Next page' }).click();
  await page.waitForURL((url) => url.searchParams.has('cursor'));
  await page.reload();
  await onPage(async () => expect((await tableRows(page, 'Groups')).map((cells) => cells[0])).toEqual(['extra-23']));
  await page.getByRole('button', { name: 'First page' }).click();
  await page.waitForURL((url) => !url.searchParams.has('cursor'));
  await onPage(async () => expect((await tableRows(page, 'Groups'))[0]?.[0]).toBe('default'));
}, 90_000);
