/**
 * The policy pages in a real Chromium against the real app, signed in on the real test
 * identity provider's page: alice (admin) writes a policy in the CEL editor — an expression
 * that does not type-check first (the API's problem shown, the cursor at the offset it
 * names), then a good one — and is told it waits for another admin, with no Approve; bob
 * (the second admin, a browser context of his own) approves it, which alice's page shows
 * live; alice disables and enables it, each confirmed; the dry run of a rollout shows which
 * agent it denies and why; a viewer reads the list (filters and cursor pages in the URL) and
 * the policy with no write button; an approval decided on a view that has changed since is
 * refused (412); a change made between the page's read and its hub subscription still shows.
 * axe-core on every page, a screenshot of each.
 */
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { seedAgent } from '../support/agents-seed';
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
} from '../support/browser';
import { publishConfiguration } from '../support/configurations';

let t: TestApp;
let browser: Browser;
let alice: Page;
let apiToken: string;
let policyId: string;
let rolloutId: string;
let prodAgentId: string;
const cspViolations: string[] = [];

const POLICY = 'prod-small-batches';
const EXPRESSION = 'Expression (CEL)';
/** Does not type-check: `nope` is no field of Agent, at offset 27 (line 2, column 7). */
const BAD = 'version.published &&\nagent.nope == "x"';
const GOOD = '!(has(agent.labels.env) && agent.labels.env == "prod") || rollout.batchPercent <= 10';

async function apiGet(path: string): Promise<any> {
  const reply = await t.call('GET', path, { token: apiToken });
  expect(reply.status).toBe(200);
  return reply.body;
}

/**
 * Where the editor's cursor is: its line's text and the 0-based column in it (the browser's
 * selection, which CodeMirror keeps on its cursor while it has the focus). A string, as it
 * runs in the page: the test's TypeScript has no DOM types.
 */
async function cursor(on: Page): Promise<{ line: string; column: number }> {
  return on.evaluate(`(() => {
    const selection = window.getSelection();
    const node = selection.anchorNode;
    const line = (node instanceof Element ? node : node.parentElement).closest('.cm-line');
    const before = document.createRange();
    before.setStart(line, 0);
    before.setEnd(node, selection.anchorOffset);
    return { line: line.textContent, column: before.toString().length };
  })()`);
}

/** Picks `option` in the select named `label`. */
async function choose(on: Page, label: string, option: string): Promise<void> {
  await on.getByRole('combobox', { name: label }).click();
  await on.getByRole('option', { name: option, exact: true }).click();
}

/** Clicks an operation of the policy page and its dialog's confirmation. */
async function confirmStarted(on: Page, operation: string): Promise<void> {
  await on.getByRole('button', { name: operation, exact: true }).first().click();
  await on.getByRole('dialog', { name: operation }).getByRole('button', { name: operation, exact: true }).click();
}

/** Clicks an operation of the policy page and confirms it; the dialog closes once it is done. */
async function confirm(on: Page, operation: string): Promise<void> {
  await confirmStarted(on, operation);
  await on.getByRole('dialog', { name: operation }).waitFor({ state: 'detached' });
}

const shownState = (on: Page) =>
  on
    .getByRole('region', { name: 'Policy' })
    .getByRole('row', { name: /^State/ })
    .textContent();

