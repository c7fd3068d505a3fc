import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { insertSyncRun, finishSyncRun } from '../../db/repos/git-sync-runs';
import { openCredentials } from '../../domain/git/credentials';
import { hashToken } from '../../domain/tokens/secret-token';
import { gitSyncWorkflowId } from '../../workflows/definitions';
import { gitSourceIdKey, tenantIdKey } from '../../workflows/search-attributes';
import { eventually } from '../support/eventually';
import { sourceBody, startGitSourcesApp, wakeUps, type GitSourcesApp } from '../support/git-sources';
import { testCa } from '../support/tls';
import { startTestApp, type TestApp } from '../support/app';
import { capturedLogger } from '../support/logs';

let env: GitSourcesApp;
let t: TestApp;
let operator: string;
let viewer: string;
let acme: string;
let admin: string;
let acmeAdmin: string;
const { logger, lines: logLines } = capturedLogger();
beforeAll(async () => {
  env = await startGitSourcesApp({}, { logger });
  t = env.t;
  operator = await t.token('default.operator');
  viewer = await t.token('default.viewer');
  acme = await t.token('acme.operator');
  admin = await t.token('default.admin');
  acmeAdmin = await t.token('acme.admin');
});
afterAll(() => env?.close());

const ERRORS = 'http://fleet.test/errors';
const TOKEN_SECRET = 'ghp_S3CRETt0kenValue0123456789abcdef';
const SSH_KEY = `-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW
QyNTUxOQAAACBzZWNyZXQta2V5LW1hdGVyaWFsLW5ldmVyLXNob3duAAAA
-----END OPENSSH PRIVATE KEY-----
`;
const KNOWN_HOSTS =
  'git.example.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n';
const httpsCredentials = { kind: 'https', username: 'ci-bot', token: TOKEN_SECRET };
const sshCredentials = { kind: 'ssh', privateKey: SSH_KEY, knownHosts: KNOWN_HOSTS };
const SECRETS = [TOKEN_SECRET, 'ZXQta2V5LW1hdGVyaWFsLW5ldmVy'];

/** The reply as the wire carried it: no secret may appear anywhere in it. */
function expectNoSecret(reply: { body: unknown; headers: Headers }) {
  const text = JSON.stringify(reply.body) + JSON.stringify([...reply.headers]);
  for (const secret of SECRETS) expect(text).not.toContain(secret);
}

async function create(overrides: Record<string, unknown> = {}, token = operator) {
  const res = await t.call('POST', '/api/git-sources', { token, body: sourceBody(overrides) });
  expect(res.status).toBe(201);
  return res;
}

const events = (type: string, subject: string) => t.database.db('events').where({ type, subject });

