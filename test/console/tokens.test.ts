/**
 * The bootstrap token, pool and access token pages in a real Chromium against the real app,
 * signed in on the real test identity provider's page: an admin issues a bootstrap token,
 * copies its secret (shown once) and closes the dialog, after which nothing in the page, its
 * storage, its URL or its JavaScript heap holds it; the copied secret is the one the agent
 * gateway redeems; revoked, it is refused. A pool is created and a token issued from it up to
 * its maximum. A PAT is created, works as a bearer, is revoked and is then refused. A viewer
 * and an operator see what the API lets them and no write they cannot use. axe-core on every
 * page, and a screenshot of each under test-artifacts/console/.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { redeemBootstrapToken } from '../../domain/tokens/bootstrap-tokens';
import { startTestApp, type TestApp } from '../support/app';
import {
  CONSOLE_ORIGIN,
  expectAccessible,
  heapHolds,
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
let admin: BrowserContext;
let page: Page;
let apiToken: string;
let edgeGroupId: string;
let poolId: string;
const cspViolations: string[] = [];

async function apiGet(path: string): Promise<any> {
  const reply = await t.call('GET', path, { token: apiToken });
  expect(reply.status).toBe(200);
  return reply.body;
}

/** axe once nothing moves: run during a dialog's fade-in it measures half-faded text. */
async function expectSettledAccessible(on: Page, name: string): Promise<void> {
  await settled(on);
  await expectAccessible(on, name);
}

/** The secret shown in the dialog, after "Copy" put it on the clipboard. */
async function copySecret(on: Page, dialogName: string, label: string): Promise<string> {
  const dialog = on.getByRole('dialog', { name: dialogName });
  await dialog.getByText('It will not be shown again').waitFor();
  const secret = await dialog.getByLabel(label).inputValue();
  await dialog.getByRole('button', { name: 'Copy' }).click();
  await dialog.getByText('Copied to the clipboard.').waitFor();
  expect(await on.evaluate('navigator.clipboard.readText()')).toBe(secret);
  return secret;
}

async function closeSecretDialog(on: Page, dialogName: string): Promise<void> {
  const dialog = on.getByRole('dialog', { name: dialogName });
  await confirmDialog(dialog, 'Done');
}

/** Where the page could still show or leak `secret`: its document, its URL, its local or session storage. */
async function traceOf(on: Page, secret: string): Promise<string[]> {
  const traces: string[] = [];
  if ((await on.content()).includes(secret)) traces.push('document');
  if (on.url().includes(secret)) traces.push('url');
  const storage = await on.evaluate(() => {
    // The page's Storage objects, whose items are their own properties (this file is typed without the DOM).
    const { localStorage, sessionStorage } = globalThis as unknown as Record<string, Record<string, string>>;
    return JSON.stringify({ ...localStorage, ...sessionStorage });
  });
  if (storage.includes(secret)) traces.push('storage');
  return traces;
}

beforeAll(async () => {
  t = await startTestApp();
  apiToken = await t.pat('admin');
  const edge = await t.call('POST', '/api/groups', { token: apiToken, body: { name: 'edge' } });
  expect(edge.status).toBe(201);
  edgeGroupId = edge.body.id;
  // A secure context, as the console is over HTTPS: the copy button's Clipboard API exists only there.
  browser = await launchBrowser(t, { secureContext: true });
  admin = await newContext(browser);
  await admin.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: CONSOLE_ORIGIN });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

afterEach(() => {
  expect(cspViolations).toEqual([]);
});

