/**
 * The audit log page in a real Chromium against the real app, signed in on the real test
 * identity provider's page: an auditor sees the calls a PAT and her own console session
 * made, filters by actor and status (in the URL, kept on reload), pages with the API's
 * cursor, opens an event's whole record, and verifies the chain; once a row is tampered
 * with in the database, verification names where the chain breaks. A viewer gets the API's
 * 403 problem. axe-core on every page, and a screenshot of each under test-artifacts/console/.
 */
import type { Browser, Page } from 'playwright-core';
import { startTestApp, type TestApp } from '../support/app';
import { eventually } from '../support/eventually';
import {
  CONSOLE_ORIGIN,
  expectAccessible,
  launchBrowser,
  newContext,
  newSignedInPage,
  onPage,
  tableRows,
} from '../support/browser';

const PAT_NAME = 'ci-bot';
/** More than the page's 25 rows, so the PAT's calls take two pages. */
const PAT_READS = 30;

let t: TestApp;
let browser: Browser;
let page: Page;
let auditorToken: string;
const cspViolations: string[] = [];

async function auditEvents(query: string): Promise<any> {
  const reply = await t.call('GET', `/api/audit/events?${query}`, { token: auditorToken });
  expect(reply.status).toBe(200);
  return reply.body;
}

/**
 * The calls the set-up makes as the PAT: reads (200), then a refused create (400) and three
 * creates (201). Reads are appended to the audit log in the background, so the creates wait
 * until the reads are in: the log's order is then the calls' order.
 */
async function callsByPat(): Promise<void> {
  const token = await t.pat('admin', { name: PAT_NAME });
  for (let i = 0; i < PAT_READS; i++) expect((await t.call('GET', '/api/groups', { token })).status).toBe(200);
  expect((await t.call('POST', '/api/groups', { token, body: { name: '' } })).status).toBe(400);
  await eventually(async () =>
    expect((await auditEvents(`actor=${PAT_NAME}&limit=100`)).items).toHaveLength(PAT_READS + 1),
  );
  for (const name of ['edge', 'core', 'lab']) {
    expect((await t.call('POST', '/api/groups', { token, body: { name } })).status).toBe(201);
  }
}

/** Each shown event's sequence number (the first cell; an opened event's record is a row too). */
async function shownSeqs(on: Page): Promise<number[]> {
  return (await tableRows(on, 'Audit events')).filter((cells) => cells.length > 1).map((cells) => parseInt(cells[0]!));
}

beforeAll(async () => {
  t = await startTestApp();
  auditorToken = await t.token('default.auditor');
  await callsByPat();
  browser = await launchBrowser(t);
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

afterEach(() => {
  expect(cspViolations).toEqual([]);
});

test('an auditor sees the calls of a PAT and of her own session, filters by actor and status in the URL, and pages', async () => {
  page = await newSignedInPage(await newContext(browser), 'audrey', '/audit', cspViolations);
  await page.getByRole('heading', { level: 2, name: 'Audit log' }).waitFor();
  await onPage(async () => {
    const rows = await tableRows(page, 'Audit events');
    expect(rows.filter((cells) => cells[3] === 'POST /api/groups' && cells[4] === '201')).toHaveLength(3);
  });

  // The console's own calls name the person, with actor type session (appended in the background).
  await eventually(async () =>
    expect((await auditEvents('actor=audrey&actorType=session')).items.length).toBeGreaterThan(0),
  );
  await page.getByLabel('Actor', { exact: true }).fill('audrey');
  await page.getByRole('combobox', { name: 'Actor type' }).click();
  await page.getByRole('option', { name: 'session', exact: true }).click();
  await page.getByRole('button', { name: 'Apply filters' }).click();
  await page.waitForURL(
    (url) => url.searchParams.get('actor') === 'audrey' && url.searchParams.get('actorType') === 'session',
  );
  await onPage(async () => {
    const rows = await tableRows(page, 'Audit events');
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.every((cells) => cells[2] === 'audreysession')).toBe(true);
    expect(rows.some((cells) => cells[3] === 'GET /api/auth/session')).toBe(true);
  });
  await page.reload();
  expect(await page.getByLabel('Actor', { exact: true }).inputValue()).toBe('audrey');
  await onPage(async () =>
    expect((await tableRows(page, 'Audit events')).every((cells) => cells[2] === 'audreysession')).toBe(true),
  );

  // By actor and status: the PAT's three creates, as the API lists them.
  await page.goto(`${CONSOLE_ORIGIN}/audit`);
  await page.getByLabel('Actor', { exact: true }).fill(PAT_NAME);
  await page.getByLabel('Status').fill('201');
  await page.getByRole('button', { name: 'Apply filters' }).click();
  await page.waitForURL((url) => url.search === `?actor=${PAT_NAME}&status=201`);
  const created = (await auditEvents(`actor=${PAT_NAME}&status=201`)).items;
  expect(created).toHaveLength(3);
  await onPage(async () => expect(await shownSeqs(page)).toEqual(created.map((event: { seq: number }) => event.seq)));
  await expectAccessible(page, 'audit');

  // An event opened shows everything the API returns for it.
  await page.getByRole('button', { name: `Details of event ${created[0].seq}` }).click();
  const details = page.locator(`#audit-event-${created[0].id}`);
  const fields = ['id', 'hash', 'occurredAt', 'route', 'resourceType', 'resourceId', 'requestId', 'sourceAddress'];
  for (const field of fields) {
    if (created[0][field] !== null) expect(await details.textContent()).toContain(String(created[0][field]));
  }
  await expectAccessible(page, 'audit-event-details');

  // A time range is a link too: from the first create on, only the creates; the form shows it in local time.
  const oldest = created[created.length - 1];
  await page.goto(`${CONSOLE_ORIGIN}/audit?actor=${PAT_NAME}&from=${encodeURIComponent(oldest.occurredAt)}`);
  await onPage(async () => expect(await shownSeqs(page)).toEqual(created.map((event: { seq: number }) => event.seq)));
  // The browser's own form of a datetime-local value: seconds are left out when they are :00.
  expect(await page.getByLabel('From').inputValue()).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?$/);

  // A value the API refuses, put in the URL by hand, shows the API's problem.
  await page.goto(`${CONSOLE_ORIGIN}/audit?status=abc`);
  const problem = page.getByRole('alert');
  await problem.waitFor();
  expect(await problem.textContent()).toContain('must be plain decimal digits');

  // All the PAT's calls: two pages by the API's cursor, which the URL carries through a reload.
  await page.goto(`${CONSOLE_ORIGIN}/audit?actor=${PAT_NAME}`);
  const first = await auditEvents(`actor=${PAT_NAME}&limit=25`);
  const second = await auditEvents(`actor=${PAT_NAME}&limit=25&cursor=${first.nextCursor}`);
  expect(second.items).toHaveLength(3 + 1 + PAT_READS - 25);
  await onPage(async () =>
    expect(await shownSeqs(page)).toEqual(first.items.map((event: { seq: number }) => event.seq)),
  );
  await page.getByRole('button', { name: 'Next page' }).click();
  await page.waitForURL((url) => url.searchParams.get('cursor') === first.nextCursor);
  await page.reload();
  await onPage(async () =>
    expect(await shownSeqs(page)).toEqual(second.items.map((event: { seq: number }) => event.seq)),
  );
  expect(await page.getByRole('button', { name: 'Next page' }).isDisabled()).toBe(true);
}, 90_000);

