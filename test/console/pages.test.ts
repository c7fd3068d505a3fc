/**
 * The console in a real Chromium against the real app, signed in through the real test
 * identity provider's sign-in page: the shell and its every area, the overview, agents and
 * agent detail show what the API says, page and filter through the URL, hide writes from
 * viewers (and the API refuses a viewer's forced write), refuse a CSRF attempt, show problems
 * as the API words them, and pass axe-core. Screenshots of each page are kept under
 * test-artifacts/console/.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { AREAS } from '../../console/src/navigation';
import { seedAgent, seedAgents } from '../support/agents-seed';
import { startTestApp, type TestApp } from '../support/app';
import {
  CONSOLE_ORIGIN,
  expectAccessible,
  launchBrowser,
  newContext,
  newSignedInPage,
  onPage,
  seriousAccessibilityViolations,
  tableRows,
  confirmDialog,
  signInOnProviderPage,
} from '../support/browser';

let t: TestApp;
let browser: Browser;
let admin: BrowserContext;
let page: Page;
let pendingAgent: { id: string; name: string };
let apiToken: string;
const cspViolations: string[] = [];

/** 30 agents: every third offline, the rest online; the even ones labelled env=prod. */
async function seedFleet(): Promise<void> {
  await seedAgents(t.database.db, 'default', 30, (i) => ({
    status: i % 3 === 0 ? 'offline' : 'online',
    labels: i % 2 === 0 ? { env: 'prod' } : { env: 'dev' },
  }));
  const pending = await seedAgent(t.database.db, 'default', { name: 'waiting-agent', status: 'pending-approval' });
  pendingAgent = { id: pending.id, name: pending.name };
}

async function apiGet(path: string): Promise<any> {
  const reply = await t.call('GET', path, { token: apiToken });
  expect(reply.status).toBe(200);
  return reply.body;
}

