import { randomBytes, randomUUID } from 'node:crypto';
import { Client, type Notification } from 'pg';
import { AGENT_CUTOFF_CHANNEL } from '../../db/notify';
import { seedAgent } from '../support/agents-seed';
import { startTestApp, type TestApp } from '../support/app';

let t: TestApp;
let admin: string;
let operator: string;
let viewer: string;
let acmeAdmin: string;
let listener: Client;
const cutoffs: unknown[] = [];

beforeAll(async () => {
  t = await startTestApp();
  admin = await t.token('default.admin');
  operator = await t.token('default.operator');
  viewer = await t.token('default.viewer');
  acmeAdmin = await t.token('acme.admin');
  listener = new Client({ connectionString: t.database.url });
  await listener.connect();
  listener.on('notification', (n: Notification) => cutoffs.push(JSON.parse(n.payload!)));
  await listener.query(`LISTEN ${AGENT_CUTOFF_CHANNEL}`);
});
afterAll(async () => {
  await listener?.end();
  await t?.close();
});

/** Waits for the cut-off NOTIFY (delivered at commit) that `expected` describes. */
async function cutoff(expected: Record<string, unknown>) {
  for (let i = 0; i < 100 && !cutoffs.some((c) => JSON.stringify(c) === JSON.stringify(expected)); i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  expect(cutoffs).toContainEqual(expected);
}

const serial = () => randomBytes(8).toString('hex');

async function issueCertificate(agent: { id: string; tenant_id: string }, fields: { revoked_at?: Date } = {}) {
  const row = {
    serial: serial(),
    ca_id: null,
    tenant_id: agent.tenant_id,
    agent_id: agent.id,
    not_before: new Date(),
    not_after: new Date(Date.now() + 86_400_000),
    ...fields,
  };
  await t.database.db('agent_certificates').insert(row);
  await t.database
    .db('agents')
    .where({ id: agent.id })
    .update({ certificate_serial: row.serial, certificate_not_after: row.not_after });
  return row.serial;
}

async function bootstrapToken() {
  const issued = await t.call('POST', '/api/tokens', {
    token: operator,
    body: { name: `t-${randomUUID().slice(0, 8)}` },
  });
  expect(issued.status).toBe(201);
  return issued.body.id as string;
}

describe('POST /api/agents/{id}/revoke-cert', () => {
  test('an admin revokes every certificate; the agent is revoked, unbound, announced, audited and cut off', async () => {
    const tokenId = await bootstrapToken();
    const agent = await seedAgent(t.database.db, 'default', { status: 'online', enrolled_with_token_id: tokenId });
    const old = await issueCertificate(agent, { revoked_at: new Date('2026-01-01T00:00:00Z') });
    const first = await issueCertificate(agent);
    const current = await issueCertificate(agent);

    const res = await t.call('POST', `/api/agents/${agent.id}/revoke-cert`, { token: admin });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id: agent.id,
      status: 'revoked',
      certificate: { serial: current, revokedAt: expect.any(String) },
    });
    expect((await t.call('GET', `/api/agents/${agent.id}`, { token: viewer })).body).toMatchObject({
      status: 'revoked',
      certificate: { revokedAt: res.body.certificate.revokedAt },
    });

    const certificates = await t.database.db('agent_certificates').where({ agent_id: agent.id }).orderBy('serial');
    expect(certificates.every((c) => c.revoked_at !== null)).toBe(true);
    expect(certificates.find((c) => c.serial === old)!.revoked_at).toEqual(new Date('2026-01-01T00:00:00Z'));
    // The binding stays: the gateway refuses this agent the token it is bound to.
    expect((await t.database.db('agents').where({ id: agent.id }).first()).enrolled_with_token_id).toBe(tokenId);

    const event = await t.database.db('events').where({ type: 'agent.cert-revoked', subject: agent.id }).first();
    expect(event).toMatchObject({ tenant_id: 'default', source: '/api/agents' });
    expect(event.data.agentId).toBe(agent.id);
    expect([...event.data.serials].sort()).toEqual([first, current].sort());
    const audit = await t.database
      .db('audit_calls')
      .where({ resource_type: 'agent', resource_id: agent.id, method: 'POST' });
    expect(audit).toHaveLength(1);
    expect(audit[0]).toMatchObject({ status: 200, path: `/api/agents/${agent.id}/revoke-cert` });
    await cutoff({ action: 'revoke', agentId: agent.id });
  });

  test('an agent without a certificate (token only) is revoked too; a repeat is 200 and emits nothing more', async () => {
    const agent = await seedAgent(t.database.db, 'default', {
      status: 'offline',
      enrolled_with_token_id: await bootstrapToken(),
    });
    const first = await t.call('POST', `/api/agents/${agent.id}/revoke-cert`, { token: admin });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ status: 'revoked', certificate: null });
    const again = await t.call('POST', `/api/agents/${agent.id}/revoke-cert`, { token: admin });
    expect(again.status).toBe(200);
    expect(again.body.status).toBe('revoked');
    const events = await t.database.db('events').where({ type: 'agent.cert-revoked', subject: agent.id });
    expect(events).toHaveLength(1);
    expect(events[0].data).toEqual({ agentId: agent.id, serials: [] });
    // It was offline: no session ended, so no disconnect is said.
    expect(await t.database.db('events').where({ type: 'agent.disconnected', subject: agent.id })).toEqual([]);
  });

  test('a handed-over agent is 409 and unchanged', async () => {
    const agent = await seedAgent(t.database.db, 'default', { status: 'handed-over' });
    const cert = await issueCertificate(agent);
    const res = await t.call('POST', `/api/agents/${agent.id}/revoke-cert`, { token: admin });
    expect(res.status).toBe(409);
    expect(res.body.type).toBe('http://fleet.test/errors/invalid-state-transition');
    expect((await t.database.db('agent_certificates').where({ serial: cert }).first()).revoked_at).toBeNull();
    expect((await t.database.db('agents').where({ id: agent.id }).first()).status).toBe('handed-over');
  });

  test('operators and viewers are 403, another tenant 404, a malformed id 400', async () => {
    const agent = await seedAgent(t.database.db, 'default', { status: 'online' });
    const cert = await issueCertificate(agent);
    expect((await t.call('POST', `/api/agents/${agent.id}/revoke-cert`, { token: operator })).status).toBe(403);
    expect((await t.call('POST', `/api/agents/${agent.id}/revoke-cert`, { token: viewer })).status).toBe(403);
    const foreign = await t.call('POST', `/api/agents/${agent.id}/revoke-cert`, { token: acmeAdmin });
    expect(foreign.status).toBe(404);
    expect(foreign.body.detail).toBe(`No agent with id '${agent.id}'.`);
    expect((await t.call('POST', `/api/agents/${randomUUID()}/revoke-cert`, { token: admin })).status).toBe(404);
    const bad = await t.call('POST', '/api/agents/nope/revoke-cert', { token: admin });
    expect(bad.status).toBe(400);
    expect(bad.body.errors.map((e: { path: string }) => e.path)).toEqual(['path.id']);
    expect((await t.database.db('agent_certificates').where({ serial: cert }).first()).revoked_at).toBeNull();
    expect((await t.database.db('agents').where({ id: agent.id }).first()).status).toBe('online');
  });
});