describe('registering and reading sources', () => {
  test('create answers 201 with Location, ETag and the presentation; its loop is started, findable by GitSourceId', async () => {
    const res = await create({ name: 'edge', credentials: httpsCredentials, autoPublish: true });
    const id = res.body.id as string;
    expect(res.headers.get('location')).toBe(`/api/git-sources/${id}`);
    expect(res.headers.get('etag')).toMatch(/^"[0-9a-f]{8}\.[\w-]{16}"$/);
    expect(res.body).toEqual({
      id,
      name: 'edge',
      repoUrl: 'https://git.example.com/acme/fleet-config.git',
      branch: 'main',
      path: 'collectors',
      pollIntervalSeconds: 60,
      autoPublish: true,
      paused: false,
      credentials: { kind: 'https', configured: true },
      caCertificate: null,
      webhook: { url: `http://fleet.test/api/git/webhook/${id}`, configured: false, createdAt: null },
      rolloutTemplate: null,
      lastSyncedSha: null,
      lastSyncedAt: null,
      lastRun: null,
      createdBy: expect.any(String),
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    expectNoSecret(res);

    const detail = await t.call('GET', `/api/git-sources/${id}`, { token: viewer });
    expect(detail.status).toBe(200);
    expect(detail.body).toEqual(res.body);
    expect(detail.headers.get('etag')).toBe(res.headers.get('etag'));
    const again = await t.call('GET', `/api/git-sources/${id}`, {
      token: viewer,
      headers: { 'if-none-match': detail.headers.get('etag')! },
    });
    expect(again.status).toBe(304);

    expect(await events('git-source.created', id)).toHaveLength(1);
    const description = await env.client.workflow.getHandle(gitSyncWorkflowId(id)).describe();
    expect(description.type).toBe('gitSyncWorkflow');
    expect(description.typedSearchAttributes.get(gitSourceIdKey)).toBe(id);
    expect(description.typedSearchAttributes.get(tenantIdKey)).toBe('default');
    expect(await wakeUps(env.client, id)).toEqual(['source-changed']);
  });

  test('credentials are stored sealed (AES-GCM, bound to the source) and only their kind is ever shown', async () => {
    const res = await create({ repoUrl: 'ssh://git@git.example.com/acme/fleet.git', credentials: sshCredentials });
    expect(res.body.credentials).toEqual({ kind: 'ssh', configured: true });
    const row = await t.database.db('git_sources').where({ id: res.body.id }).first();
    const stored = JSON.stringify(row) + row.credentials_ciphertext.toString('latin1');
    for (const secret of SECRETS) expect(stored).not.toContain(secret);
    expect(openCredentials(t.settings.encryptionKey!, row)).toEqual(sshCredentials);

    const list = await t.call('GET', '/api/git-sources?limit=1000', { token: viewer });
    expectNoSecret(list);
    // A refused write that carried credentials does not echo them either.
    const duplicate = await t.call('POST', '/api/git-sources', {
      token: operator,
      body: sourceBody({ name: res.body.name, credentials: httpsCredentials }),
    });
    expect(duplicate.status).toBe(409);
    expectNoSecret(duplicate);
    const mismatched = await t.call('POST', '/api/git-sources', {
      token: operator,
      body: sourceBody({ repoUrl: 'ssh://git@git.example.com/a.git', credentials: httpsCredentials }),
    });
    expect(mismatched.status).toBe(400);
    expectNoSecret(mismatched);
  });

  test('an installation without Git:FileRoots refuses every file:// repository, and a PUT cannot bring one in', async () => {
    const strict = await startTestApp({ Git__FileRoots: '' });
    try {
      const token = await strict.token('default.operator');
      const refused = await strict.call('POST', '/api/git-sources', {
        token,
        body: sourceBody({ repoUrl: `file://${tmpdir()}/fleet.git` }),
      });
      expect(refused.status).toBe(400);
      expect(refused.body.errors).toEqual([
        {
          path: 'body.repoUrl',
          message: 'file:// repositories are not allowed on this installation (setting Git:FileRoots)',
        },
      ]);
      const created = await strict.call('POST', '/api/git-sources', { token, body: sourceBody() });
      expect(created.status).toBe(201);
      const moved = await strict.call('PUT', `/api/git-sources/${created.body.id}`, {
        token,
        body: sourceBody({ name: created.body.name, repoUrl: `file://${tmpdir()}/fleet.git` }),
        headers: { 'if-match': created.headers.get('etag')! },
      });
      expect(moved.status).toBe(400);
      expect((await strict.call('GET', `/api/git-sources/${created.body.id}`, { token })).body.repoUrl).toBe(
        created.body.repoUrl,
      );
    } finally {
      await strict.close();
    }
  });

  test('a source without credentials shows credentials null; pollIntervalSeconds and path are kept as given', async () => {
    const res = await create({ repoUrl: `file://${tmpdir()}/fleet.git`, path: 'prod/', pollIntervalSeconds: 5 });
    expect(res.body).toMatchObject({ credentials: null, path: 'prod', pollIntervalSeconds: 5 });
  });

  test('the list pages oldest first and filters by q (name or URL) and paused', async () => {
    const a = await create({ name: 'filter-alpha' });
    const b = await create({ name: 'filter-beta', repoUrl: 'https://gitlab.example.org/ops/filter.git' });
    await t.call('POST', `/api/git-sources/${b.body.id}/pause`, { token: operator });

    const byName = await t.call('GET', '/api/git-sources?q=filter-', { token: viewer });
    expect(byName.body.items.map((s: { name: string }) => s.name)).toEqual(['filter-alpha', 'filter-beta']);
    expect(byName.headers.get('x-total-count')).toBe('2');
    const byUrl = await t.call('GET', '/api/git-sources?q=gitlab.example.org', { token: viewer });
    expect(byUrl.body.items.map((s: { id: string }) => s.id)).toEqual([b.body.id]);
    const paused = await t.call('GET', '/api/git-sources?q=filter-&paused=true', { token: viewer });
    expect(paused.body.items.map((s: { id: string }) => s.id)).toEqual([b.body.id]);
    const running = await t.call('GET', '/api/git-sources?q=filter-&paused=false', { token: viewer });
    expect(running.body.items.map((s: { id: string }) => s.id)).toEqual([a.body.id]);

    const first = await t.call('GET', '/api/git-sources?q=filter-&limit=1', { token: viewer });
    expect(first.headers.get('link')).toMatch(/rel="next"/);
    const second = await t.call('GET', `/api/git-sources?q=filter-&limit=1&cursor=${first.body.nextCursor}`, {
      token: viewer,
    });
    expect(second.body.items.map((s: { id: string }) => s.id)).toEqual([b.body.id]);
    expect(second.body.nextCursor).toBeNull();

    const bad = await t.call('GET', '/api/git-sources?paused=maybe&colour=red', { token: viewer });
    expect(bad.status).toBe(400);
  });
});

describe('validation: every field has its 400', () => {
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['no name', { name: undefined }, 'body.name'],
    ['a blank name', { name: '  ' }, 'body.name'],
    ['a name with a control character', { name: 'a\u0007b' }, 'body.name'],
    ['no repoUrl', { repoUrl: undefined }, 'body.repoUrl'],
    ['plain http', { repoUrl: 'http://git.example.com/a.git' }, 'body.repoUrl'],
    ['git://', { repoUrl: 'git://git.example.com/a.git' }, 'body.repoUrl'],
    ['ext:: transport', { repoUrl: 'ext::sh -c touch% /tmp/pwned' }, 'body.repoUrl'],
    ['fd:: transport', { repoUrl: 'fd::17' }, 'body.repoUrl'],
    ['a bare path', { repoUrl: '/srv/git/fleet.git' }, 'body.repoUrl'],
    ['scp-like', { repoUrl: 'git@github.com:acme/fleet.git' }, 'body.repoUrl'],
    ['a relative path', { repoUrl: 'fleet-config' }, 'body.repoUrl'],
    ['a user in an https URL', { repoUrl: 'https://bot@git.example.com/a.git' }, 'body.repoUrl'],
    ['a query string', { repoUrl: 'https://git.example.com/a.git?private_token=x' }, 'body.repoUrl'],
    ['a file URL with a host', { repoUrl: 'file://server/srv/git/a.git' }, 'body.repoUrl'],
    ['a file URL outside Git:FileRoots', { repoUrl: 'file:///srv/git/fleet.git' }, 'body.repoUrl'],
    ['a file URL out of the roots by ..', { repoUrl: `file://${tmpdir()}/../etc/a.git` }, 'body.repoUrl'],
    ['an ssh host that is an option', { repoUrl: 'ssh://-oProxyCommand=touch%20x/a.git' }, 'body.repoUrl'],
    ['an ssh user that is an option', { repoUrl: 'ssh://-oProxyCommand=x@git.example.com/a.git' }, 'body.repoUrl'],
    [
      'an ssh user escaped into an option',
      { repoUrl: 'ssh://%2doProxyCommand=x@git.example.com/a.git' },
      'body.repoUrl',
    ],
    ['an ssh host with escapes', { repoUrl: 'ssh://git@git%2eexample.com/a.git' }, 'body.repoUrl'],
    ['scp-like with an option for a host', { repoUrl: '-oProxyCommand=x:a.git' }, 'body.repoUrl'],
    ['scp-like with an option for a user', { repoUrl: '-oProxyCommand=x@host:a.git' }, 'body.repoUrl'],
    ['a newline in the URL', { repoUrl: 'https://git.exa\nmple.com/a.git' }, 'body.repoUrl'],
    ['no branch', { branch: undefined }, 'body.branch'],
    ['a branch with ..', { branch: 'release..1' }, 'body.branch'],
    ['a branch starting with -', { branch: '-x' }, 'body.branch'],
    ['a branch ending .lock', { branch: 'main.lock' }, 'body.branch'],
    ['a ref instead of a branch', { branch: 'refs/heads/main' }, 'body.branch'],
    ['a branch with a space', { branch: 'my branch' }, 'body.branch'],
    ['a branch with ~', { branch: 'main~1' }, 'body.branch'],
    ['a branch part starting with .', { branch: 'feature/.x' }, 'body.branch'],
    ['a branch @', { branch: '@' }, 'body.branch'],
    ['a branch with @{', { branch: 'a@{1}' }, 'body.branch'],
    ['an absolute path', { path: '/etc' }, 'body.path'],
    ['a path with ..', { path: 'configs/../../etc' }, 'body.path'],
    ['a path with //', { path: 'a//b' }, 'body.path'],
    ['a poll interval below 5 s', { pollIntervalSeconds: 4 }, 'body.pollIntervalSeconds'],
    ['a poll interval above a day', { pollIntervalSeconds: 86_401 }, 'body.pollIntervalSeconds'],
    ['a fractional poll interval', { pollIntervalSeconds: 1.5 }, 'body.pollIntervalSeconds'],
    ['a poll interval as text', { pollIntervalSeconds: '60' }, 'body.pollIntervalSeconds'],
    ['autoPublish as text', { autoPublish: 'yes' }, 'body.autoPublish'],
    ['an unknown credentials kind', { credentials: { kind: 'basic', token: 'x' } }, 'body.credentials.kind'],
    [
      'https credentials without a token',
      { credentials: { kind: 'https', username: 'bot' } },
      'body.credentials.token',
    ],
    ['a username with :', { credentials: { kind: 'https', username: 'a:b', token: 'x' } }, 'body.credentials.username'],
    [
      'ssh credentials without known hosts',
      { repoUrl: 'ssh://git@git.example.com/a.git', credentials: { kind: 'ssh', privateKey: SSH_KEY } },
      'body.credentials.knownHosts',
    ],
    [
      'an ssh key that is no key',
      {
        repoUrl: 'ssh://git@git.example.com/a.git',
        credentials: { kind: 'ssh', privateKey: 'hunter2', knownHosts: KNOWN_HOSTS },
      },
      'body.credentials.privateKey',
    ],
    [
      'known hosts that are no known_hosts lines',
      {
        repoUrl: 'ssh://git@git.example.com/a.git',
        credentials: { kind: 'ssh', privateKey: SSH_KEY, knownHosts: 'trust me' },
      },
      'body.credentials.knownHosts',
    ],
    ['ssh credentials for an https URL', { credentials: sshCredentials }, 'body.credentials'],
    [
      'credentials for a file URL',
      { repoUrl: `file://${tmpdir()}/a.git`, credentials: httpsCredentials },
      'body.credentials',
    ],
    [
      'a rollout template without autoPublish',
      { rolloutTemplate: { target: { groupIds: [randomUUID()] }, strategy: { batchSize: 1 } } },
      'body.rolloutTemplate',
    ],
    [
      'a rollout template with a bad strategy',
      { autoPublish: true, rolloutTemplate: { target: { groupIds: [randomUUID()] }, strategy: {} } },
      'body.rolloutTemplate.strategy',
    ],
    [
      'a rollout template with an empty target',
      { autoPublish: true, rolloutTemplate: { target: {}, strategy: { batchSize: 1 } } },
      'body.rolloutTemplate.target',
    ],
    ['a CA certificate that is no PEM', { caCertificate: 'trust me' }, 'body.caCertificate'],
    [
      'a CA certificate whose PEM is no certificate',
      { caCertificate: '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n' },
      'body.caCertificate',
    ],
    ['an unknown member', { paused: true }, 'body'],
  ];

  test.each(cases)('%s', async (_case, overrides, path) => {
    const res = await t.call('POST', '/api/git-sources', { token: operator, body: sourceBody(overrides) });
    expect(res.status).toBe(400);
    expect(res.body.type).toBe(`${ERRORS}/validation-failed`);
    expect(res.body.errors.map((e: { path: string }) => e.path)).toContain(path);
    expectNoSecret(res);
  });

  test('a CA certificate: a valid bundle is kept (LF, one final newline); an expired one, text beside it, or a private key is 400', async () => {
    const ca = (await testCa('Acme internal CA')).certificatePem;
    const second = (await testCa('Acme second CA')).certificatePem;
    const expired = (await testCa('Acme old CA', { expired: true })).certificatePem;
    const refusal = async (caCertificate: string, message: RegExp, fields: Record<string, unknown> = {}) => {
      const body = sourceBody({ caCertificate, ...fields });
      const res = await t.call('POST', '/api/git-sources', { token: operator, body });
      expect(res.status).toBe(400);
      expect(res.body.errors).toEqual([{ path: 'body.caCertificate', message: expect.stringMatching(message) }]);
    };
    await refusal(expired, /^certificate 1 \(CN=Acme old CA\) expired on \d{4}-/);
    await refusal(`${ca}\n${expired}`, /^certificate 2 \(CN=Acme old CA\) expired on/);
    await refusal(`${ca}\nnot a certificate\n`, /PEM certificates only/);
    await refusal(`${ca}\n-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n`, /PEM certificates only/);
    await refusal(ca, /^is for https:\/\/ repositories only$/, { repoUrl: 'ssh://git@git.example.com/a.git' });

    const bundle = `\r\n${ca.replace(/\n/g, '\r\n')}\r\n${second}  `;
    const res = await create({ caCertificate: bundle });
    expect(res.status).toBe(201);
    expect(res.body.caCertificate).toBe(`${ca.trim()}\n${second.trim()}\n`);
    expect(await t.database.db('git_sources').where({ id: res.body.id }).first('ca_certificate')).toEqual({
      ca_certificate: res.body.caCertificate,
    });
  });

  test('a rollout template naming a group the tenant does not have is 404, as for a rollout', async () => {
    const res = await t.call('POST', '/api/git-sources', {
      token: operator,
      body: sourceBody({
        autoPublish: true,
        rolloutTemplate: { target: { groupIds: [randomUUID()] }, strategy: { batchSize: 1 } },
      }),
    });
    expect(res.status).toBe(404);
  });

  test('a valid rollout template is stored with the rollout defaults', async () => {
    const group = await t.call('POST', '/api/groups', {
      token: operator,
      body: { name: `git-target-${randomUUID()}` },
    });
    const res = await create({
      autoPublish: true,
      rolloutTemplate: { target: { groupIds: [group.body.id] }, strategy: { batchPercent: 50 } },
    });
    expect(res.body.rolloutTemplate).toEqual({
      target: { groupIds: [group.body.id], agentIds: [], labelSelector: null },
      strategy: {
        batchPercent: 50,
        bakeSeconds: 0,
        applyTimeoutSeconds: 300,
        maxFailurePercent: 0,
        onFailure: 'pause',
        offlineAgents: 'defer',
        lateArrivalSeconds: 7 * 86_400,
      },
    });
  });
});

describe('changing a source', () => {
  test('PUT needs the current ETag (412 otherwise), answers the new one, and wakes the loop', async () => {
    const res = await create({ credentials: httpsCredentials });
    const id = res.body.id;
    const etag = res.headers.get('etag')!;
    const body = sourceBody({ name: res.body.name, branch: 'release', pollIntervalSeconds: 300 });
    const updated = await t.call('PUT', `/api/git-sources/${id}`, {
      token: operator,
      body,
      headers: { 'if-match': etag },
    });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ branch: 'release', pollIntervalSeconds: 300, credentials: { kind: 'https' } });
    expect(updated.headers.get('etag')).not.toBe(etag);
    expectNoSecret(updated);

    const stale = await t.call('PUT', `/api/git-sources/${id}`, {
      token: operator,
      body,
      headers: { 'if-match': etag },
    });
    expect(stale.status).toBe(412);
    expect(stale.body.type).toBe(`${ERRORS}/precondition-failed`);
    expect(await events('git-source.updated', id)).toHaveLength(1);
    expect(await wakeUps(env.client, id)).toEqual(['source-changed', 'source-changed']);
  });

  test('two writers holding the same ETag: one wins, the other gets 412', async () => {
    const res = await create();
    const headers = { 'if-match': res.headers.get('etag')! };
    const put = (pollIntervalSeconds: number) =>
      t.call('PUT', `/api/git-sources/${res.body.id}`, {
        token: operator,
        body: sourceBody({ name: res.body.name, pollIntervalSeconds }),
        headers,
      });
    const statuses = (await Promise.all([put(30), put(90), put(120)])).map((reply) => reply.status).sort();
    expect(statuses).toEqual([200, 412, 412]);
  });

  test('credentials: omitted keeps them, an object replaces them, null removes them', async () => {
    const res = await create({ credentials: httpsCredentials });
    const id = res.body.id;
    const put = (extra: Record<string, unknown>) =>
      t.call('PUT', `/api/git-sources/${id}`, { token: operator, body: sourceBody({ name: res.body.name, ...extra }) });
    const stored = async () =>
      openCredentials(t.settings.encryptionKey!, await t.database.db('git_sources').where({ id }).first());

    expect((await put({})).body.credentials).toEqual({ kind: 'https', configured: true });
    expect(await stored()).toEqual(httpsCredentials);
    const replaced = { kind: 'https', token: 'glpat-replacement' };
    expect((await put({ credentials: replaced })).body.credentials).toEqual({ kind: 'https', configured: true });
    expect(await stored()).toEqual(replaced);
    expect((await put({ credentials: null })).body.credentials).toBeNull();
    expect(await stored()).toBeNull();
  });

  test('stored credentials never follow repoUrl to another host: such a PUT must send them again or null', async () => {
    const res = await create({ credentials: httpsCredentials });
    const id = res.body.id;
    const moved = await t.call('PUT', `/api/git-sources/${id}`, {
      token: operator,
      body: sourceBody({ name: res.body.name, repoUrl: 'https://attacker.example.net/loot.git' }),
    });
    expect(moved.status).toBe(409);
    expect(moved.body.errors).toEqual([{ path: 'body.credentials', message: expect.stringMatching(/another host/) }]);
    const sameHost = await t.call('PUT', `/api/git-sources/${id}`, {
      token: operator,
      body: sourceBody({ name: res.body.name, repoUrl: 'https://git.example.com/acme/other.git' }),
    });
    expect(sameHost.status).toBe(200);
    const toSsh = await t.call('PUT', `/api/git-sources/${id}`, {
      token: operator,
      body: sourceBody({ name: res.body.name, repoUrl: 'ssh://git@git.example.com/acme/other.git' }),
    });
    // Another origin (ssh://), so the stored (https) credentials do not follow: what is stored decides, 409.
    expect(toSsh.status).toBe(409);
  });

  test('moving a source to another branch or path forgets the synced commit, so the next wake-up syncs', async () => {
    const res = await create();
    const id = res.body.id;
    await t.database
      .db('git_sources')
      .where({ id })
      .update({ last_synced_sha: 'a'.repeat(40), last_synced_at: new Date() });
    const same = await t.call('PUT', `/api/git-sources/${id}`, {
      token: operator,
      body: sourceBody({ name: res.body.name, pollIntervalSeconds: 120 }),
    });
    expect(same.body.lastSyncedSha).toBe('a'.repeat(40));
    const moved = await t.call('PUT', `/api/git-sources/${id}`, {
      token: operator,
      body: sourceBody({ name: res.body.name, path: 'elsewhere' }),
    });
    expect(moved.body).toMatchObject({ lastSyncedSha: null, lastSyncedAt: null });
  });

  test('names are unique per tenant (409); another tenant may use the same name', async () => {
    const res = await create({ name: 'unique-source' });
    const dup = await t.call('POST', '/api/git-sources', {
      token: operator,
      body: sourceBody({ name: 'unique-source' }),
    });
    expect(dup.status).toBe(409);
    expect(dup.body.type).toBe(`${ERRORS}/conflict`);
    const other = await create({ name: 'other-name' });
    const rename = await t.call('PUT', `/api/git-sources/${other.body.id}`, {
      token: operator,
      body: sourceBody({ name: 'unique-source' }),
    });
    expect(rename.status).toBe(409);
    await create({ name: 'unique-source' }, acme);
    expect(res.status).toBe(201);
  });

  test('pause and resume are idempotent (one event each), and a paused source refuses a forced sweep', async () => {
    const res = await create();
    const id = res.body.id;
    const pause = await t.call('POST', `/api/git-sources/${id}/pause`, { token: operator });
    expect(pause.status).toBe(200);
    expect(pause.body.paused).toBe(true);
    const again = await t.call('POST', `/api/git-sources/${id}/pause`, { token: operator });
    expect(again.status).toBe(200);
    expect(again.headers.get('etag')).toBe(pause.headers.get('etag'));
    expect(await events('git-source.paused', id)).toHaveLength(1);

    const sync = await t.call('POST', `/api/git-sources/${id}/sync`, { token: operator });
    expect(sync.status).toBe(409);
    expect(sync.body.type).toBe(`${ERRORS}/invalid-state-transition`);

    const stale = await t.call('POST', `/api/git-sources/${id}/resume`, {
      token: operator,
      headers: { 'if-match': res.headers.get('etag')! },
    });
    expect(stale.status).toBe(412);
    const resume = await t.call('POST', `/api/git-sources/${id}/resume`, { token: operator });
    expect(resume.body.paused).toBe(false);
    expect(await events('git-source.resumed', id)).toHaveLength(1);

    const forced = await t.call('POST', `/api/git-sources/${id}/sync`, { token: operator });
    expect(forced.status).toBe(202);
    expect(forced.body).toEqual({ sourceId: id, trigger: 'manual', syncRuns: `/api/git-sources/${id}/sync-runs` });
    expect((await wakeUps(env.client, id)).at(-1)).toBe('manual');
  });

  test('DELETE (If-Match optional) removes the source and its runs; its configurations stay, no longer managed', async () => {
    const res = await create();
    const id = res.body.id;
    const [configuration] = await t.database
      .db('configurations')
      .insert({ tenant_id: 'default', name: `git/${id}`, format: 'yaml', managed_by: id })
      .returning('*');
    const managed = await t.call('PUT', `/api/configurations/${configuration.id}`, {
      token: operator,
      body: { name: configuration.name },
    });
    expect(managed.status).toBe(409);
    await insertSyncRun(t.database.db, {
      tenant_id: 'default',
      source_id: id,
      trigger: 'poll',
      commit_sha: 'b'.repeat(40),
    });

    const stale = await t.call('DELETE', `/api/git-sources/${id}`, {
      token: operator,
      headers: { 'if-match': '"00000099"' },
    });
    expect(stale.status).toBe(412);
    const deleted = await t.call('DELETE', `/api/git-sources/${id}`, {
      token: operator,
      headers: { 'if-match': res.headers.get('etag')! },
    });
    expect(deleted.status).toBe(204);
    expect((await t.call('GET', `/api/git-sources/${id}`, { token: viewer })).status).toBe(404);
    expect(await t.database.db('git_sync_runs').where({ source_id: id })).toHaveLength(0);
    const [event] = await events('git-source.deleted', id);
    expect(event.data).toMatchObject({ id, releasedConfigurations: 1 });

    const released = await t.call('GET', `/api/configurations/${configuration.id}`, { token: viewer });
    expect(released.body.managedBy).toBeNull();
    const editable = await t.call('PUT', `/api/configurations/${configuration.id}`, {
      token: operator,
      body: { name: configuration.name, description: 'now edited through the API' },
    });
    expect(editable.status).toBe(200);
    await eventually(async () => expect((await wakeUps(env.client, id)).at(-1)).toBe('source-changed'));
    expect((await t.call('DELETE', `/api/git-sources/${id}`, { token: operator })).status).toBe(404);
  });
});