/** A page of another site, served on loopback (127.0.0.1: another site than fleet.test). */
async function serveAttackerPage(html: string): Promise<{ url: string; close: () => Promise<void> }> {
  const server = createServer((_request, response) => {
    response.writeHead(200, { 'Content-Type': 'text/html' }).end(html);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

beforeAll(async () => {
  t = await startTestApp();
  apiToken = await t.pat('admin');
  await seedFleet();
  // An event for the overview: a group created through the API.
  expect((await t.call('POST', '/api/groups', { token: apiToken, body: { name: 'edge' } })).status).toBe(201);
  browser = await launchBrowser(t);
  admin = await newContext(browser);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

afterEach(() => {
  expect(cspViolations).toEqual([]);
});

test('a person signs in on the provider’s page and lands on the page they asked for, named with their role', async () => {
  page = await newSignedInPage(admin, 'alice', '/agents?status=offline', cspViolations);
  expect(page.url()).toBe(`${CONSOLE_ORIGIN}/agents?status=offline`);
  await page.getByRole('table', { name: 'Agents' }).locator('tbody tr').first().waitFor();
  const person = page.getByTestId('person');
  expect(await person.textContent()).toContain('Alice (admin)');
  expect(await person.getByLabel('role admin').count()).toBe(1);
  await onPage(
    async () => expect((await tableRows(page, 'Agents')).every((cells) => cells[2] === 'offline')).toBe(true), // after the box that chooses it
  );
  const areas = await page.getByRole('navigation', { name: 'Console areas' }).getByRole('link').allTextContents();
  expect(areas).toEqual([
    'Overview',
    'Agents',
    'Groups',
    'Configurations',
    'Rollouts',
    'Policies',
    'Bootstrap tokens',
    'Access tokens',
    'Audit log',
    'Git sources',
    'Federation',
  ]);
}, 60_000);

test('a person who opens the console by another name (its loopback address) signs in and lands on its configured origin', async () => {
  const elsewhere = await newContext(browser);
  const opened = await elsewhere.newPage();
  await opened.goto(`${t.baseUrl}/groups?q=edge`);
  await signInOnProviderPage(opened, 'victor');
  expect(opened.url()).toBe(`${CONSOLE_ORIGIN}/groups?q=edge`);
  await opened.getByRole('heading', { name: 'Groups' }).waitFor();
  await elsewhere.close();
});

test('the overview shows the fleet at a glance, each count a link to the agents it counts, and the latest events, live', async () => {
  // One online agent reports unhealthy, another failed to apply; the census counted the last hours.
  const db = t.database.db;
  const [sick, failing] = await db('agents').where({ tenant_id: 'default', status: 'online' }).orderBy('id').limit(2);
  await db('agents')
    .where({ id: sick.id })
    .update({ health: JSON.stringify({ healthy: false, lastError: 'exporter down' }), unhealthy_since: new Date() });
  await db('agents').where({ id: failing.id }).update({ applied_status: 'FAILED', applied_error: 'bad exporter' });
  const minutes = Array.from({ length: 120 }, (_, i) => ({
    tenant_id: 'default',
    minute: new Date(Math.floor(Date.now() / 60_000 - 120 + i) * 60_000),
    online: 15 + (i % 6),
    unhealthy: i % 40 === 0 ? 1 : 0,
    enrolled: 30,
  }));
  await db('fleet_minutes').insert(minutes).onConflict(['tenant_id', 'minute']).ignore();

  await page.goto(`${CONSOLE_ORIGIN}/`);
  const online = (await apiGet('/api/agents?status=online&limit=1000')).items.length;
  const offline = (await apiGet('/api/agents?status=offline&limit=1000')).items.length;
  const events = (await apiGet('/api/events?limit=1000')).items;
  await onPage(async () => {
    expect(await page.getByTestId('agents-online').textContent()).toBe(String(online));
    expect(await page.getByTestId('agents-offline').textContent()).toBe(String(offline));
    expect(await page.getByTestId('agents-pending-approval').textContent()).toBe('1');
    expect(await page.getByTestId('agents-unhealthy').textContent()).toBe('1');
    expect(await page.getByTestId('agents-failed-applies').textContent()).toBe('1');
    expect((await tableRows(page, 'Latest events'))[0]?.[1]).toBe(events.at(-1).type);
  });
  expect([online, offline]).toEqual([20, 10]);
  expect(events.at(-1).type).toBe('group.created');
  const byHealth = page.getByRole('list', { name: 'Online agents by health' });
  expect(await byHealth.getByRole('listitem').allTextContents()).toEqual([
    'healthy 0',
    'unhealthy 1',
    'not reported 19',
  ]);
  expect(await page.getByText('No rollout is in flight.').count()).toBe(1);
  await onPage(async () =>
    expect(await page.getByTestId('online-chart').getAttribute('aria-label')).toBe(
      'Agents online over the last 24 hours: between 15 and 20, of 30 enrolled at the last count.',
    ),
  );
  await expectAccessible(page, 'overview');

  // Each count leads to the list of what it counts.
  await page.getByTestId('agents-unhealthy').click();
  await page.waitForURL(`${CONSOLE_ORIGIN}/agents?status=online&health=unhealthy`);
  await onPage(async () => expect((await tableRows(page, 'Agents')).map((cells) => cells[1])).toEqual([sick.name]));
  await page.goBack();
  await page.getByTestId('agents-failed-applies').click();
  await page.waitForURL(`${CONSOLE_ORIGIN}/agents?applied=FAILED`);
  await onPage(async () => expect((await tableRows(page, 'Agents')).map((cells) => cells[1])).toEqual([failing.name]));
  await page.goBack();

  // Live: an event the hub announces (over the session cookie's WebSocket) refreshes the page.
  const created = await t.call('POST', '/api/groups', { token: apiToken, body: { name: 'edge-live' } });
  expect(created.status).toBe(201);
  // The subject by its name, linking to it.
  await onPage(async () => expect((await tableRows(page, 'Latest events'))[0]?.[2]).toBe('edge-live'));
  await page.getByRole('table', { name: 'Latest events' }).getByRole('link', { name: 'edge-live' }).click();
  await page.waitForURL(`${CONSOLE_ORIGIN}/groups/${created.body.id}`);
});

test('with 6,000 events the overview reads one page of the newest, the requests it makes are small, and it stays live', async () => {
  const db = t.database.db;
  const rows = Array.from({ length: 6_000 }, (_, i) => ({
    tenant_id: 'default',
    type: 'group.updated',
    source: '/api/groups',
    subject: `bulk-${i}`,
    data: JSON.stringify({ i }),
  }));
  for (let i = 0; i < rows.length; i += 1_000) await db('events').insert(rows.slice(i, i + 1_000));
  const eventReads: string[] = [];
  const sizes: number[] = [];
  page.on('response', (response) => {
    if (!response.url().includes('/api/events')) return;
    eventReads.push(new URL(response.url()).search);
    void response.body().then((body) => sizes.push(body.length));
  });
  await page.goto(`${CONSOLE_ORIGIN}/`);
  await onPage(async () => expect((await tableRows(page, 'Latest events'))[0]?.[2]).toBe('bulk-5999'));
  // The page (and again if the hub confirms its subscription after that read: what came
  // between is not replayed), never more.
  await page.waitForLoadState('networkidle');
  expect(eventReads.length).toBeGreaterThanOrEqual(1);
  expect(eventReads.length).toBeLessThanOrEqual(2);
  expect(new Set(eventReads)).toEqual(new Set(['?order=newest&limit=10']));
  await onPage(async () => expect(sizes.every((size) => size < 20_000)).toBe(true));
  const reads = eventReads.length;

  const created = await t.call('POST', '/api/groups', { token: apiToken, body: { name: 'edge-after-6000' } });
  expect(created.status).toBe(201);
  await onPage(async () => expect((await tableRows(page, 'Latest events'))[0]?.[2]).toBe('edge-after-6000'));
  expect((await tableRows(page, 'Latest events'))[1]?.[2]).toBe('bulk-5999'); // no such group: its id
  expect(eventReads).toHaveLength(reads); // the new event came from the hub, not another read
  page.removeAllListeners('response');
});

test('the agents list pages with the API’s cursor and filters, all in a URL that can be reloaded', async () => {
  await page.goto(`${CONSOLE_ORIGIN}/agents`);
  await onPage(async () => expect(await tableRows(page, 'Agents')).toHaveLength(25));
  await expectAccessible(page, 'agents');

  await page.getByRole('button', { name: 'Next page' }).click();
  await onPage(async () => expect(await tableRows(page, 'Agents')).toHaveLength(31 - 25));
  expect(new URL(page.url()).searchParams.get('cursor')).toBeTruthy();
  await page.reload();
  await onPage(async () => expect(await tableRows(page, 'Agents')).toHaveLength(6));

  await page.getByRole('button', { name: 'First page' }).click();
  await page.waitForURL((url) => !url.searchParams.has('cursor'));
  await page.getByLabel('Label').fill('env:prod');
  await page.getByLabel('Name or id').fill('agent-00001');
  await page.getByRole('button', { name: 'Apply filters' }).click();
  await page.waitForURL((url) => url.searchParams.get('label') === 'env:prod');
  const listed = (await apiGet('/api/agents?label=env:prod&q=agent-00001&limit=25')).items.map((a: any) => a.name);
  expect([...listed].sort()).toEqual(['agent-000010', 'agent-000012', 'agent-000014', 'agent-000016', 'agent-000018']);
  await onPage(async () => expect((await tableRows(page, 'Agents')).map((cells) => cells[1])).toEqual(listed));
  const reloaded = new URL(page.url());
  expect(Object.fromEntries(reloaded.searchParams)).toEqual({ label: 'env:prod', q: 'agent-00001' });
});

test('the agents list sorts by name either way, and an admin moves and revokes the agents chosen on a page at once', async () => {
  await page.goto(`${CONSOLE_ORIGIN}/agents?label=env:dev`);
  await onPage(async () => expect(await tableRows(page, 'Agents')).toHaveLength(15));
  const names = async () => (await tableRows(page, 'Agents')).map((cells) => cells[1]);
  const dev = (await apiGet('/api/agents?label=env:dev&limit=100')).items.map((a: { name: string }) => a.name).sort();
  const header = page.getByRole('columnheader', { name: /^Name/ });
  await header.getByRole('button').click();
  await page.waitForURL((url) => url.searchParams.get('sort') === 'name');
  await onPage(async () => expect(await names()).toEqual(dev));
  expect(await header.getAttribute('aria-sort')).toBe('ascending');
  await header.getByRole('button').click();
  await page.waitForURL((url) => url.searchParams.get('sort') === '-name');
  await onPage(async () => expect(await names()).toEqual([...dev].reverse()));
  // New filters keep the order.
  await page.getByLabel('Name or id').fill('agent-00000');
  await page.getByRole('button', { name: 'Apply filters' }).click();
  await page.waitForURL((url) => url.searchParams.get('q') === 'agent-00000');
  expect(new URL(page.url()).searchParams.get('sort')).toBe('-name');
  await onPage(async () =>
    expect(await names()).toEqual(['agent-000009', 'agent-000007', 'agent-000005', 'agent-000003', 'agent-000001']),
  );

  // Two chosen, moved to a group at once; then one revoked.
  const edge = (await apiGet('/api/groups?q=edge')).items.find((group: { name: string }) => group.name === 'edge');
  await page.getByRole('checkbox', { name: 'Choose agent-000009' }).check();
  await page.getByRole('checkbox', { name: 'Choose agent-000007' }).check();
  const chosen = page.getByRole('group', { name: 'Chosen agents' });
  expect(await chosen.textContent()).toContain('2 agents chosen');
  await chosen.getByRole('combobox', { name: 'Move to group' }).fill('edge');
  await page.getByRole('option', { name: 'edge', exact: true }).click();
  await chosen.getByRole('button', { name: 'Move 2 agents' }).click();
  const moving = page.getByRole('dialog', { name: 'Move 2 agents' });
  await moving.getByRole('button', { name: 'Move 2 agents' }).click();
  await moving.getByRole('status').getByText('Done: 2 of 2 agents done.').waitFor();
  await expectAccessible(page, 'agents-bulk-moved');
  await moving.getByRole('button', { name: 'Close' }).last().click();
  const moved = (await apiGet(`/api/agents?groupId=${edge.id}&limit=100`)).items.map((a: { name: string }) => a.name);
  expect(moved.sort()).toEqual(['agent-000007', 'agent-000009']);

  await page.getByRole('checkbox', { name: 'Choose every agent on this page' }).check();
  await page.getByRole('checkbox', { name: 'Choose agent-000001' }).uncheck();
  await page.getByRole('checkbox', { name: 'Choose agent-000003' }).uncheck();
  await page.getByRole('checkbox', { name: 'Choose agent-000005' }).uncheck();
  await page.getByRole('checkbox', { name: 'Choose agent-000007' }).uncheck();
  await chosen.getByRole('button', { name: 'Revoke 1 agent' }).click();
  const revoking = page.getByRole('dialog', { name: 'Revoke 1 agent' });
  await revoking.getByRole('button', { name: 'Revoke 1 agent' }).click();
  await revoking.getByRole('status').getByText('Done: 1 of 1 agents done.').waitFor();
  await revoking.getByRole('button', { name: 'Close' }).last().click();
  const nine = (await apiGet('/api/agents?q=agent-000009&limit=1')).items[0];
  expect(nine.status).toBe('revoked');
  // Each agent is its own call, audited under the agent.
  const audited = (await apiGet(`/api/audit/events?resourceId=${nine.id}&limit=10`)).items.map(
    (event: { method: string; path: string; status: number }) => `${event.method} ${event.path} ${event.status}`,
  );
  expect(audited).toEqual(
    expect.arrayContaining([`POST /api/agents/${nine.id}/revoke-cert 200`, `POST /api/agents/${nine.id}/move 200`]),
  );
}, 60_000);

test('a problem the API answers shows its title and detail', async () => {
  await page.goto(`${CONSOLE_ORIGIN}/agents?label=not-a-label`);
  const alert = page.getByRole('alert');
  await alert.waitFor();
  expect(await alert.textContent()).toContain('Request validation failed');

  const missing = '00000000-0000-4000-8000-000000000000';
  await page.goto(`${CONSOLE_ORIGIN}/agents/${missing}`);
  await page.getByRole('alert').waitFor();
  expect(await page.getByRole('alert').textContent()).toContain(`Not found`);
  expect(await page.getByRole('alert').textContent()).toContain(missing);
});

test('the agent detail shows what the API says, with the writes an admin may make', async () => {
  await page.goto(`${CONSOLE_ORIGIN}/agents?q=waiting`);
  await page.getByRole('link', { name: 'waiting-agent' }).click();
  await page.waitForURL(`${CONSOLE_ORIGIN}/agents/${pendingAgent.id}`);
  await page.getByRole('heading', { name: 'waiting-agent' }).waitFor();
  expect(await page.getByRole('region', { name: 'Agent' }).textContent()).toContain(pendingAgent.id);
  for (const write of ['Approve', 'Reject', 'Revoke certificate']) {
    expect(await page.getByRole('button', { name: write }).count()).toBe(1);
  }
  await expectAccessible(page, 'agent-detail');

  await page.getByRole('button', { name: 'Approve' }).click();
  const dialog = page.getByRole('dialog', { name: 'Approve' });
  await confirmDialog(dialog, 'Approve');
  await page.getByRole('button', { name: 'Approve' }).waitFor({ state: 'detached' });
  expect((await apiGet(`/api/agents/${pendingAgent.id}`)).status).toBe('enrolling');
});

test('every area of the navigation is a page of its own, titled as the navigation names it, and passes axe', async () => {
  const navigation = page.getByRole('navigation', { name: 'Console areas' });
  for (const area of AREAS) {
    await navigation.getByRole('link', { name: area.label, exact: true }).click();
    await page.waitForURL(`${CONSOLE_ORIGIN}${area.path}`);
    await page.getByRole('heading', { level: 2, name: area.label, exact: true }).waitFor();
    expect(await navigation.getByRole('link', { name: area.label, exact: true }).getAttribute('aria-current')).toBe(
      'page',
    );
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
  }
});

test('keyboard: the first Tab reaches the skip link, which moves past the navigation; links open with Enter', async () => {
  await page.goto(`${CONSOLE_ORIGIN}/agents`);
  await page.getByRole('table', { name: 'Agents' }).waitFor();
  await page.keyboard.press('Tab');
  expect(await page.locator(':focus').textContent()).toBe('Skip to content');
  await page.keyboard.press('Enter');
  await page.keyboard.press('Tab');
  expect(await page.getByLabel('Name or id').evaluate((input) => input.matches(':focus'))).toBe(true);
  await page.getByRole('link', { name: 'Overview' }).focus();
  await page.keyboard.press('Enter');
  await page.waitForURL(`${CONSOLE_ORIGIN}/`);
});

test('a viewer sees no write buttons', async () => {
  const viewerContext = await newContext(browser);
  try {
    const viewer = await newSignedInPage(viewerContext, 'victor', `/agents/${pendingAgent.id}`, cspViolations);
    await viewer.getByRole('heading', { name: 'waiting-agent' }).waitFor();
    await viewer.getByRole('region', { name: 'Certificate' }).waitFor();
    expect(await viewer.getByTestId('person').getByLabel('role viewer').count()).toBe(1);
    expect(await viewer.getByRole('button').allTextContents()).toEqual(['Sign out']);

    // No area that would answer 403: the access tokens (admins) and the audit log (auditors, admins).
    const areas = await viewer.getByRole('navigation', { name: 'Console areas' }).getByRole('link').allTextContents();
    expect(areas).not.toContain('Access tokens');
    expect(areas).not.toContain('Audit log');
    expect(areas).toContain('Rollouts');
    // A form to create something says who may, instead of the whole form.
    for (const [path, title, notice] of [
      ['/rollouts/new', 'New rollout', 'Only operators and admins create rollouts'],
      ['/git-sources/new', 'New Git source', 'Only operators and admins register Git sources'],
    ] as const) {
      await viewer.goto(`${CONSOLE_ORIGIN}${path}`);
      await viewer.getByRole('heading', { name: title }).waitFor();
      await viewer.getByRole('status').getByText(notice).waitFor();
      expect(await viewer.getByRole('textbox').count()).toBe(0);
    }
    await expectAccessible(viewer, 'viewer-new-rollout');
  } finally {
    await viewerContext.close();
  }
}, 60_000);

test('at phone width (390×844) the navigation is a panel a menu button opens and closes, and the header fits', async () => {
  const phone = await browser.newContext({ viewport: { width: 390, height: 844 } });
  try {
    const opened = await newSignedInPage(phone, 'olivia', '/agents', cspViolations);
    await opened.getByRole('heading', { name: 'Agents' }).waitFor();
    const navigation = opened.getByRole('navigation', { name: 'Console areas' });
    /** On the screen: the collapsed panel is moved off it to the left. */
    const onScreen = async () => {
      const box = await navigation.boundingBox();
      return box !== null && box.x >= 0 && box.width > 0;
    };
    await onPage(async () => expect(await onScreen()).toBe(false));
    await opened.getByRole('button', { name: 'Open the navigation' }).click();
    await onPage(async () => expect(await onScreen()).toBe(true));
    await expectAccessible(opened, 'phone-navigation-open');
    await navigation.getByRole('link', { name: 'Groups' }).click();
    await opened.waitForURL(`${CONSOLE_ORIGIN}/groups`);
    await onPage(async () => expect(await onScreen()).toBe(false));
    // Nothing is cut: the role badge shows its whole word, and the page is not wider than the screen.
    const badge = opened.getByTestId('person').getByLabel('role operator');
    expect(await badge.evaluate((element) => element.scrollWidth <= element.clientWidth)).toBe(true);
    expect(await opened.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    await expectAccessible(opened, 'phone-groups');
  } finally {
    await phone.close();
  }
}, 60_000);

test('a viewer who forces a write past the page gets the API’s 403, and nothing is created', async () => {
  const viewerContext = await newContext(browser);
  try {
    const viewer = await newSignedInPage(viewerContext, 'victor', '/', cspViolations);
    await viewer.getByTestId('person').getByLabel('role viewer').waitFor();
    // What a person could type in the browser's console: the session's own CSRF token, a write.
    const forced = await viewer.evaluate(async () => {
      const session = (await (await fetch('/api/auth/session')).json()) as { csrfToken: string };
      const reply = await fetch('/api/groups', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': session.csrfToken },
        body: JSON.stringify({ name: 'forced-by-viewer' }),
      });
      return {
        status: reply.status,
        type: reply.headers.get('content-type'),
        body: (await reply.json()) as { title?: string },
      };
    });
    expect(forced.status).toBe(403);
    expect(forced.type).toContain('application/problem+json');
    expect(forced.body.title).toBeTruthy();
    expect((await apiGet('/api/groups?q=forced-by-viewer')).items).toEqual([]);
  } finally {
    await viewerContext.close();
  }
}, 60_000);

test('a CSRF attempt is refused: another site’s form goes without the cookie, and a write without the token is 403', async () => {
  // Another site (a different origin and site: 127.0.0.1, not fleet.test) whose page posts a
  // form to the API as soon as it loads, while the admin is signed in to the console.
  const attacker = await serveAttackerPage(
    `<form method="post" action="${CONSOLE_ORIGIN}/api/groups" enctype="text/plain">` +
      '<input name=\'{"name":"csrf-form","x":"\' value=\'"}\'></form>' +
      '<script>document.forms[0].submit()</script>',
  );
  try {
    const [answer] = await Promise.all([
      page.waitForResponse((response) => new URL(response.url()).pathname === '/api/groups'),
      page.goto(attacker.url),
    ]);
    // SameSite=Lax: the browser does not send the session cookie with another site's POST.
    expect(answer.status()).toBe(401);
  } finally {
    await attacker.close();
  }

  // Even a request that carried the cookie (as a same-site page could send) is refused without
  // the session's CSRF token, or with it from an origin that is not the console's.
  await page.goto(`${CONSOLE_ORIGIN}/`);
  await page.getByRole('heading', { name: 'Overview' }).waitFor();
  const forged = await page.evaluate(async () => {
    const write = (headers: Record<string, string>) =>
      fetch('/api/groups', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', ...headers },
        body: JSON.stringify({ name: 'csrf-fetch' }),
      }).then((reply) => reply.status);
    return { withoutToken: await write({}), wrongToken: await write({ 'X-CSRF-Token': 'not-the-token' }) };
  });
  expect(forged).toEqual({ withoutToken: 403, wrongToken: 403 });
  for (const name of ['csrf-form', 'csrf-fetch']) expect((await apiGet(`/api/groups?q=${name}`)).items).toEqual([]);
}, 60_000);

test('sign-out ends the session and goes on to the provider’s sign-out', async () => {
  const [logout] = await Promise.all([
    page.waitForResponse((response) => new URL(response.url()).pathname === '/api/auth/logout'),
    page.getByRole('button', { name: 'Sign out' }).click(),
  ]);
  expect(logout.status()).toBe(200);
  // On to the provider's own sign-out (the test provider publishes one), then back to us.
  await page.waitForURL((url) => url.origin !== CONSOLE_ORIGIN && url.pathname === '/session/end');
  const session = await page.goto(`${CONSOLE_ORIGIN}/api/auth/session`);
  expect(session?.status()).toBe(401);
});