describe('approving and rejecting pending agents', () => {
  test('approve: pending-approval → enrolling, announced with the approver, held session cut off', async () => {
    const agent = await seedAgent(t.database.db, 'default', { status: 'pending-approval' });
    const res = await t.call('POST', `/api/agents/${agent.id}/approve`, { token: operator });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: agent.id, status: 'enrolling' });
    const event = await t.database.db('events').where({ type: 'agent.approved', subject: agent.id }).first();
    expect(event.data).toEqual({ agentId: agent.id, approvedBy: expect.any(String) });
    expect(event.data.approvedBy).not.toBe('');
    expect(
      await t.database.db('audit_calls').where({ resource_type: 'agent', resource_id: agent.id, method: 'POST' }),
    ).toHaveLength(1);
    await cutoff({ action: 'approve', agentId: agent.id });
  });

  test('reject: pending-approval → revoked, announced, cut off', async () => {
    const agent = await seedAgent(t.database.db, 'default', { status: 'pending-approval' });
    const res = await t.call('POST', `/api/agents/${agent.id}/reject`, { token: operator });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('revoked');
    const event = await t.database.db('events').where({ type: 'agent.rejected', subject: agent.id }).first();
    expect(event.data).toEqual({ agentId: agent.id, rejectedBy: expect.any(String) });
    await cutoff({ action: 'reject', agentId: agent.id });
  });

  test.each(['approve', 'reject'])(
    '%s of an agent that is not pending is 409 invalid-state-transition naming its status',
    async (action) => {
      const agent = await seedAgent(t.database.db, 'default', { status: 'online' });
      const res = await t.call('POST', `/api/agents/${agent.id}/${action}`, { token: operator });
      expect(res.status).toBe(409);
      expect(res.body.type).toBe('http://fleet.test/errors/invalid-state-transition');
      expect(res.body.detail).toContain('online');
      expect((await t.database.db('agents').where({ id: agent.id }).first()).status).toBe('online');
      expect(await t.database.db('events').where({ subject: agent.id })).toHaveLength(0);
    },
  );

  test('a second approval is 409 (the agent is enrolling by then)', async () => {
    const agent = await seedAgent(t.database.db, 'default', { status: 'pending-approval' });
    expect((await t.call('POST', `/api/agents/${agent.id}/approve`, { token: operator })).status).toBe(200);
    const again = await t.call('POST', `/api/agents/${agent.id}/approve`, { token: operator });
    expect(again.status).toBe(409);
    expect(again.body.detail).toContain('enrolling');
  });

  test.each(['approve', 'reject'])('%s: viewer 403, another tenant 404, malformed id 400', async (action) => {
    const agent = await seedAgent(t.database.db, 'default', { status: 'pending-approval' });
    expect((await t.call('POST', `/api/agents/${agent.id}/${action}`, { token: viewer })).status).toBe(403);
    expect((await t.call('POST', `/api/agents/${agent.id}/${action}`, { token: acmeAdmin })).status).toBe(404);
    expect((await t.call('POST', `/api/agents/not-a-uid/${action}`, { token: operator })).status).toBe(400);
    expect((await t.database.db('agents').where({ id: agent.id }).first()).status).toBe('pending-approval');
  });
});

