import { createPrivateKey, randomBytes, X509Certificate } from 'node:crypto';
import { startTestApp, type TestApp } from '../support/app';
import { runScript } from '../support/processes';

let t: TestApp;
let env: Record<string, string>;
beforeAll(async () => {
  t = await startTestApp();
  env = {
    Database__Url: t.database.url,
    Environment: 'Production',
    Secrets__EncryptionKey: randomBytes(32).toString('base64'),
  };
});
afterAll(() => t?.close());

describe('npm run fleet', () => {
  test('migrate on a migrated database changes nothing', async () => {
    const res = await runScript('scripts/fleet.ts', ['migrate'], env);
    expect(res).toMatchObject({ code: 0, stdout: 'database is up to date\n' });
  });

  test('create-pat prints a working admin token once', async () => {
    const res = await runScript('scripts/fleet.ts', ['create-pat', '--name', 'break-glass', '--role', 'admin'], env);
    expect(res.code).toBe(0);
    const token = res.stdout.trim();
    expect(token).toMatch(/^svc-pat\.[a-z2-7]{32}\.[a-z2-7]{7}$/);
    expect(res.stderr).toContain("PAT 'break-glass' (admin, tenant default");
    const list = await t.call('GET', '/api/pats', { token });
    expect(list.status).toBe(200);
    expect(list.body.items[0]).toMatchObject({ name: 'break-glass', createdBy: 'cli' });
    expect(JSON.stringify(list.body)).not.toContain(token);

    // Announced as a PAT issued through the API is: the same event, the PAT as GET shows it.
    const shown = list.body.items[0];
    const events = await t.call('GET', `/api/events?type=pat.created&subject=${shown.id}`, { token });
    expect(events.body.items).toHaveLength(1);
    const [{ source, data }] = events.body.items;
    expect(source).toBe('/api/pats');
    expect(Object.keys(data).sort()).toEqual(Object.keys(shown).sort());
    const { lastUsedAt: _used, ...issued } = shown; // the list call above used the token
    expect(data).toMatchObject({ ...issued, lastUsedAt: null });
    expect(JSON.stringify(events.body)).not.toContain(token);
  });

  test('bad arguments stop with a clear line and the usage', async () => {
    const bad = await runScript('scripts/fleet.ts', ['create-pat', '--name', 'x', '--role', 'root'], env);
    expect(bad.code).toBe(64);
    expect(bad.stderr).toMatch(/^fleet: --role must be one of viewer, operator, auditor, admin, peer\n/);
    const dup = await runScript('scripts/fleet.ts', ['create-pat', '--name', 'break-glass', '--role', 'admin'], env);
    expect(dup.stderr).toMatch(/already exists/);
    const setting = await runScript('scripts/fleet.ts', ['migrate'], { ...env, Database__Url: 'mysql://nope' });
    expect(setting).toMatchObject({ code: 78, stderr: 'Invalid setting Database:Url: must be a postgres:// URL\n' });
  });

  test('export-ca prints the agents’ CA certificate, the one GET /api/agents/ca.pem serves to any reader', async () => {
    const served = await t.call('GET', '/api/agents/ca.pem', { token: await t.token('default.viewer') });
    expect(served.status).toBe(200);
    expect(served.headers.get('content-type')).toMatch(/^application\/x-pem-file/);
    const pem = served.body as string;
    const certificate = new X509Certificate(pem);
    expect(certificate.ca).toBe(true);
    expect(certificate.subject).toBe('CN=Fleet Config agent CA');
    const res = await runScript('scripts/fleet.ts', ['export-ca'], env);
    expect(res).toMatchObject({ code: 0, stdout: pem });
    expect((await t.call('GET', '/api/agents/ca.pem')).status).toBe(401);
  });

  test('issue-proxy-certificate prints a certificate for the proxy that ends agents’ TLS, with its chain and key', async () => {
    // The installation's own CA, which the app keeps under its key.
    const withKey = { ...env, Secrets__EncryptionKey: t.settings.encryptionKey!.toString('base64') };
    const res = await runScript(
      'scripts/fleet.ts',
      ['issue-proxy-certificate', '--hostname', 'agents.example.com', '--hostname', '10.0.0.7', '--days', '30'],
      withKey,
    );
    expect(res).toMatchObject({ code: 0, stderr: '' });
    const [leaf, chain] = res.stdout.split(/(?<=-----END CERTIFICATE-----\n)/);
    const certificate = new X509Certificate(leaf!);
    const ca = new X509Certificate((await runScript('scripts/fleet.ts', ['export-ca'], env)).stdout);
    expect(certificate.checkIssued(ca) && certificate.verify(ca.publicKey)).toBe(true);
    expect(new X509Certificate(chain!).fingerprint256).toBe(ca.fingerprint256);
    expect(certificate.subjectAltName).toBe('DNS:agents.example.com, IP Address:10.0.0.7');
    const days = (Date.parse(certificate.validTo) - Date.parse(certificate.validFrom)) / 86_400_000;
    expect(Math.round(days)).toBe(30);
    // The key is the certificate's.
    const key = createPrivateKey(/-----BEGIN PRIVATE KEY-----[\s\S]+-----END PRIVATE KEY-----\n/.exec(res.stdout)![0]);
    expect(certificate.checkPrivateKey(key)).toBe(true);

    const bad = await runScript('scripts/fleet.ts', ['issue-proxy-certificate', '--hostname', 'not a name'], withKey);
    expect(bad).toMatchObject({ code: 64, stderr: expect.stringMatching(/^fleet: --hostname not a name is neither/) });
    const none = await runScript('scripts/fleet.ts', ['issue-proxy-certificate'], env);
    expect(none).toMatchObject({ code: 64, stderr: expect.stringMatching(/needs --hostname/) });
  });

  test('verify-audit checks the chain', async () => {
    await t.call('GET', '/api/tenant', { token: await t.token('default.viewer') });
    const res = await runScript('scripts/fleet.ts', ['verify-audit'], env);
    expect(res.code).toBe(0);
    expect(JSON.parse(res.stdout)).toMatchObject({ valid: true });
  });
});
