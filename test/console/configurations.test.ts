/**
 * The configuration pages in a real Chromium against the real app, signed in on the real
 * test identity provider's page: an operator creates a configuration, saves a draft the API
 * refuses (its problem shown, with line and column), fixes and saves it, publishes it, saves
 * a second version from the first's content and compares the two side by side. A Git-managed
 * configuration offers no edit; a viewer sees no write button. axe-core on every page, and a
 * screenshot of each under test-artifacts/console/.
 */
import { randomUUID } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { startTestApp, type TestApp } from '../support/app';
import {
  CONSOLE_ORIGIN,
  editorText,
  expectAccessible,
  launchBrowser,
  newContext,
  newSignedInPage,
  onPage,
  replaceEditorContent,
  tableRows,
  confirmDialog,
} from '../support/browser';

let t: TestApp;
let browser: Browser;
let page: Page;
let apiToken: string;
let configurationId: string;
const cspViolations: string[] = [];

async function apiGet(path: string): Promise<any> {
  const reply = await t.call('GET', path, { token: apiToken });
  expect(reply.status).toBe(200);
  return reply.body;
}

/** The accessible name of the new version's editor. */
const NEW_VERSION = 'Content of the new version (yaml)';

async function typeContent(content: string): Promise<void> {
  await replaceEditorContent(page, NEW_VERSION, content);
}