describe('webhook token', () => {
  test('is generated once, shown once (no-store), stored as its SHA-256 only; the source shows that one exists', async () => {
    const res = await create();
    const id = res.body.id;
    const issued = await t.call('POST', `/api/git-sources/${id}/webhook-token`, { token: admin });
    expect(issued.status).toBe(201);
    expect(issued.body).toEqual({
      token: expect.stringMatching(/^svc-wh\.[a-z2-7]{32}\.[a-z2-7]{7}$/),
      createdAt: expect.any(String),
      url: `http://fleet.test/api/git/webhook/${id}`,
    });
    expect(issued.headers.get('cache-control')).toBe('no-store');
    expect(issued.headers.get('etag')).toMatch(/^"[0-9a-f]{8}"$/); // no digest of the body: it holds the secret
    const row = await t.database.db('git_sources').where({ id }).first();
    expect(row.webhook_token_hash).toEqual(hashToken(issued.body.token));
    expect(JSON.stringify(row)).not.toContain(issued.body.token);

    const detail = await t.call('GET', `/api/git-sources/${id}`, { token: viewer });
    expect(detail.body.webhook).toEqual({ url: issued.body.url, configured: true, createdAt: issued.body.createdAt });
    expect(JSON.stringify(detail.body)).not.toContain(issued.body.token);
    const [event] = await events('git-source.webhook-token-rotated', id);
    expect(event.data).toEqual({ id, name: res.body.name, createdAt: issued.body.createdAt, replaced: false });
    expect(JSON.stringify(event)).not.toContain(issued.body.token);

    const stale = await t.call('POST', `/api/git-sources/${id}/webhook-token`, {
      token: admin,
      headers: { 'if-match': res.headers.get('etag')! },
    });
    expect(stale.status).toBe(412);
    const rotated = await t.call('POST', `/api/git-sources/${id}/webhook-token`, {
      token: admin,
      headers: { 'if-match': detail.headers.get('etag')! },
    });
    expect(rotated.status).toBe(201);
    expect(rotated.body.token).not.toBe(issued.body.token);
  });
});

