/**
 * The federation pages in a real Chromium against real installations: alpha (with the
 * console; api, agent gateway over TLS, worker on the suite's Temporal dev server), bravo (a
 * whole installation, its peer) and charlie (an api only, a second peer that is stopped
 * midway), signed in on the real test identity provider's page. An admin pairs bravo through
 * the form with bravo's peer PAT (after a wrong one, whose 401 the page shows); the federated
 * agents of both peers page with the API's opaque cursor, and with charlie stopped the page
 * says so and still shows bravo's; a federated rollout across alpha and bravo is paused and
 * resumed from its page; an admin hands an agent over to bravo and watches it arrive live; a
 * viewer sees no write button. axe-core on every page, a screenshot of each.
 */
import type { Browser, Page } from 'playwright-core';
import { seedAgents } from '../support/agents-seed';
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
  confirmOperation,
  pageCutOffFromHub,
  refusedInDialog,
} from '../support/browser';
import { publishConfiguration, type PublishedVersion } from '../support/configurations';
import { eventually } from '../support/eventually';
import { pair, startInstallation, type Installation } from '../support/federation';

let alpha: Installation;
let bravo: Installation;
let charlie: TestApp;
let charlieStopped = false;
let browser: Browser;
let page: Page;
/** Agents of alpha's federated rollout (a long bake keeps its part running), and bravo's. */
let alphaGroup: string;
let bravoGroup: string;
/** An agent of alpha that follows a connection-settings offer: the one handed over. */
let movingAgent: { id: string; name: string };
let bravoPeerId: string;
/** The version the federated rollouts push, and the one the page pauses and resumes. */
let published: PublishedVersion;
let firstRolloutId: string;
const BRAVO_SEEDED = 18;
const CHARLIE_SEEDED = 10;

const alphaGet = async (path: string) => (await alpha.t.call('GET', path, { token: alpha.admin })).body;

beforeAll(async () => {
  [alpha, bravo, charlie] = await Promise.all([
    startInstallation('alpha', {
      // No health check during the test: a stopped peer stays "healthy", so the list asks it.
      apiEnv: { Federation__HealthCheckSeconds: '3600', Federation__PeerTimeoutSeconds: '2' },
    }),
    startInstallation('bravo'),
    startTestApp({ Federation__InstallationName: 'charlie' }),
  ]);
  browser = await launchBrowser(alpha.t);
  const [alphaFleet, bravoFleet, moving] = await Promise.all([
    alpha.fleet(2),
    bravo.fleet(2),
    alpha.fleet(1, { csr: true, reconnectMinMs: 50, reconnectMaxMs: 500 }),
    seedAgents(bravo.t.database.db, 'default', BRAVO_SEEDED),
    seedAgents(charlie.database.db, 'default', CHARLIE_SEEDED),
  ]);
  alphaGroup = alphaFleet.groupId;
  bravoGroup = bravoFleet.groupId;
  await moving.fleet.waitForAll((state) => state.mtls, 15_000);
  movingAgent = { id: moving.ids[0]!, name: (await alphaGet(`/api/agents/${moving.ids[0]}`)).name };
  page = await newSignedInPage(await newContext(browser), 'alice', '/federation');
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await Promise.all([alpha?.close(), bravo?.close(), charlieStopped ? undefined : charlie?.close()]);
});

const peerFacts = () => page.getByRole('region', { name: 'Peer' }).textContent();