test('an admin issues a bootstrap token whose secret is shown once, copied, and gone once the dialog closes', async () => {
  page = await newSignedInPage(admin, 'alice', '/tokens', cspViolations);
  await page.getByRole('heading', { name: 'Bootstrap tokens' }).waitFor();
  await onPage(async () =>
    expect(await tableRows(page, 'Bootstrap tokens')).toEqual([['No bootstrap token matches these filters.']]),
  );

  await page.getByRole('button', { name: 'New bootstrap token' }).click();
  const form = page.getByRole('dialog', { name: 'New bootstrap token' });
  // A name the API refuses: its problem, as the API words it.
  await form.getByLabel('Name').fill('-bad name');
  await form.getByRole('button', { name: 'Issue' }).click();
  await form.getByRole('alert').waitFor();
  expect(await form.getByRole('alert').textContent()).toContain('Request validation failed');
  expect(await form.getByRole('alert').textContent()).toContain('body.name');

  await form.getByLabel('Name').fill('edge-rack-1');
  await form.getByRole('combobox', { name: 'Group' }).click();
  await page.getByRole('option', { name: 'edge', exact: true }).click();
  await form.getByLabel('Expires in').fill('2');
  await form.getByLabel('Enrollments allowed').fill('3');
  await expectSettledAccessible(page, 'bootstrap-token-create');
  await form.getByRole('button', { name: 'Issue' }).click();

  const secret = await copySecret(page, 'Bootstrap token edge-rack-1', 'Bootstrap token');
  expect(secret).toMatch(/^svc-bt\.[a-z2-7]{32}\.[a-z2-7]{7}$/);
  await expectSettledAccessible(page, 'bootstrap-token-secret');
  const [issued] = (await apiGet('/api/tokens')).items;
  expect(issued).toMatchObject({ name: 'edge-rack-1', state: 'active', uses: 0, maxUses: 3, groupId: edgeGroupId });
  // Two hours as chosen (the expiry is the app's clock, the creation the database's: a few ms apart).
  expect(Math.abs(Date.parse(issued.expiresAt) - Date.parse(issued.createdAt) - 2 * 3600_000)).toBeLessThan(5_000);

  await closeSecretDialog(page, 'Bootstrap token edge-rack-1');
  await onPage(async () =>
    expect((await tableRows(page, 'Bootstrap tokens'))[0]?.slice(0, 5)).toEqual([
      'edge-rack-1',
      'active',
      '0 of 3',
      'edge',
      '—',
    ]),
  );
  expect(await traceOf(page, secret)).toEqual([]);
  expect(await heapHolds(page, [secret])).toEqual([]);
  await page.reload();
  await onPage(async () => expect((await tableRows(page, 'Bootstrap tokens'))[0]?.[2]).toBe('0 of 3'));
  expect(await page.getByRole('dialog').count()).toBe(0);
  expect(await traceOf(page, secret)).toEqual([]);

  // The copied secret is the token itself: the agent gateway's redemption spends one use of it.
  expect(await redeemBootstrapToken(t.database.db, secret)).toMatchObject({ ok: true });
  await page.reload();
  await onPage(async () => expect((await tableRows(page, 'Bootstrap tokens'))[0]?.[2]).toBe('1 of 3'));
  await expectSettledAccessible(page, 'bootstrap-tokens');
}, 90_000);

test('the filters go to the URL as the API’s parameters; revoking asks first, and the token is then refused', async () => {
  await page.getByRole('combobox', { name: 'State' }).click();
  await page.getByRole('option', { name: 'revoked', exact: true }).click();
  await page.waitForURL((url) => url.searchParams.get('state') === 'revoked');
  await page.reload();
  await onPage(async () =>
    expect(await tableRows(page, 'Bootstrap tokens')).toEqual([['No bootstrap token matches these filters.']]),
  );
  await page.goto(`${CONSOLE_ORIGIN}/tokens?state=active&groupId=${edgeGroupId}`);
  await onPage(async () =>
    expect((await tableRows(page, 'Bootstrap tokens')).map((row) => row[0])).toEqual(['edge-rack-1']),
  );

  await page.getByRole('button', { name: 'Revoke edge-rack-1' }).click();
  const confirm = page.getByRole('dialog', { name: 'Revoke edge-rack-1' });
  await confirm.getByText('No agent can enroll with it any more').waitFor();
  await confirmDialog(confirm, 'Revoke edge-rack-1');
  await onPage(async () =>
    expect(await tableRows(page, 'Bootstrap tokens')).toEqual([['No bootstrap token matches these filters.']]),
  );
  const [revoked] = (await apiGet('/api/tokens')).items;
  expect(revoked.state).toBe('revoked');
  await page.goto(`${CONSOLE_ORIGIN}/tokens?state=revoked`);
  await onPage(async () =>
    expect((await tableRows(page, 'Bootstrap tokens'))[0]?.slice(0, 2)).toEqual(['edge-rack-1', 'revoked']),
  );
  // A revoked token offers no revoke.
  expect(await page.getByRole('button', { name: /^Revoke/ }).count()).toBe(0);
}, 90_000);

