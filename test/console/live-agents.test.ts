/**
 * The agent views follow the fleet as it changes, in a real Chromium against a real
 * installation (api, agent gateway, simulated agents over TLS): a group's members appear as
 * agents enrol into it, the agents list shows them, and an agent's page says it went offline,
 * each without a reload (the live-updates hub, as the rollout page does).
 */
import type { Browser, Page } from 'playwright-core';
import {
  CONSOLE_ORIGIN,
  expectAccessible,
  launchBrowser,
  newContext,
  newSignedInPage,
  onPage,
  tableRows,
} from '../support/browser';
import { SimulatedAgent } from '../../scripts/agents/agent';
import { startRolloutEnv, type RolloutEnv } from '../support/rollout-env';

let env: RolloutEnv;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  env = await startRolloutEnv();
  browser = await launchBrowser(env.t);
  page = await newSignedInPage(await newContext(browser), 'olivia', '/agents');
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await env?.close();
});

const call = (method: string, path: string, body?: unknown) => env.t.call(method, path, { token: env.operator, body });

test('a group’s members and the agents list fill in as agents enrol, and an agent’s page says when it goes offline', async () => {
  const group = await call('POST', '/api/groups', { name: 'enrolling-live' });
  expect(group.status).toBe(201);
  await page.goto(`${CONSOLE_ORIGIN}/groups/${group.body.id}`);
  const online = async (table: string) =>
    (await tableRows(page, table)).filter((cells) => cells.some((cell) => cell === 'online'));
  await page.getByRole('table', { name: 'Members' }).waitFor();
  expect(await online('Members')).toEqual([]);

  const { fleet } = await env.fleet(3, { groupId: group.body.id });
  await onPage(async () => expect(await online('Members')).toHaveLength(3));
  await onPage(async () =>
    expect(await page.getByRole('region', { name: 'Group' }).textContent()).toContain('Members3'),
  );
  await expectAccessible(page, 'group-members-live');

  // The installation has only these agents: the list shows them, online.
  await page.goto(`${CONSOLE_ORIGIN}/agents`);
  await onPage(async () => expect(await online('Agents')).toHaveLength(3));

  // One agent's page, open while the agent disconnects.
  const [agent] = fleet.agents;
  await page.goto(`${CONSOLE_ORIGIN}/agents/${agent!.id}`);
  const status = page.getByRole('region', { name: 'Agent' }).getByText(/^(online|offline)$/);
  await onPage(async () => expect(await status.textContent()).toBe('online'));
  await agent!.stop();
  await onPage(async () => expect(await status.textContent()).toBe('offline'));
  // And the list shows two online.
  await page.goto(`${CONSOLE_ORIGIN}/agents`);
  await onPage(async () => expect(await online('Agents')).toHaveLength(2));
}, 90_000);

test('Add agents on a group issues a token and shows what to configure agents with; an agent using it appears among the members', async () => {
  const group = await call('POST', '/api/groups', { name: 'added-by-form' });
  await page.goto(`${CONSOLE_ORIGIN}/groups/${group.body.id}`);
  await page.getByRole('button', { name: 'Add agents' }).click();
  const form = page.getByRole('form', { name: 'Add agents' });
  await form.getByLabel('How many agents').fill('2');
  await form.getByRole('button', { name: 'Issue the token' }).click();
  const dialog = page.getByRole('dialog', { name: 'Add agents to added-by-form' });
  const token = await dialog.getByLabel('Bootstrap token').inputValue();
  expect(token).toMatch(/^svc-bt\./);
  const { endpoint } = (await call('GET', '/api/agents/enrolment')).body;
  const supervisor = await dialog.getByTestId('snippet-supervisor').textContent();
  expect(supervisor).toContain(`endpoint: ${endpoint}`);
  expect(supervisor).toContain(`Authorization: "Bearer ${token}"`);
  expect(supervisor).toContain('ca_file: fleet-ca.pem');
  expect(await dialog.getByRole('link', { name: 'download fleet-ca.pem' }).getAttribute('href')).toBe(
    '/api/agents/ca.pem',
  );
  await expectAccessible(page, 'group-add-agents');
  const issued = (await call('GET', '/api/tokens')).body.items.find(
    (item: { groupId: string }) => item.groupId === group.body.id,
  );
  expect(issued).toMatchObject({ name: 'add agents to added-by-form', maxUses: 2, state: 'active' });

  // What the dialog gave works: the token and the CA the API serves, at the gateway.
  const ca = (await env.t.call('GET', '/api/agents/ca.pem', { token: env.operator })).body as string;
  const agent = new SimulatedAgent({ endpoint: env.gateway.wsUrl, token, ca, csr: false, reconnectMinMs: 50 });
  try {
    await agent.start();
    await agent.waitFor((state) => state.connected, 15_000);
    await dialog.getByRole('button', { name: 'Done' }).click();
    const online = async () =>
      (await tableRows(page, 'Members')).filter((cells) => cells.some((cell) => cell === 'online'));
    await onPage(async () => expect(await online()).toHaveLength(1));
  } finally {
    await agent.stop();
  }
}, 60_000);

test('the inventory: group, host, health and configuration columns, and a group chosen by name in the filters, kept in the URL', async () => {
  const group = (await call('GET', '/api/groups?q=enrolling-live')).body.items[0];
  await page.goto(`${CONSOLE_ORIGIN}/agents`);
  const filters = page.getByRole('search', { name: 'Filter agents' });
  await filters.getByRole('combobox', { name: 'Group' }).fill('enrolling');
  await page.getByRole('option', { name: 'enrolling-live', exact: true }).click();
  await filters.getByRole('button', { name: 'Apply filters' }).click();
  await page.waitForURL(`${CONSOLE_ORIGIN}/agents?groupId=${group.id}`);
  await onPage(async () => expect(await tableRows(page, 'Agents')).toHaveLength(3));
  const rows = await tableRows(page, 'Agents');
  const members = (await call('GET', `/api/groups/${group.id}/members`)).body.items as Array<{
    description: Record<string, string>;
  }>;
  // An operator's rows start with the box that chooses the agent.
  expect(rows.map((row) => row[5]).sort()).toEqual(members.map((member) => member.description['host.name']).sort());
  for (const [, , status, health, groupName] of rows) {
    expect(groupName).toBe('enrolling-live');
    expect(['online', 'offline']).toContain(status);
    expect(['healthy', 'not reported']).toContain(health);
  }
  // Each status badge shows its whole word, however narrow the table makes its column.
  const labels = page.getByRole('table', { name: 'Agents' }).locator('.mantine-Badge-label');
  expect(await labels.count()).toBeGreaterThan(0);
  for (const label of await labels.all())
    expect(await label.evaluate((element) => element.scrollWidth <= element.clientWidth)).toBe(true);
  // Reloaded, the filter shows the group by name.
  await page.reload();
  await onPage(async () =>
    expect(await filters.getByRole('combobox', { name: 'Group' }).inputValue()).toBe('enrolling-live'),
  );
  await expectAccessible(page, 'agents-inventory');
}, 60_000);