test('an admin pairs bravo through the form: a wrong token shows its 401, the right one makes it healthy; never shown back', async () => {
  await page.getByRole('heading', { level: 2, name: 'Federation' }).waitFor();
  await onPage(async () => expect(await tableRows(page, 'Peers')).toEqual([[expect.stringContaining('No peer yet')]]));
  await expectAccessible(page, 'federation-peers-none');

  // A well-formed PAT, but charlie's: bravo refuses it, and the peer is stored unhealthy.
  const wrong = await charlie.pat('peer', { name: 'not-for-bravo' });
  await page.getByRole('button', { name: 'Add peer' }).click();
  const form = page.getByRole('dialog', { name: 'Add a peer' });
  await form.getByLabel('Name').fill('bravo');
  await form.getByLabel('Base URL').fill(bravo.t.baseUrl);
  await form.getByLabel('Peer access token').fill(wrong);
  expect(await form.getByLabel('Peer access token').getAttribute('type')).toBe('password');
  await settled(form);
  await expectAccessible(page, 'federation-peer-add');
  await form.getByRole('button', { name: 'Add peer' }).click();
  await page.getByRole('heading', { level: 2, name: 'bravo' }).waitFor();
  bravoPeerId = new URL(page.url()).pathname.split('/').at(-1)!;
  await onPage(async () => expect(await peerFacts()).toContain('unhealthy'));
  expect(await peerFacts()).toContain('401');
  expect((await alphaGet(`/api/federation/peers/${bravoPeerId}`)).lastError).toContain('401');

  // The right one, through Edit (sent with If-Match): the field starts empty, the token is never shown.
  const right = await bravo.t.pat('peer', { name: 'alpha-console' });
  await page.getByRole('group', { name: 'Operations' }).getByRole('button', { name: 'Edit' }).click();
  const edit = page.getByRole('dialog', { name: 'Edit the peer' });
  expect(await edit.getByLabel('New peer access token').inputValue()).toBe('');
  await edit.getByLabel('New peer access token').fill(right);
  await confirmDialog(edit, 'Save and check');
  await onPage(async () => expect(await page.getByTestId('peer-health').textContent()).toBe('healthy'));
  expect(await peerFacts()).toContain('bravo'); // what bravo says of itself
  await expectAccessible(page, 'federation-peer');

  // An edit on a stale view is refused (412), then re-applied on the peer as it is now.
  await page.getByRole('group', { name: 'Operations' }).getByRole('button', { name: 'Edit' }).click();
  const stale = page.getByRole('dialog', { name: 'Edit the peer' });
  const meanwhile = await alpha.t.call('PUT', `/api/federation/peers/${bravoPeerId}`, {
    token: alpha.admin,
    body: { name: 'bravo-renamed', baseUrl: bravo.t.baseUrl },
  });
  expect(meanwhile.status).toBe(200);
  await stale.getByLabel('Base URL').fill(`${bravo.t.baseUrl}/`);
  await stale.getByRole('button', { name: 'Save and check' }).click();
  await stale.getByRole('button', { name: 'Load the latest and re-apply my changes' }).click();
  const reapplied = stale.getByRole('status').filter({ hasText: 'Your changes are on the latest version' });
  await reapplied.waitFor();
  expect(await reapplied.textContent()).toContain('Changed meanwhile: name.');
  expect(await stale.getByLabel('Name').inputValue()).toBe('bravo-renamed');
  expect(await stale.getByLabel('Base URL').inputValue()).toBe(`${bravo.t.baseUrl}/`);
  await stale.getByLabel('Name').fill('bravo'); // back to the name the rest of the test knows
  await confirmDialog(stale, 'Save and check');
  expect(await alphaGet(`/api/federation/peers/${bravoPeerId}`)).toMatchObject({ name: 'bravo' });

  // What the browser keeps (the page's address, its storage, what it shows): no token.
  const kept = await page.evaluate<string>(
    'location.href + JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }) + document.body.innerHTML',
  );
  for (const token of [wrong, right]) expect(kept).not.toContain(token);

  await page.getByRole('link', { name: '← All peers' }).click();
  await onPage(async () => {
    const [row] = await tableRows(page, 'Peers');
    expect(row?.slice(0, 3)).toEqual(['bravo', bravo.t.baseUrl, 'healthy']);
    expect(row?.[3]).toMatch(/^\d+ ms$/);
    expect(row?.[4]).toMatch(/^bravo /);
  });
  await expectAccessible(page, 'federation-peers');
  // Nor in the page's memory once the dialogs went (not in the query client's mutation cache).
  await onPage(async () => expect(await heapHolds(page, [wrong, right])).toEqual([]));
}, 90_000);