test('verification says the chain is intact, and once a row is tampered with in the database, where it breaks', async () => {
  // Filtered by status only: the tampered event changes its actor, and stays in the list.
  await page.goto(`${CONSOLE_ORIGIN}/audit?status=201`);
  await onPage(async () => expect(await shownSeqs(page)).toHaveLength(3));
  await page.getByRole('button', { name: 'Verify the chain' }).click();
  const verdict = page.getByRole('status').filter({ hasText: 'Chain' });
  await verdict.getByText('Chain intact').waitFor();
  expect(await verdict.textContent()).toMatch(/All \d+ events link to the one before them/);
  await expectAccessible(page, 'audit-verified');

  const [victim] = (await auditEvents('status=201&limit=1')).items;
  await t.database.db.transaction(async (trx) => {
    await trx.raw('ALTER TABLE audit_events DISABLE TRIGGER audit_events_no_update_delete');
    await trx('audit_events').where({ seq: victim.seq }).update({ actor: 'someone-else' });
    await trx.raw('ALTER TABLE audit_events ENABLE TRIGGER audit_events_no_update_delete');
  });
  await page.getByRole('button', { name: 'Verify the chain' }).click();
  await verdict.getByText(`Chain broken at event #${victim.seq}`).waitFor();
  expect(await verdict.textContent()).toContain(`The events before #${victim.seq} verify`);
  // The list was read before the tampering: the event is there, marked.
  const row = (await tableRows(page, 'Audit events')).find((cells) => parseInt(cells[0]!) === victim.seq);
  expect(row?.[0]).toBe(`${victim.seq}broken`);
  await expectAccessible(page, 'audit-broken');

  // The verdict links to the broken event alone, whatever page the list is on.
  await verdict.getByRole('link', { name: `Show event #${victim.seq}` }).click();
  await page.getByText(`Only event #${victim.seq} is shown.`).waitFor();
  await page.waitForURL(`**/audit?seq=${victim.seq}`);
  await eventually(async () =>
    expect((await tableRows(page, 'Audit events')).map((cells) => parseInt(cells[0]!))).toEqual([victim.seq]),
  );
}, 90_000);

test('a viewer, whom the API does not let read the audit log, sees its problem and no verification', async () => {
  const context = await newContext(browser);
  try {
    const viewer = await newSignedInPage(context, 'victor', '/audit?actor=ci-bot', cspViolations);
    await viewer.getByRole('heading', { level: 2, name: 'Audit log' }).waitFor();
    const refused = await t.call('GET', '/api/audit/events', { token: await t.token('default.viewer') });
    expect(refused.status).toBe(403);
    const problem = viewer.getByRole('alert');
    await problem.waitFor();
    expect(await problem.textContent()).toContain(refused.body.title);
    expect(await problem.textContent()).toContain(refused.body.detail);
    expect(await viewer.getByRole('button', { name: 'Verify the chain' }).count()).toBe(0);
    expect(await viewer.getByRole('table', { name: 'Audit events' }).count()).toBe(0);
    await expectAccessible(viewer, 'audit-forbidden');
  } finally {
    await context.close();
  }
}, 90_000);