test('a pool is created, a token issued from it up to its maximum, and the next refused with the API’s problem', async () => {
  await page.goto(`${CONSOLE_ORIGIN}/tokens`);
  await page.getByRole('link', { name: 'Token pools' }).click();
  await page.getByRole('heading', { name: 'Token pools' }).waitFor();
  await page.getByRole('button', { name: 'New pool' }).click();
  const form = page.getByRole('dialog', { name: 'New token pool' });
  await form.getByLabel('Name').fill('rack-pool');
  await form.getByLabel('Active tokens at most').fill('1');
  await expectSettledAccessible(page, 'token-pool-create');
  await form.getByRole('button', { name: 'Create' }).click();
  await page.waitForURL((url) => /^\/tokens\/pools\/[0-9a-f-]{36}$/.test(url.pathname));
  poolId = new URL(page.url()).pathname.split('/')[3]!;
  await page.getByRole('heading', { name: 'Pool rack-pool' }).waitFor();
  expect(await apiGet(`/api/tokens/pools/${poolId}`)).toMatchObject({
    name: 'rack-pool',
    maxActiveTokens: 1,
    tokenMaxUses: 1,
    tokenTtlSeconds: 86_400,
    activeTokens: 0,
  });

  await page.getByRole('button', { name: 'Issue a token' }).click();
  const secret = await copySecret(page, 'Bootstrap token rack-pool #1', 'Bootstrap token');
  await closeSecretDialog(page, 'Bootstrap token rack-pool #1');
  await onPage(async () =>
    expect((await tableRows(page, 'Bootstrap tokens'))[0]?.slice(0, 3)).toEqual(['rack-pool #1', 'active', '0 of 1']),
  );
  await onPage(async () =>
    expect(await page.getByRole('row', { name: /Active tokens/ }).textContent()).toContain('1 of 1'),
  );
  expect(await traceOf(page, secret)).toEqual([]);
  expect(await redeemBootstrapToken(t.database.db, secret)).toMatchObject({ ok: true });

  // Used up, it no longer counts: one more may be issued, then the pool is at its maximum.
  await page.reload();
  await page.getByRole('button', { name: 'Issue a token' }).click();
  await closeSecretDialog(page, 'Bootstrap token rack-pool #2');
  await page.getByRole('button', { name: 'Issue a token' }).click();
  const alert = page.getByRole('alert');
  await alert.waitFor();
  expect(await alert.textContent()).toContain('already has 1 active tokens, its maximum');
  await expectSettledAccessible(page, 'token-pool');

  await page.goto(`${CONSOLE_ORIGIN}/tokens/pools`);
  await onPage(async () =>
    expect((await tableRows(page, 'Token pools'))[0]?.slice(0, 5)).toEqual([
      'rack-pool',
      'default',
      '1 of 1',
      '1 d',
      '1',
    ]),
  );
  await expectSettledAccessible(page, 'token-pools');
  await page.goto(`${CONSOLE_ORIGIN}/tokens?poolId=${poolId}`);
  await onPage(async () => expect(await tableRows(page, 'Bootstrap tokens')).toHaveLength(2));
  // The pool by its name, read once it is shown.
  await onPage(async () =>
    expect((await tableRows(page, 'Bootstrap tokens')).map((row) => row[4])).toEqual(['rack-pool', 'rack-pool']),
  );
}, 90_000);

test('an admin creates an access token that works as a bearer, then revokes it and the API refuses it', async () => {
  await page.goto(`${CONSOLE_ORIGIN}/pats`);
  await page.getByRole('heading', { name: 'Access tokens' }).waitFor();
  await page.getByRole('button', { name: 'New access token' }).click();
  const form = page.getByRole('dialog', { name: 'New access token' });
  await form.getByLabel('Name').fill('ci-deployer');
  await form.getByRole('combobox', { name: 'Role' }).click();
  await page.getByRole('option', { name: 'operator', exact: true }).click();
  await form.getByLabel('Allowed endpoints').fill('GET /api/agents\nGET /api/agents/{id}');
  await form.getByLabel('Expires in (days)').fill('7');
  await expectSettledAccessible(page, 'access-token-create');
  await form.getByRole('button', { name: 'Create' }).click();

  const secret = await copySecret(page, 'Access token ci-deployer', 'Access token');
  expect(secret).toMatch(/^svc-pat\./);
  await closeSecretDialog(page, 'Access token ci-deployer');
  await onPage(async () =>
    expect((await tableRows(page, 'Access tokens'))[0]?.slice(0, 4)).toEqual([
      'ci-deployer',
      'operator',
      'active',
      'GET /api/agents, GET /api/agents/{id}',
    ]),
  );
  expect(await traceOf(page, secret)).toEqual([]);
  expect((await t.call('GET', '/api/agents', { token: secret })).status).toBe(200);
  expect((await t.call('GET', '/api/groups', { token: secret })).status).toBe(403);
  await expectSettledAccessible(page, 'access-tokens');

  await page.getByRole('button', { name: 'Revoke ci-deployer' }).click();
  const confirm = page.getByRole('dialog', { name: 'Revoke ci-deployer' });
  await confirmDialog(confirm, 'Revoke ci-deployer');
  await onPage(async () => expect((await tableRows(page, 'Access tokens'))[0]?.[2]).toBe('revoked'));
  expect((await t.call('GET', '/api/agents', { token: secret })).status).toBe(401);

  // The filters are the API's, in the URL.
  await page.goto(`${CONSOLE_ORIGIN}/pats?state=active`);
  await onPage(async () =>
    expect(await tableRows(page, 'Access tokens')).not.toContainEqual(expect.arrayContaining(['ci-deployer'])),
  );
}, 90_000);

