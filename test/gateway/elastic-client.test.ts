/**
 * The gateway driven by an OpAMP client no one here wrote: @elastic/opamp-client-node (HTTP
 * transport only, no CSR support), over TLS, enrolling with a bootstrap token header.
 */
import { randomUUID } from 'node:crypto';
import { createOpAMPClient, RemoteConfigStatuses } from '@elastic/opamp-client-node';
import { AgentCapability } from '../../gateway/codec';
import { pushConfiguration } from '../../domain/pushes';
import { startTestGateway, type TestGateway } from '../support/agent-gateway';
import { startTestApp, type TestApp } from '../support/app';
import { publishConfiguration } from '../support/configurations';
import { eventually } from '../support/eventually';

let t: TestApp;
let gateway: TestGateway;
let operator: string;
beforeAll(async () => {
  t = await startTestApp();
  gateway = await startTestGateway(t);
  operator = await t.token('default.operator');
});
afterAll(async () => {
  await gateway?.close();
  await t?.close();
});

test('@elastic/opamp-client-node enrolls over HTTPS, receives a pushed configuration and reports it APPLIED', async () => {
  const issued = await t.call('POST', '/api/tokens', { token: operator, body: { name: 'elastic-client' } });
  expect(issued.status).toBe(201);
  const [published] = await publishConfiguration(t, operator, ['receivers:\n  otlp: {}\n']);
  const instanceUid = randomUUID();
  const received: string[] = [];

  const client = createOpAMPClient({
    endpoint: gateway.httpUrl,
    headers: { Authorization: `Bearer ${issued.body.token}` },
    instanceUid,
    heartbeatIntervalSeconds: 0.2,
    capabilities:
      AgentCapability.ReportsStatus |
      AgentCapability.ReportsHeartbeat |
      AgentCapability.AcceptsRemoteConfig |
      AgentCapability.ReportsRemoteConfig,
    connect: { ca: gateway.ca.certificatePem },
    onMessage: ({ remoteConfig }) => {
      if (!remoteConfig) return;
      const files = Object.values<{ body: Uint8Array }>(remoteConfig.config?.configMap ?? {});
      for (const file of files) received.push(Buffer.from(file.body).toString('utf8'));
      client.setRemoteConfigStatus({
        status: RemoteConfigStatuses.RemoteConfigStatuses_APPLIED,
        lastRemoteConfigHash: remoteConfig.configHash,
      });
    },
  });
  client.setAgentDescription({ identifyingAttributes: { 'service.name': 'elastic-node-agent' } });
  client.start();
  try {
    const agent = await eventually(async () => {
      const res = await t.call('GET', `/api/agents/${instanceUid}`, { token: operator });
      expect(res.body).toMatchObject({ status: 'online', name: 'elastic-node-agent', groupId: issued.body.groupId });
      return res.body;
    });
    expect(agent.id).toBe(instanceUid);

    await t.database.db.transaction((trx) =>
      pushConfiguration(trx, {
        tenantId: 'default',
        agentIds: [instanceUid],
        configurationId: published!.configurationId,
        version: published!.version,
      }),
    );

    const applied = await eventually(async () => {
      const res = await t.call('GET', `/api/agents/${instanceUid}`, { token: operator });
      expect(res.body.applied).toMatchObject({ status: 'APPLIED', hash: published!.contentHash });
      return res.body;
    }, 10_000);
    expect(applied.applied).toMatchObject({ configurationId: published!.configurationId, version: published!.version });
    expect(applied.desired).toEqual({
      configurationId: published!.configurationId,
      version: published!.version,
      hash: published!.contentHash,
    });
    expect(received).toEqual(['receivers:\n  otlp: {}\n']);
  } finally {
    await client.shutdown();
  }
});