beforeAll(async () => {
  t = await startTestApp();
  apiToken = await t.pat('admin');
  browser = await launchBrowser(t);
  // A rollout to judge: v1 to the one agent of a prod group, in batches of one (100 % of it).
  const group = await t.call('POST', '/api/groups', { token: apiToken, body: { name: 'prod-edge' } });
  expect(group.status).toBe(201);
  prodAgentId = (
    await seedAgent(t.database.db, 'default', {
      group_id: group.body.id,
      name: 'prod-edge-1',
      labels: { env: 'prod' },
      status: 'online',
    })
  ).id;
  const [v1] = await publishConfiguration(t, apiToken, ['exporters:\n  otlp: {}\n']);
  const rollout = await t.call('POST', '/api/rollouts', {
    token: apiToken,
    body: {
      name: 'Prod edge in one go',
      configurationId: v1!.configurationId,
      version: v1!.version,
      target: { groupIds: [group.body.id] },
      strategy: { batchSize: 1 },
    },
  });
  expect(rollout.status).toBe(201);
  rolloutId = rollout.body.id;
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

afterEach(() => {
  expect(cspViolations).toEqual([]);
});

test('alice writes a policy: a type error shows the problem with the cursor at its offset; the good one waits for another admin', async () => {
  alice = await newSignedInPage(await newContext(browser), 'alice', '/policies', cspViolations);
  await alice.getByRole('heading', { name: 'Policies' }).waitFor();
  // The built-ins are listed, marked, approved by system and disabled.
  await onPage(async () =>
    expect((await tableRows(alice, 'Policies')).sort()).toEqual([
      ['healthy-agents-only', 'approveddisabledbuilt-in', 'system', 'system'],
      ['no-prod-big-batch', 'approveddisabledbuilt-in', 'system', 'system'],
      ['published-only', 'approveddisabledbuilt-in', 'system', 'system'],
    ]),
  );
  await expectAccessible(alice, 'policies');

  await alice.getByRole('link', { name: 'New policy' }).click();
  await alice.getByRole('heading', { name: 'New policy' }).waitFor();
  await alice.getByLabel('Name').fill(POLICY);
  await alice.getByLabel('Description').fill('Prod agents get small batches only.');
  await replaceEditorContent(alice, EXPRESSION, BAD);
  await alice.getByRole('button', { name: 'Check' }).click();
  const problem = alice.getByRole('alert');
  await problem.waitFor();
  expect(await problem.textContent()).toContain('Request validation failed');
  expect(await problem.textContent()).toContain('body.expression: No such key: nope (at offset 27)');
  await onPage(async () => expect(await cursor(alice)).toEqual({ line: 'agent.nope == "x"', column: 6 }));
  await expectAccessible(alice, 'policy-editor');

  await replaceEditorContent(alice, EXPRESSION, GOOD);
  await alice.getByRole('button', { name: 'Check' }).click();
  await alice.getByRole('status').filter({ hasText: 'The expression type-checks' }).waitFor();
  expect(await alice.getByRole('alert').count()).toBe(0);
  await alice.getByRole('button', { name: 'Create policy' }).click();
  await alice.waitForURL((url) => /^\/policies\/[0-9a-f-]{36}$/.test(url.pathname));
  policyId = new URL(alice.url()).pathname.split('/')[2]!;

  await alice.getByRole('heading', { name: POLICY }).waitFor();
  await alice.getByText("Waiting for another admin's approval").waitFor();
  expect(await alice.getByRole('button', { name: 'Approve' }).count()).toBe(0);
  expect(await apiGet(`/api/policies/${policyId}`)).toMatchObject({
    name: POLICY,
    expression: GOOD,
    state: 'draft',
    enabled: true,
    author: 'alice',
    approver: null,
  });
  expect(await shownState(alice)).toContain('approval pending');
  await expectAccessible(alice, 'policy');
}, 90_000);

test('bob, the second admin, approves it; alice’s page shows it at once', async () => {
  const context: BrowserContext = await newContext(browser);
  try {
    const bob = await newSignedInPage(context, 'bob', `/policies/${policyId}`, cspViolations);
    await bob.getByRole('heading', { name: POLICY }).waitFor();
    await confirm(bob, 'Approve');
    await onPage(async () => expect(await shownState(bob)).toContain('approved'));
    expect(await bob.getByRole('button', { name: 'Approve' }).count()).toBe(0);
  } finally {
    await context.close();
  }
  expect(await apiGet(`/api/policies/${policyId}`)).toMatchObject({ state: 'approved', approver: 'bob' });
  // Live: the policy.approved event refreshes alice's page (and the ETag her next write sends).
  await onPage(async () => expect(await shownState(alice)).toContain('approved'));
  await alice.getByText('bob,').waitFor();
  expect(await alice.getByText("Waiting for another admin's approval").count()).toBe(0);
}, 90_000);

test('alice disables and enables it, each after a confirmation', async () => {
  await confirm(alice, 'Disable');
  await onPage(async () => expect(await shownState(alice)).toContain('disabled'));
  expect((await apiGet(`/api/policies/${policyId}`)).enabled).toBe(false);
  await confirm(alice, 'Enable');
  await onPage(async () => expect(await shownState(alice)).toContain('enabled'));
  expect(await apiGet(`/api/policies/${policyId}`)).toMatchObject({ enabled: true, state: 'approved' });
}, 90_000);

test('the dry run of a rollout shows the agent the policy denies, and why', async () => {
  await alice.getByRole('link', { name: 'Dry run' }).click();
  await alice.getByRole('heading', { name: 'Dry run' }).waitFor();
  await choose(alice, 'Rollout', 'Prod edge in one go (pending, v1)');
  await alice.waitForURL((url) => url.searchParams.get('rollout') === rolloutId);
  const verdict = alice.getByRole('status').filter({ hasText: 'The policies deny this push' });
  await verdict.waitFor();
  expect(await verdict.textContent()).toContain('1 of 1 agents denied, some by the policy you came from.');
  expect(await tableRows(alice, 'Denied agents')).toEqual([[prodAgentId, POLICY, 'the expression is false']]);
  await expectAccessible(alice, 'policy-dry-run');

  // The verdict is a URL of its own.
  await alice.reload();
  await onPage(async () => expect((await tableRows(alice, 'Denied agents'))[0]?.[1]).toBe(POLICY));

  // A rollout id the API refuses is its problem, not a blank page.
  await alice.goto(`${CONSOLE_ORIGIN}/policies/dry-run?rollout=not-an-id`);
  const problem = alice.getByRole('alert');
  await problem.waitFor();
  expect(await problem.textContent()).toContain('Request validation failed');
  expect(await problem.textContent()).toContain('path.id');
}, 90_000);

test('a viewer sees the policies, paged and filtered through the URL, and no write button', async () => {
  for (let i = 0; i < 22; i++) {
    const created = await t.call('POST', '/api/policies', {
      token: apiToken,
      body: { name: `extra-${String(i).padStart(2, '0')}`, expression: 'true', enabled: false },
    });
    expect(created.status).toBe(201);
  }
  const context = await newContext(browser);
  try {
    const viewer = await newSignedInPage(context, 'victor', '/policies', cspViolations);
    // 26 policies: a page of 25, then the last one made.
    await onPage(async () => expect(await tableRows(viewer, 'Policies')).toHaveLength(25));
    expect(await viewer.getByRole('button').allTextContents()).toEqual(['Sign out', 'First page', 'Next page']);
    expect(await viewer.getByRole('link', { name: 'New policy' }).count()).toBe(0);
    await viewer.getByRole('button', { name: 'Next page' }).click();
    await viewer.waitForURL((url) => url.searchParams.has('cursor'));
    await viewer.reload();
    await onPage(async () =>
      expect((await tableRows(viewer, 'Policies')).map((cells) => cells[0])).toEqual(['extra-21']),
    );

    // Filters go to the URL as the API's query parameters: approved and disabled are the three built-ins.
    await choose(viewer, 'Approval', 'Approved');
    await choose(viewer, 'Enabled', 'Disabled');
    await viewer.waitForURL((url) => url.search === '?state=approved&enabled=false');
    await onPage(async () =>
      expect((await tableRows(viewer, 'Policies')).map((cells) => cells[0]).sort()).toEqual([
        'healthy-agents-only',
        'no-prod-big-batch',
        'published-only',
      ]),
    );
    await choose(viewer, 'Approval', 'Approval pending');
    await viewer.waitForURL((url) => url.search === '?state=draft&enabled=false');
    await onPage(async () => expect(await tableRows(viewer, 'Policies')).toHaveLength(22));

    await viewer.goto(`${CONSOLE_ORIGIN}/policies/${policyId}`);
    await viewer.getByRole('heading', { name: POLICY }).waitFor();
    await onPage(async () => expect(await shownState(viewer)).toContain('approved'));
    await viewer.getByRole('textbox', { name: EXPRESSION }).waitFor();
    expect(await viewer.getByRole('button').allTextContents()).toEqual(['Sign out']);
    expect(await viewer.getByRole('link', { name: 'Edit' }).count()).toBe(0);
    await expectAccessible(viewer, 'policy-viewer');
  } finally {
    await context.close();
  }
}, 90_000);

test('alice edits the approved policy: the change makes it a draft again, to be approved again', async () => {
  await alice.goto(`${CONSOLE_ORIGIN}/policies/${policyId}`);
  await alice.getByRole('link', { name: 'Edit' }).click();
  await alice.getByRole('heading', { name: `Edit ${POLICY}` }).waitFor();
  await onPage(async () => expect(await editorText(alice, EXPRESSION)).toBe(GOOD));
  await alice.getByLabel('Description').fill('Prod agents get batches of 10 % at most.');
  await expectAccessible(alice, 'policy-edit');
  await alice.getByRole('button', { name: 'Save' }).click();
  await alice.waitForURL(`${CONSOLE_ORIGIN}/policies/${policyId}`);
  await alice.getByText("Waiting for another admin's approval").waitFor();
  expect(await apiGet(`/api/policies/${policyId}`)).toMatchObject({
    description: 'Prod agents get batches of 10 % at most.',
    state: 'draft',
    approver: null,
  });
}, 90_000);

test('an approval decided on a view the policy has left is refused with 412, shown in the dialog', async () => {
  const context = await newContext(browser);
  // A slow network between bob's page and the hub: nothing the hub sends reaches the page (not
  // even its `subscribed`, on which the page reads again), so the page keeps showing the
  // policy as it was when it is changed under him.
  await context.routeWebSocket(/\/hubs\/live-updates/, (socket) => {
    socket.connectToServer().onMessage(() => {});
  });
  try {
    const bob = await newSignedInPage(context, 'bob', `/policies/${policyId}`, cspViolations);
    await bob.getByRole('button', { name: 'Approve' }).waitFor();
    const current = await apiGet(`/api/policies/${policyId}`);
    const changed = await t.call('PUT', `/api/policies/${policyId}`, {
      token: apiToken,
      body: { name: POLICY, description: current.description, expression: 'true', scope: [], enabled: true },
    });
    expect(changed.status).toBe(200);

    await confirmStarted(bob, 'Approve');
    const problem = bob.getByRole('dialog', { name: 'Approve' }).getByRole('alert');
    await problem.waitFor();
    expect(await problem.textContent()).toContain(`If-Match does not match the current ETag of policy '${policyId}'.`);
    await expectAccessible(bob, 'policy-approve-refused');
  } finally {
    await context.close();
  }
  expect(await apiGet(`/api/policies/${policyId}`)).toMatchObject({
    expression: 'true',
    state: 'draft',
    approver: null,
  });
}, 90_000);

test('a page whose hub subscription lands after a change it did not read shows that change without another event', async () => {
  const context = await newContext(browser);
  // The page's subscribe message reaches the hub only once the policy has changed after the page read it.
  let release!: () => void;
  const changed = new Promise<void>((resolve) => (release = resolve));
  await context.routeWebSocket(/\/hubs\/live-updates/, (socket) => {
    const hub = socket.connectToServer();
    socket.onMessage((message) => void changed.then(() => hub.send(message)));
  });
  try {
    const reader = await newSignedInPage(context, 'alice', `/policies/${policyId}`, cspViolations);
    const facts = reader.getByRole('region', { name: 'Policy' });
    await onPage(async () => expect(await facts.textContent()).toContain('Prod agents get batches of 10 % at most.'));
    const current = await apiGet(`/api/policies/${policyId}`);
    const reply = await t.call('PUT', `/api/policies/${policyId}`, {
      token: apiToken,
      body: {
        name: POLICY,
        description: 'Changed before the page subscribed.',
        expression: current.expression,
        scope: current.scope,
        enabled: current.enabled,
      },
    });
    expect(reply.status).toBe(200);
    release();
    await onPage(async () => expect(await facts.textContent()).toContain('Changed before the page subscribed.'));
  } finally {
    await context.close();
  }
}, 90_000);

test('a save refused with 412 is no dead end: the latest is loaded and the change re-applied on top, then saved', async () => {
  await alice.goto(`${CONSOLE_ORIGIN}/policies/${policyId}/edit`);
  await alice.getByRole('heading', { name: `Edit ${POLICY}` }).waitFor();
  await alice.getByLabel('Description').fill('Written while someone else saved.');
  // Someone else saves the policy meanwhile: another expression.
  const current = await apiGet(`/api/policies/${policyId}`);
  const theirs = 'rollout.batchPercent <= 5';
  const changed = await t.call('PUT', `/api/policies/${policyId}`, {
    token: apiToken,
    body: { name: POLICY, description: current.description, expression: theirs, scope: [], enabled: true },
  });
  expect(changed.status).toBe(200);

  await alice.getByRole('button', { name: 'Save' }).click();
  await alice.getByText('Someone saved this policy after you opened it').waitFor();
  expect(await alice.getByLabel('Description').inputValue()).toBe('Written while someone else saved.');
  await expectAccessible(alice, 'policy-edit-stale');
  await alice.getByRole('button', { name: 'Load the latest and re-apply my changes' }).click();
  await alice.getByText('Changed meanwhile: expression.').waitFor();
  await onPage(async () => expect(await editorText(alice, EXPRESSION)).toBe(theirs));
  expect(await alice.getByLabel('Description').inputValue()).toBe('Written while someone else saved.');

  await alice.getByRole('button', { name: 'Save' }).click();
  await alice.waitForURL(`${CONSOLE_ORIGIN}/policies/${policyId}`);
  expect(await apiGet(`/api/policies/${policyId}`)).toMatchObject({
    description: 'Written while someone else saved.',
    expression: theirs,
  });

  // Its scope reads as groups by name, each a link to the group.
  const group = await t.call('POST', '/api/groups', { token: apiToken, body: { name: 'scoped-by-name' } });
  const scoped = await apiGet(`/api/policies/${policyId}`);
  const put = await t.call('PUT', `/api/policies/${policyId}`, {
    token: apiToken,
    body: {
      name: scoped.name,
      description: scoped.description,
      expression: scoped.expression,
      scope: [group.body.id],
      enabled: scoped.enabled,
    },
  });
  expect(put.status).toBe(200);
  await alice.goto(`${CONSOLE_ORIGIN}/policies/${policyId}`);
  await alice.getByRole('region', { name: 'Policy' }).getByRole('link', { name: 'scoped-by-name' }).waitFor();
}, 90_000);