test('a viewer and an operator see what the API lets them, and no write they cannot use', async () => {
  const viewerContext = await newContext(browser);
  const operatorContext = await newContext(browser);
  try {
    const viewer = await newSignedInPage(viewerContext, 'victor', '/tokens', cspViolations);
    await onPage(async () => expect(await tableRows(viewer, 'Bootstrap tokens')).toHaveLength(3));
    expect(await viewer.getByRole('columnheader', { name: 'Actions' }).count()).toBe(0);
    expect(await viewer.getByRole('button').allTextContents()).toEqual(['Sign out', 'First page', 'Next page']);
    await viewer.goto(`${CONSOLE_ORIGIN}/tokens/pools/${poolId}`);
    await viewer.getByRole('heading', { name: 'Pool rack-pool' }).waitFor();
    await onPage(async () => expect(await tableRows(viewer, 'Bootstrap tokens')).toHaveLength(2));
    expect(await viewer.getByRole('button', { name: 'Issue a token' }).count()).toBe(0);
    await viewer.goto(`${CONSOLE_ORIGIN}/tokens/pools`);
    await onPage(async () => expect(await tableRows(viewer, 'Token pools')).toHaveLength(1));
    expect(await viewer.getByRole('button', { name: 'New pool' }).count()).toBe(0);

    // PATs are the admins': the API refuses the list, and the page says so in its words.
    await viewer.goto(`${CONSOLE_ORIGIN}/pats`);
    const refusal = viewer.getByRole('alert');
    await refusal.waitFor();
    expect(await refusal.textContent()).toContain('Forbidden');
    expect(await refusal.textContent()).toContain('Role viewer may not GET /api/pats.');
    expect(await viewer.getByRole('table', { name: 'Access tokens' }).count()).toBe(0);
    expect(await viewer.getByRole('button', { name: 'New access token' }).count()).toBe(0);
    await expectSettledAccessible(viewer, 'access-tokens-viewer');

    const operator = await newSignedInPage(operatorContext, 'olivia', '/tokens?state=active', cspViolations);
    await onPage(async () => expect(await tableRows(operator, 'Bootstrap tokens')).toHaveLength(1));
    await operator.getByRole('button', { name: 'New bootstrap token' }).waitFor();
    await operator.getByRole('button', { name: 'Revoke rack-pool #2' }).waitFor();
    await operator.goto(`${CONSOLE_ORIGIN}/pats`);
    await operator.getByRole('alert').waitFor();
    expect(await operator.getByRole('button', { name: 'New access token' }).count()).toBe(0);
  } finally {
    await viewerContext.close();
    await operatorContext.close();
  }
}, 90_000);

test('bootstrap tokens page with the API’s cursor, in a URL that can be reloaded; a value the API refuses shows its problem', async () => {
  for (let i = 0; i < 24; i++) {
    const issued = await t.call('POST', '/api/tokens', { token: apiToken, body: { name: `bulk-${i}` } });
    expect(issued.status).toBe(201);
  }
  // 27 tokens: a page of 25, then the two made first.
  await page.goto(`${CONSOLE_ORIGIN}/tokens`);
  await onPage(async () => expect(await tableRows(page, 'Bootstrap tokens')).toHaveLength(25));
  await page.getByRole('button', { name: 'Next page' }).click();
  await page.waitForURL((url) => url.searchParams.has('cursor'));
  await page.reload();
  await onPage(async () =>
    expect((await tableRows(page, 'Bootstrap tokens')).map((row) => row[0])).toEqual(['rack-pool #1', 'edge-rack-1']),
  );
  await page.getByRole('button', { name: 'First page' }).click();
  await onPage(async () => expect((await tableRows(page, 'Bootstrap tokens'))[0]?.[0]).toBe('bulk-23'));

  // What the URL carries goes to the API as it is, and a value it refuses shows its problem.
  await page.goto(`${CONSOLE_ORIGIN}/tokens/pools/not-an-id`);
  const alert = page.getByRole('alert');
  await alert.waitFor();
  expect(await alert.textContent()).toContain('Request validation failed');
  expect(await alert.textContent()).toContain('path.id');
  await page.goto(`${CONSOLE_ORIGIN}/tokens?poolId=not-an-id`);
  await onPage(async () => expect(await page.getByRole('alert').textContent()).toContain('query.poolId'));
}, 90_000);