describe('health on the agent resource', () => {
  test('health and effectiveConfigHash are shown on the agent and in lists; null until reported', async () => {
    const health = {
      healthy: false,
      startTimeUnixNano: '1763798400000000000',
      status: 'StatusRecoverableError',
      lastError: 'exporter otlp: connection refused',
      componentHealthMap: { 'exporter:otlp': { healthy: false, lastError: 'connection refused' } },
    };
    const hash = 'a'.repeat(64);
    const agent = await seedAgent(t.database.db, 'default', { status: 'online', health, effective_config_hash: hash });
    const res = await t.call('GET', `/api/agents/${agent.id}`, { token: viewer });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ health, effectiveConfigHash: hash });
    const list = await t.call('GET', `/api/agents?q=${agent.id}`, { token: viewer });
    expect(list.body.items).toEqual([expect.objectContaining({ id: agent.id, health, effectiveConfigHash: hash })]);

    const fresh = await seedAgent(t.database.db, 'default');
    expect((await t.call('GET', `/api/agents/${fresh.id}`, { token: viewer })).body).toMatchObject({
      health: null,
      effectiveConfigHash: null,
    });
  });

  test('the OpenAPI Agent schema describes health', async () => {
    const doc = (await t.call('GET', '/api/openapi.json', { token: viewer })).body;
    const agent = doc.components.schemas.Agent;
    expect(agent.properties.health.description).toContain('ComponentHealth');
    expect(agent.required).toEqual(expect.arrayContaining(['health', 'effectiveConfigHash']));
    expect(doc.paths['/api/agents/{id}/revoke-cert'].post.description).toBe('Requires permission `admin`.');
  });
});

describe('POST /api/tokens/{id}/revoke', () => {
  test('cuts off the live sessions of agents using the token', async () => {
    const tokenId = await bootstrapToken();
    expect((await t.call('POST', `/api/tokens/${tokenId}/revoke`, { token: operator })).status).toBe(200);
    await cutoff({ action: 'token-revoked', tokenId });
  });
});