describe('sync runs', () => {
  test('are listed newest first, paged, with timings; the source shows the newest as lastRun', async () => {
    const res = await create();
    const id = res.body.id;
    const db = t.database.db;
    const first = await insertSyncRun(db, {
      tenant_id: 'default',
      source_id: id,
      trigger: 'poll',
      commit_sha: 'c'.repeat(40),
    });
    await db('git_sync_runs')
      .where({ id: first.id })
      .update({ started_at: new Date(Date.now() - 60_000) });
    await finishSyncRun(db, first.id, {
      status: 'succeeded',
      changes: [{ path: 'collectors/a.yaml', configurationId: randomUUID(), name: 'a', change: 'created', version: 1 }],
      file_errors: [{ path: 'collectors/b.yaml', error: 'line 2: bad indentation' }],
      error: null,
      rollout_id: null,
    });
    const second = await insertSyncRun(db, {
      tenant_id: 'default',
      source_id: id,
      trigger: 'webhook',
      commit_sha: 'd'.repeat(40),
    });

    const page = await t.call('GET', `/api/git-sources/${id}/sync-runs?limit=1`, { token: viewer });
    expect(page.status).toBe(200);
    expect(page.headers.get('x-total-count')).toBe('2');
    expect(page.body.items).toEqual([
      expect.objectContaining({
        id: second.id,
        trigger: 'webhook',
        status: 'running',
        finishedAt: null,
        durationMs: null,
      }),
    ]);
    const next = await t.call('GET', `/api/git-sources/${id}/sync-runs?limit=1&cursor=${page.body.nextCursor}`, {
      token: viewer,
    });
    expect(next.body.items).toEqual([
      {
        id: first.id,
        trigger: 'poll',
        commitSha: 'c'.repeat(40),
        status: 'succeeded',
        changes: [expect.objectContaining({ path: 'collectors/a.yaml', change: 'created' })],
        fileErrors: [{ path: 'collectors/b.yaml', error: 'line 2: bad indentation' }],
        error: null,
        rolloutId: null,
        startedAt: expect.any(String),
        finishedAt: expect.any(String),
        durationMs: expect.any(Number),
      },
    ]);
    expect(next.body.items[0].durationMs).toBeGreaterThanOrEqual(59_000);

    const detail = await t.call('GET', `/api/git-sources/${id}`, { token: viewer });
    expect(detail.body.lastRun).toEqual({
      id: second.id,
      trigger: 'webhook',
      commitSha: 'd'.repeat(40),
      status: 'running',
      error: null,
      startedAt: second.started_at.toISOString(),
      finishedAt: null,
    });
  });
});