test('a peer is deleted after a confirmation, sent with If-Match', async () => {
  const spare = await pair(alpha, bravo, 'bravo-spare');
  await page.goto(`${CONSOLE_ORIGIN}/federation/peers/${spare}`);
  await page.getByRole('heading', { level: 2, name: 'bravo-spare' }).waitFor();
  await confirmOperation(page, 'Delete');
  await page.waitForURL(`${CONSOLE_ORIGIN}/federation`);
  await onPage(async () => expect((await tableRows(page, 'Peers')).map((row) => row[0])).toEqual(['bravo']));
  expect((await alpha.t.call('GET', `/api/federation/peers/${spare}`, { token: alpha.admin })).status).toBe(404);
}, 60_000);

test('federated agents of both peers page with the opaque cursor; with charlie stopped its status shows and bravo’s agents still', async () => {
  const credential = await charlie.pat('peer', { name: 'peer-alpha' });
  const paired = await alpha.t.call('POST', '/api/federation/peers', {
    token: alpha.admin,
    body: { name: 'charlie', baseUrl: charlie.baseUrl, credential },
  });
  expect(paired.body).toMatchObject({ name: 'charlie', healthy: true });
  await page.goto(`${CONSOLE_ORIGIN}/federation`);
  await page
    .getByRole('navigation', { name: 'Federation pages' })
    .getByRole('link', { name: 'Federated agents' })
    .click();
  await page.getByRole('heading', { level: 2, name: 'Federated agents' }).waitFor();
  const total = 2 + BRAVO_SEEDED + CHARLIE_SEEDED;
  await onPage(async () => expect(await tableRows(page, 'Federated agents')).toHaveLength(25));
  expect(await tableRows(page, 'Peer answers')).toEqual([
    ['bravo', 'ok', ''],
    ['charlie', 'ok', ''],
  ]);
  const peersShown = new Set((await tableRows(page, 'Federated agents')).map((row) => row[1]));
  expect(peersShown).toEqual(new Set(['bravo', 'charlie']));
  await expectAccessible(page, 'federation-agents');

  await page.getByRole('button', { name: 'Next page' }).click();
  await onPage(async () => expect(await tableRows(page, 'Federated agents')).toHaveLength(total - 25));
  expect(new URL(page.url()).searchParams.get('cursor')).toBeTruthy();
  await page.reload();
  await onPage(async () => expect(await tableRows(page, 'Federated agents')).toHaveLength(total - 25));

  await page.getByRole('button', { name: 'First page' }).click();
  await page.getByRole('combobox', { name: 'Status' }).click();
  await page.getByRole('option', { name: 'online', exact: true }).click();
  await page.getByRole('button', { name: 'Apply filters' }).click();
  await page.waitForURL((url) => url.searchParams.get('status') === 'online');
  await onPage(async () =>
    expect((await tableRows(page, 'Federated agents')).map((row) => row.slice(1, 3))).toEqual([
      ['bravo', 'online'],
      ['bravo', 'online'],
    ]),
  );

  await charlie.close();
  charlieStopped = true;
  await page.goto(`${CONSOLE_ORIGIN}/federation/agents`);
  await onPage(async () => {
    const answers = await tableRows(page, 'Peer answers');
    expect(answers[0]).toEqual(['bravo', 'ok', '']);
    expect(answers[1]?.slice(0, 2)).toEqual(['charlie', 'unreachable']);
    expect(answers[1]?.[2]).toMatch(/could not be reached/);
  });
  expect(await page.getByRole('alert').count()).toBe(0); // a line of the page, not a page failure
  expect(await page.getByText('This page lacks the agents of charlie.').count()).toBe(1);
  const rows = await tableRows(page, 'Federated agents');
  expect(rows).toHaveLength(2 + BRAVO_SEEDED);
  expect(new Set(rows.map((row) => row[1]))).toEqual(new Set(['bravo']));
  await expectAccessible(page, 'federation-agents-peer-down');
}, 90_000);

const partStates = async () => (await tableRows(page, 'Installations')).map((row) => row.slice(0, 2));
const federatedState = () =>
  page.getByRole('region', { name: 'Federated rollout' }).getByTestId('rollout-state').textContent();