beforeAll(async () => {
  t = await startTestApp();
  apiToken = await t.pat('admin');
  browser = await launchBrowser(t);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

afterEach(() => {
  expect(cspViolations).toEqual([]);
});

test('an operator creates a configuration from the list, whose filters and page are in the URL', async () => {
  page = await newSignedInPage(await newContext(browser), 'olivia', '/configurations', cspViolations);
  await page.getByRole('heading', { name: 'Configurations' }).waitFor();
  await onPage(async () =>
    expect(await tableRows(page, 'Configurations')).toEqual([['No configuration matches these filters.']]),
  );

  await page.getByRole('button', { name: 'New configuration' }).click();
  const dialog = page.getByRole('dialog', { name: 'New configuration' });
  await dialog.getByLabel('Name').fill('web-frontend');
  await expectAccessible(page, 'configuration-create');
  await dialog.getByRole('button', { name: 'Create' }).click();
  await page.waitForURL((url) => /^\/configurations\/[0-9a-f-]{36}$/.test(url.pathname));
  configurationId = new URL(page.url()).pathname.split('/')[2]!;
  await page.getByRole('heading', { name: 'web-frontend' }).waitFor();
  expect(await apiGet(`/api/configurations/${configurationId}`)).toMatchObject({
    name: 'web-frontend',
    format: 'yaml',
  });

  // Filters go to the URL, as the API's own query parameters, and survive a reload.
  await page.goto(`${CONSOLE_ORIGIN}/configurations`);
  await page.getByLabel('Name').fill('WEB');
  await page.getByRole('button', { name: 'Apply filters' }).click();
  await page.waitForURL((url) => url.searchParams.get('q') === 'WEB');
  await page.reload();
  await onPage(async () =>
    expect((await tableRows(page, 'Configurations')).map((cells) => cells[0])).toEqual(['web-frontend']),
  );
  await expectAccessible(page, 'configurations');
  await page.goto(`${CONSOLE_ORIGIN}/configurations?q=web&format=json`);
  await onPage(async () =>
    expect((await tableRows(page, 'Configurations'))[0]?.[0]).toBe('No configuration matches these filters.'),
  );
}, 60_000);

test('a draft the API refuses shows its problem with line and column; fixed, it is saved and then published', async () => {
  await page.goto(`${CONSOLE_ORIGIN}/configurations/${configurationId}`);
  await page.getByRole('link', { name: 'New version' }).click();
  await page.waitForURL(`${CONSOLE_ORIGIN}/configurations/${configurationId}/new-version`);

  await typeContent('server:\n  port: 80\n   bad: [1, 2\n');
  await page.getByRole('button', { name: 'Save as draft' }).click();
  const alert = page.getByRole('alert');
  await alert.waitFor();
  expect(await alert.textContent()).toContain('Request validation failed');
  expect(await alert.textContent()).toMatch(/body\.content: line \d+, column \d+: invalid YAML/);
  expect((await apiGet(`/api/configurations/${configurationId}`)).latestVersion).toBe(0);
  // The cursor is on the line the problem names.
  const [, line] = /line (\d+), column \d+/.exec((await alert.textContent()) ?? '')!;
  const lines = ['server:', '  port: 80', '   bad: [1, 2', ''];
  await onPage(async () => expect(await page.locator('.cm-activeLine').textContent()).toBe(lines[Number(line) - 1]));
  await expectAccessible(page, 'configuration-editor');

  await typeContent('server:\n  port: 80\n  workers: 4\n');
  // The editor keeps no keyboard user in: Tab moves on to the save button, Enter saves.
  await page.keyboard.press('Tab');
  expect(await page.getByRole('button', { name: 'Save as draft' }).evaluate((button) => button.matches(':focus'))).toBe(
    true,
  );
  await page.keyboard.press('Enter');
  await page.waitForURL(`${CONSOLE_ORIGIN}/configurations/${configurationId}`);
  const saved = (await apiGet(`/api/configurations/${configurationId}/versions`)).items;
  expect(saved).toHaveLength(1);
  await onPage(async () => {
    const [version] = await tableRows(page, 'Versions');
    expect(version?.slice(0, 3)).toEqual(['v1', 'draft', saved[0].author]);
  });
  expect(saved[0].author).toBeTruthy();

  await page.getByRole('button', { name: 'Publish v1' }).click();
  const confirm = page.getByRole('dialog', { name: 'Publish v1' });
  await confirmDialog(confirm, 'Publish v1');
  await onPage(async () => expect((await tableRows(page, 'Versions'))[0]?.[1]).toBe('published'));
  expect((await apiGet(`/api/configurations/${configurationId}/versions/1`)).state).toBe('published');
}, 60_000);

test('a second version starts from the latest content, and any two versions compare side by side', async () => {
  await page.getByRole('link', { name: 'New version' }).click();
  await onPage(async () => expect(await editorText(page, NEW_VERSION)).toBe('server:\n  port: 80\n  workers: 4\n'));
  await typeContent('server:\n  port: 8080\n  workers: 4\n  tls: true\n');
  await page.getByRole('button', { name: 'Save as draft' }).click();
  await page.waitForURL(`${CONSOLE_ORIGIN}/configurations/${configurationId}`);
  await onPage(async () =>
    expect((await tableRows(page, 'Versions')).map((cells) => cells.slice(0, 2))).toEqual([
      ['v2', 'draft'],
      ['v1', 'published'],
    ]),
  );
  await expectAccessible(page, 'configuration');

  // The form starts on the two newest; the comparison is a URL of its own.
  await page.getByRole('button', { name: 'Compare' }).click();
  await page.waitForURL(`${CONSOLE_ORIGIN}/configurations/${configurationId}/compare?from=1&to=2`);
  const diff = page.getByRole('table', { name: 'Side-by-side diff' });
  await diff.waitFor();
  expect(await diff.locator('thead').textContent()).toBe('Version 1Version 2');
  const changed = diff.locator('tr[data-kind="changed"]');
  expect(await changed.locator('td').allTextContents()).toEqual(['2', '−  port: 80', '2', '+  port: 8080']);
  const added = diff.locator('tr[data-kind="added"]');
  expect(await added.locator('td').allTextContents()).toEqual(['', '', '4', '+  tls: true']);
  await onPage(async () =>
    expect(await tableRows(page, 'Changed keys')).toEqual([
      ['changed', 'server.port', '80', '8080'],
      ['added', 'server.tls', '', 'true'],
    ]),
  );
  const api = await apiGet(`/api/configurations/${configurationId}/versions/compare?from=1&to=2`);
  expect(api.changes.map((c: any) => `${c.op} ${c.path}`)).toEqual(['changed server.port', 'added server.tls']);
  await expectAccessible(page, 'configuration-compare');

  // The other way round, chosen on the page.
  await page.getByRole('combobox', { name: 'From version' }).click();
  await page.getByRole('option', { name: '2', exact: true }).click();
  await page.getByRole('combobox', { name: 'To version' }).click();
  await page.getByRole('option', { name: '1', exact: true }).click();
  await page.getByRole('button', { name: 'Compare' }).click();
  await page.waitForURL((url) => url.search === '?from=2&to=1');
  await onPage(async () =>
    expect((await tableRows(page, 'Changed keys'))[1]).toEqual(['removed', 'server.tls', 'true', '']),
  );

  // A version as saved, read only.
  await page.goto(`${CONSOLE_ORIGIN}/configurations/${configurationId}/versions/1`);
  await onPage(async () =>
    expect(await editorText(page, 'Content of version 1')).toBe('server:\n  port: 80\n  workers: 4\n'),
  );
  expect(await page.getByRole('textbox', { name: 'Content of version 1' }).getAttribute('contenteditable')).toBe(
    'false',
  );
  await expectAccessible(page, 'configuration-version');
}, 60_000);

test('a configuration managed by Git says so and offers no edit; publishing its drafts stays', async () => {
  const created = await t.call('POST', '/api/configurations', {
    token: apiToken,
    body: { name: 'from-git', format: 'yaml' },
  });
  expect(created.status).toBe(201);
  const draft = await t.call('POST', `/api/configurations/${created.body.id}/versions`, {
    token: apiToken,
    body: { content: 'a: 1\n' },
  });
  expect(draft.status).toBe(201);
  // A Git source's row as the api writes it (its sync loop is not needed here).
  const sourceId = randomUUID();
  await t.database.db('git_sources').insert({
    id: sourceId,
    tenant_id: 'default',
    name: 'infra-repo',
    repo_url: 'https://git.example.com/infra.git',
    branch: 'main',
    path: '',
    poll_interval_seconds: 3600,
    auto_publish: false,
    paused: true,
    created_by: 'test',
  });
  await t.database.db('configurations').where({ id: created.body.id }).update({ managed_by: sourceId });

  await page.goto(`${CONSOLE_ORIGIN}/configurations/${created.body.id}`);
  await page.getByRole('heading', { name: 'from-git' }).waitFor();
  await page.getByText('Managed by Git', { exact: true }).waitFor();
  // The source by its name, a link to its page.
  const source = page.getByRole('link', { name: 'Git source infra-repo' });
  expect(await source.getAttribute('href')).toBe(`/git-sources/${sourceId}`);
  await page.getByRole('button', { name: 'Publish v1' }).waitFor();
  expect(await page.getByRole('link', { name: 'New version' }).count()).toBe(0);
  await expectAccessible(page, 'configuration-managed-by-git');

  await page.goto(`${CONSOLE_ORIGIN}/configurations/${created.body.id}/new-version`);
  await page.getByText('Managed by Git', { exact: true }).waitFor();
  expect(await page.getByRole('button', { name: 'Save as draft' }).count()).toBe(0);
});

test('a viewer sees the configurations, their versions and comparisons, and no write button', async () => {
  const context = await newContext(browser);
  try {
    const viewer = await newSignedInPage(context, 'victor', `/configurations/${configurationId}`, cspViolations);
    await viewer.getByRole('heading', { name: 'web-frontend' }).waitFor();
    await onPage(async () => expect(await tableRows(viewer, 'Versions')).toHaveLength(2));
    // Reading only: comparing and paging, no create, save or publish.
    expect(await viewer.getByRole('button').allTextContents()).toEqual([
      'Sign out',
      'Compare',
      'Newest versions',
      'Older versions',
    ]);
    expect(await viewer.getByRole('link', { name: 'New version' }).count()).toBe(0);

    await viewer.goto(`${CONSOLE_ORIGIN}/configurations`);
    await onPage(async () => expect(await tableRows(viewer, 'Configurations')).toHaveLength(2));
    expect(await viewer.getByRole('button').allTextContents()).toEqual([
      'Sign out',
      'Apply filters',
      'First page',
      'Next page',
    ]);
  } finally {
    await context.close();
  }
}, 60_000);

test('versions and configurations page with the API’s cursors, in a URL that can be reloaded; a bad id is the API’s problem', async () => {
  const created = await t.call('POST', '/api/configurations', {
    token: apiToken,
    body: { name: 'many-versions', format: 'json' },
  });
  expect(created.status).toBe(201);
  const id = created.body.id;
  for (let i = 1; i <= 27; i++) {
    const saved = await t.call('POST', `/api/configurations/${id}/versions`, {
      token: apiToken,
      body: { content: `{ "n": ${i} }` },
    });
    expect(saved.status).toBe(201);
  }
  for (let i = 0; i < 23; i++) {
    const more = await t.call('POST', '/api/configurations', {
      token: apiToken,
      body: { name: `extra-${i}`, format: 'text' },
    });
    expect(more.status).toBe(201);
  }

  await page.goto(`${CONSOLE_ORIGIN}/configurations/${id}`);
  await onPage(async () => expect((await tableRows(page, 'Versions'))[0]?.[0]).toBe('v27'));
  expect(await tableRows(page, 'Versions')).toHaveLength(25);
  await page.getByRole('button', { name: 'Older versions' }).click();
  await page.waitForURL((url) => url.searchParams.has('cursor'));
  await page.reload();
  await onPage(async () => expect((await tableRows(page, 'Versions')).map((cells) => cells[0])).toEqual(['v2', 'v1']));
  await page.getByRole('button', { name: 'Newest versions' }).click();
  await onPage(async () => expect((await tableRows(page, 'Versions'))[0]?.[0]).toBe('v27'));

  // 26 configurations: a page of 25, then the first one made.
  await page.goto(`${CONSOLE_ORIGIN}/configurations`);
  await onPage(async () => expect(await tableRows(page, 'Configurations')).toHaveLength(25));
  await page.getByRole('button', { name: 'Next page' }).click();
  await page.waitForURL((url) => url.searchParams.has('cursor'));
  await page.reload();
  await onPage(async () =>
    expect((await tableRows(page, 'Configurations')).map((cells) => cells[0])).toEqual(['web-frontend']),
  );

  await page.goto(`${CONSOLE_ORIGIN}/configurations/not-an-id`);
  const alert = page.getByRole('alert');
  await alert.waitFor();
  expect(await alert.textContent()).toContain('Request validation failed');
  expect(await alert.textContent()).toContain('path.id');
}, 60_000);