test('no credential reaches the log, whatever the calls send', async () => {
  const res = await create({ credentials: httpsCredentials });
  await t.call('PUT', `/api/git-sources/${res.body.id}`, {
    token: operator,
    body: sourceBody({ name: res.body.name, credentials: { ...httpsCredentials, username: 'a:b' } }),
  });
  await t.call('POST', '/api/git-sources', {
    token: operator,
    body: sourceBody({ name: res.body.name, credentials: sshCredentials }),
  });
  const logs = logLines.join('');
  expect(logs).toContain('/api/git-sources'); // the calls were logged...
  for (const secret of SECRETS) expect(logs).not.toContain(secret); // ...without what they carried (this file's other calls too)
});

describe('roles and tenants', () => {
  test('a viewer reads but cannot create, change, sync or issue a webhook token', async () => {
    const res = await create();
    const id = res.body.id;
    const calls: Array<[string, string, unknown?]> = [
      ['POST', '/api/git-sources', sourceBody()],
      ['PUT', `/api/git-sources/${id}`, sourceBody({ name: res.body.name })],
      ['DELETE', `/api/git-sources/${id}`],
      ['POST', `/api/git-sources/${id}/pause`],
      ['POST', `/api/git-sources/${id}/resume`],
      ['POST', `/api/git-sources/${id}/sync`],
      ['POST', `/api/git-sources/${id}/webhook-token`],
    ];
    for (const [method, path, body] of calls) {
      const reply = await t.call(method, path, { token: viewer, body });
      expect([method, path, reply.status]).toEqual([method, path, 403]);
    }
    expect((await t.call('GET', `/api/git-sources/${id}/sync-runs`, { token: viewer })).status).toBe(200);
  });

  test('only an admin issues a webhook token: an operator, who manages the source, gets 403', async () => {
    const { body } = await create();
    const refused = await t.call('POST', `/api/git-sources/${body.id}/webhook-token`, { token: operator });
    expect(refused.status).toBe(403);
    expect(JSON.stringify(refused.body)).not.toMatch(/svc-wh\./);
    const row = await t.database.db('git_sources').where({ id: body.id }).first();
    expect(row.webhook_token_hash).toBeNull();
  });

  test("another tenant's source is 404 everywhere and absent from its list", async () => {
    const res = await create({ name: 'tenant-a-only' });
    const id = res.body.id;
    for (const [method, path, body] of [
      ['GET', `/api/git-sources/${id}`],
      ['GET', `/api/git-sources/${id}/sync-runs`],
      ['PUT', `/api/git-sources/${id}`, sourceBody()],
      ['DELETE', `/api/git-sources/${id}`],
      ['POST', `/api/git-sources/${id}/pause`],
      ['POST', `/api/git-sources/${id}/sync`],
      ['POST', `/api/git-sources/${id}/webhook-token`],
    ] as Array<[string, string, unknown?]>) {
      const reply = await t.call(method, path, { token: acmeAdmin, body });
      expect([method, path, reply.status]).toEqual([method, path, 404]);
    }
    const list = await t.call('GET', '/api/git-sources?q=tenant-a-only', { token: acme });
    expect(list.body.items).toEqual([]);
  });
});