test('a federated rollout shows each installation’s part and the progress over all; paused and resumed from its page, a pause on a stale view refused (412)', async () => {
  const [version] = await publishConfiguration(alpha.t, alpha.operator, ['exporters:\n  debug: {}\n']);
  published = version!;
  const created = await alpha.t.call('POST', '/api/federation/rollouts', {
    token: alpha.operator,
    body: {
      name: 'debug exporter everywhere',
      configurationId: version!.configurationId,
      version: version!.version,
      mode: 'parallel',
      installations: [
        { peerId: 'local', target: { groupIds: [alphaGroup] }, strategy: { batchSize: 1, bakeSeconds: 600 } },
        { peerId: bravoPeerId, target: { groupIds: [bravoGroup] }, strategy: { batchSize: 1, bakeSeconds: 600 } },
      ],
    },
  });
  expect(created.status).toBe(201);
  const id = created.body.id as string;
  firstRolloutId = id;

  await page.goto(`${CONSOLE_ORIGIN}/federation/rollouts`);
  await page.getByRole('heading', { level: 2, name: 'Federated rollouts' }).waitFor();
  await onPage(async () =>
    expect((await tableRows(page, 'Federated rollouts'))[0]?.slice(0, 4)).toEqual([
      'debug exporter everywhere',
      'running',
      'parallel',
      `v${version!.version}`,
    ]),
  );
  await expectAccessible(page, 'federation-rollouts');

  await page.getByRole('link', { name: 'debug exporter everywhere' }).click();
  await page.waitForURL(`${CONSOLE_ORIGIN}/federation/rollouts/${id}`);
  await page.getByRole('heading', { level: 2, name: 'debug exporter everywhere' }).waitFor();
  // The configuration by its name, linked.
  await page
    .getByRole('region', { name: 'Federated rollout' })
    .getByRole('link', { name: `${version!.name} v${version!.version}` })
    .waitFor();
  // Each part's first batch applied (one agent of two), shown as the parts report it, live.
  await onPage(async () => {
    expect(await partStates()).toEqual([
      ['alpha (this installation)', 'running'],
      ['bravo', 'running'],
    ]);
    const progress = await tableRows(page, 'Progress');
    expect(progress.map((row) => [row[0], row[1], row[5]])).toEqual([
      ['All installations', '4', '2'],
      ['alpha', '2', '1'],
      ['bravo', '2', '1'],
    ]);
  });
  await expectAccessible(page, 'federation-rollout');

  await confirmOperation(page, 'Pause');
  await onPage(async () => expect(await federatedState()).toBe('paused'));
  await onPage(async () => expect((await partStates()).map((row) => row[1])).toEqual(['paused', 'paused']));
  const onBravo = (await alphaGet(`/api/federation/rollouts/${id}`)).installations[1].rolloutId;
  expect((await bravo.t.call('GET', `/api/rollouts/${onBravo}`, { token: bravo.operator })).body.state).toBe('paused');

  await confirmOperation(page, 'Resume');
  await onPage(async () => expect(await federatedState()).toBe('running'));
  await onPage(async () => expect((await partStates()).map((row) => row[1])).toEqual(['running', 'running']));
  expect(await page.getByRole('group', { name: 'Operations' }).getByRole('button').allTextContents()).toEqual([
    'Pause',
    'Abort',
    'Roll back',
  ]);

  // A slow network between a second page and the hub: its events are held back, so it keeps
  // showing the rollout running while another operator pauses it. Its Pause is refused (412).
  const stale = await pageCutOffFromHub(page.context());
  try {
    await stale.goto(`${CONSOLE_ORIGIN}/federation/rollouts/${id}`);
    await stale.getByRole('group', { name: 'Operations' }).getByRole('button', { name: 'Pause' }).waitFor();
    const paused = await alpha.t.call('POST', `/api/federation/rollouts/${id}/pause`, { token: alpha.operator });
    expect(paused.status).toBe(200);
    await stale.getByRole('group', { name: 'Operations' }).getByRole('button', { name: 'Pause' }).click();
    expect(await refusedInDialog(stale.getByRole('dialog', { name: 'Pause' }), 'Pause')).toContain(
      'If-Match does not match the current ETag',
    );
  } finally {
    await stale.close();
  }
}, 90_000);

test('an admin creates a federated rollout with the form: a refusal names the installation; once its agents are free it is created', async () => {
  await page.goto(`${CONSOLE_ORIGIN}/federation/rollouts`);
  await page.getByRole('link', { name: 'New federated rollout' }).click();
  await page.waitForURL(`${CONSOLE_ORIGIN}/federation/rollouts/new`);
  await page.getByLabel('Name').fill('otel from the form');
  await page.getByRole('combobox', { name: 'Configuration' }).click();
  await page.getByRole('option', { name: published.name, exact: true }).click();
  await page.getByRole('combobox', { name: 'Published version' }).click();
  await page.getByRole('option', { name: `v${published.version}`, exact: true }).click();
  await page.getByRole('combobox', { name: 'Order' }).click();
  await page.getByRole('option', { name: /^parallel/ }).click();
  await page.getByLabel('Roll out on bravo').check();
  // bravo's groups, as bravo answers through alpha, searched by name as the operator types.
  const bravoGroupName = (await bravo.t.call('GET', `/api/groups/${bravoGroup}`, { token: bravo.operator })).body
    .name as string;
  await page.getByRole('combobox', { name: 'Target groups on bravo' }).fill(bravoGroupName.slice(0, 6));
  await page.getByRole('option', { name: bravoGroupName, exact: true }).click();
  await page.keyboard.press('Escape');

  // bravo's agents are in the running federated rollout's part there: bravo refuses the dry run,
  // which "Check installations" shows without creating anything.
  await page.getByRole('button', { name: 'Check installations' }).click();
  await onPage(async () => {
    const [row] = await tableRows(page, 'Installation checks');
    expect(row?.slice(0, 2)).toEqual(['bravo', 'refuses']);
    expect(row?.[2]).toContain("Installation 'bravo' refused the rollout");
  });
  await expectAccessible(page, 'federation-rollout-checked');
  await page.getByRole('button', { name: 'Check and create' }).click();
  const refusal = page.getByRole('alert');
  await refusal.waitFor();
  expect(await refusal.textContent()).toContain("Installation 'bravo' refused the rollout");
  await expectAccessible(page, 'federation-rollout-new');
  expect((await alphaGet('/api/federation/rollouts')).items).toHaveLength(1);

  expect(
    (await alpha.t.call('POST', `/api/federation/rollouts/${firstRolloutId}/abort`, { token: alpha.operator })).status,
  ).toBe(200);
  // Each installation's own rollout, as that installation reports it.
  const [onAlpha, onBravo] = (await alphaGet(`/api/federation/rollouts/${firstRolloutId}`)).installations.map(
    (part: { rolloutId: string }) => part.rolloutId,
  );
  await eventually(async () => {
    expect((await alphaGet(`/api/rollouts/${onAlpha}`)).state).toBe('aborted');
    const there = await bravo.t.call('GET', `/api/rollouts/${onBravo}`, { token: bravo.operator });
    expect(there.body.state).toBe('aborted');
  }, 30_000);
  const alphaGroupName = (await alphaGet(`/api/groups/${alphaGroup}`)).name as string;
  await page.getByLabel('Roll out on this installation').check();
  await page.getByRole('combobox', { name: 'Target groups on this installation' }).click();
  await page.getByRole('option', { name: alphaGroupName, exact: true }).click();
  await page.keyboard.press('Escape');
  await page.getByRole('button', { name: 'Check and create' }).click();
  await page.getByRole('heading', { level: 2, name: 'otel from the form' }).waitFor();
  expect((await partStates()).map((row) => row[0])).toEqual(['alpha (this installation)', 'bravo']);
  const id = new URL(page.url()).pathname.split('/').at(-1);
  expect(await alphaGet(`/api/federation/rollouts/${id}`)).toMatchObject({
    mode: 'parallel',
    version: published.version,
    installations: [
      { peerId: null, target: { groupIds: [alphaGroup] }, strategy: { batchSize: 1, bakeSeconds: 0 } },
      { peerId: bravoPeerId, target: { groupIds: [bravoGroup] }, strategy: { batchSize: 1, bakeSeconds: 0 } },
    ],
  });
}, 90_000);

test('an admin hands an agent over to bravo after a confirmation and watches it arrive there live', async () => {
  await page.goto(`${CONSOLE_ORIGIN}/federation/handovers`);
  await page.getByRole('heading', { level: 2, name: 'Handovers' }).waitFor();
  await page.getByRole('button', { name: 'New handover' }).click();
  const form = page.getByRole('dialog', { name: 'Hand agents over' });
  await form.getByRole('combobox', { name: 'Peer' }).click();
  await page.getByRole('option', { name: 'bravo', exact: true }).click();
  await form.getByRole('combobox', { name: 'Agents' }).click();
  await page.getByRole('option', { name: `${movingAgent.name} · ${movingAgent.id}`, exact: true }).click();
  await page.keyboard.press('Escape');
  await settled(form);
  await expectAccessible(page, 'federation-handover-new');
  await form.getByRole('button', { name: 'Hand over' }).click();
  const confirmation = page.getByRole('dialog', { name: 'Hand over' });
  expect(await confirmation.textContent()).toContain('Hand 1 agent(s) over to bravo?');
  await confirmation.getByRole('button', { name: 'Hand over' }).click();

  await page.getByRole('heading', { level: 2, name: 'Handover to bravo' }).waitFor();
  const id = new URL(page.url()).pathname.split('/').at(-1)!;
  // Only the hub's events refresh the page while the agent moves.
  await onPage(async () =>
    expect(await page.getByRole('region', { name: 'Handover' }).getByTestId('handover-state').textContent()).toBe(
      'completed',
    ),
  );
  await onPage(async () =>
    expect((await tableRows(page, 'Handover agents')).map((row) => row.slice(0, 2))).toEqual([
      [movingAgent.id, 'handed-over'],
    ]),
  );
  expect(await tableRows(page, 'Agents by state')).toEqual([['1', '0', '0', '1', '0', '0', '0']]);
  expect((await alphaGet(`/api/federation/handovers/${id}`)).state).toBe('completed');
  await expectAccessible(page, 'federation-handover');

  await page.getByRole('link', { name: '← All handovers' }).click();
  await onPage(async () =>
    expect((await tableRows(page, 'Handovers'))[0]?.slice(0, 4)).toEqual([id, 'bravo', 'completed', '1 of 1']),
  );
  await expectAccessible(page, 'federation-handovers');
}, 90_000);

test('a viewer reads every federation page but gets no write button', async () => {
  const rolloutId = (await alphaGet('/api/federation/rollouts')).items[0].id as string;
  const viewerContext = await newContext(browser);
  try {
    const viewer = await newSignedInPage(viewerContext, 'victor', '/federation');
    await viewer.getByRole('heading', { level: 2, name: 'Federation' }).waitFor();
    await onPage(async () =>
      expect((await tableRows(viewer, 'Peers')).map((row) => row[0])).toEqual(['bravo', 'charlie']),
    );
    expect(await viewer.getByRole('button', { name: 'Add peer' }).count()).toBe(0);

    await viewer.goto(`${CONSOLE_ORIGIN}/federation/peers/${bravoPeerId}`);
    await viewer.getByRole('region', { name: 'Peer' }).waitFor();
    expect(await viewer.getByRole('group', { name: 'Operations' }).count()).toBe(0);

    await viewer.goto(`${CONSOLE_ORIGIN}/federation/rollouts/${rolloutId}`);
    await viewer.getByRole('table', { name: 'Installations' }).waitFor();
    expect(await viewer.getByRole('group', { name: 'Operations' }).count()).toBe(0);

    await viewer.goto(`${CONSOLE_ORIGIN}/federation/handovers`);
    await onPage(async () => expect(await tableRows(viewer, 'Handovers')).toHaveLength(1));
    expect(await viewer.getByRole('button', { name: 'New handover' }).count()).toBe(0);
  } finally {
    await viewerContext.close();
  }
}, 60_000);
