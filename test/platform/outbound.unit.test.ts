/**
 * The outbound destination policy: the decision on an address (pure), and connections under
 * it on loopback only. Names that stand for the metadata service or a private network are
 * resolved by the test (test/support/outbound.ts) and refused before any connection.
 */
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { createOutbound, OUTBOUND_UNREACHABLE, OutboundRefused, type ResolvedAddress } from '../../platform/outbound';
import { withOutboundProxy } from '../../platform/outbound-proxy';
import { createOutboundRules, outboundRuleProblem } from '../../platform/outbound-rules';
import { capturedLogger } from '../support/logs';
import { testOutbound } from '../support/outbound';
import { freePort } from '../support/processes';

const v4 = (address: string): ResolvedAddress => ({ address, family: 4 });
const v6 = (address: string): ResolvedAddress => ({ address, family: 6 });

describe('the decision on an address', () => {
  const defaults = createOutboundRules({ allow: [], deny: [] });

  test.each([
    ['169.254.169.254', /link-local/],
    ['127.0.0.1', /loopback/],
    ['127.8.9.10', /loopback/],
    ['10.0.0.1', /private/],
    ['172.16.5.4', /private/],
    ['192.168.1.1', /private/],
    ['100.100.100.200', /shared/],
    ['0.0.0.0', /this network/],
    ['224.0.0.1', /multicast/],
    ['255.255.255.255', /reserved/],
  ])('%s is refused by default', (address, why) => expect(defaults('host.example', v4(address))).toMatch(why));

  test.each([
    ['::1', /loopback/],
    ['fe80::1', /link-local/],
    ['fd00:ec2::254', /private/],
    ['::', /unspecified/],
    ['::ffff:169.254.169.254', /169.254.169.254 is link-local/],
    ['::ffff:a9fe:a9fe', /169.254.169.254 is link-local/],
    ['64:ff9b::a9fe:a9fe', /169.254.169.254 is link-local/],
    ['::ffff:0:7f00:1', /IPv4-translated/],
  ])('IPv6 %s is refused by default (an IPv4 address inside it is judged as itself)', (address, why) =>
    expect(defaults('host.example', v6(address))).toMatch(why),
  );

  test.each([v4('140.82.112.3'), v6('2606:50c0:8000::153')])('a public address is allowed: %j', (address) =>
    expect(defaults('github.com', address)).toBeUndefined(),
  );

  test('Outbound:Allow opens a range or a name; Outbound:Deny closes one, and wins over Allow', () => {
    const rules = createOutboundRules({
      allow: ['10.20.0.0/16', 'git.corp.example', '*.intranet.example', '127.0.0.1'],
      deny: ['10.20.99.0/24', '140.82.112.3', 'bad.intranet.example'],
    });
    expect(rules('x.example', v4('10.20.1.2'))).toBeUndefined();
    expect(rules('x.example', v4('10.21.1.2'))).toMatch(/private/);
    expect(rules('git.corp.example', v4('10.99.0.1'))).toBeUndefined();
    expect(rules('GIT.corp.example.', v4('10.99.0.1'))).toBeUndefined();
    expect(rules('a.intranet.example', v4('192.168.0.9'))).toBeUndefined();
    expect(rules('x.example', v4('127.0.0.1'))).toBeUndefined();
    expect(rules('x.example', v4('127.0.0.2'))).toMatch(/loopback/);
    expect(rules('x.example', v4('10.20.99.7'))).toMatch(/Outbound:Deny \(10.20.99.0\/24\)/);
    expect(rules('github.com', v4('140.82.112.3'))).toMatch(/Outbound:Deny/);
    expect(rules('bad.intranet.example', v4('192.168.0.9'))).toMatch(/Outbound:Deny/);
  });

  test.each(['10.0.0.0/8', 'fd00::/8', '192.168.1.1', '::1', '[::1]', 'git.example.com', '*.example.com'])(
    'the rule %s is accepted',
    (rule) => expect(outboundRuleProblem(rule)).toBeUndefined(),
  );
  test.each(['10.0.0.0/33', '10.0.0/8', 'fd00::/129', '10.0.0.0/x', 'http://x', 'a b', '*'])(
    'the rule %s is refused',
    (rule) => expect(outboundRuleProblem(rule)).toEqual(expect.any(String)),
  );
});

describe('connections under the policy (loopback only)', () => {
  let server: Server;
  let port: number;
  const { logger, lines } = capturedLogger('warn');
  beforeAll(async () => {
    // Each answer closes its connection, so every request opens (and checks) a new one.
    server = createServer((req, res) => res.writeHead(200, { connection: 'close' }).end('hello'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  test('a name resolved to an allowed address is fetched', async () => {
    const outbound = testOutbound(logger);
    const answer = await outbound.fetch(new URL(`http://peer.test:${port}/`));
    expect(await answer.text()).toBe('hello');
    await outbound.close();
  });

  test('the metadata address, a private network, an unknown name and a closed port: one neutral error, each reason logged', async () => {
    const outbound = testOutbound(logger);
    const closed = await freePort();
    const failures = await Promise.all(
      [
        `http://metadata.test:${port}/latest/meta-data/`,
        `http://intranet.test:${port}/`,
        `http://nowhere.test:${port}/`,
        `http://127.0.0.1:${closed}/`,
        `http://[::ffff:169.254.169.254]:${port}/`,
      ].map((url) =>
        outbound.fetch(new URL(url)).then(
          () => undefined,
          (error: unknown) => error,
        ),
      ),
    );
    for (const failure of failures) {
      expect(failure).toBeInstanceOf(OutboundRefused);
      expect((failure as Error).message).toBe(OUTBOUND_UNREACHABLE);
    }
    expect((failures as OutboundRefused[]).map((failure) => failure.detail)).toEqual([
      expect.stringMatching(/169.254.169.254 is link-local/),
      expect.stringMatching(/10.0.0.1 is private/),
      expect.stringMatching(/nowhere.test could not be resolved \(ENOTFOUND\)/),
      expect.stringMatching(new RegExp(`127.0.0.1:${closed}: ECONNREFUSED`)),
      expect.stringMatching(/169.254.169.254 is link-local/),
    ]);
    expect(lines.join('')).toContain('outbound connection refused');
    await outbound.close();
  });

  test('every connection is checked on the address it connects to: a name that turns into the metadata address is refused (DNS rebinding)', async () => {
    const answers = ['127.0.0.1', '169.254.169.254'];
    const outbound = createOutbound(
      { allow: ['127.0.0.0/8'], deny: [] },
      { logger, resolve: async () => [v4(answers.shift() ?? '169.254.169.254')] },
    );
    const url = new URL(`http://rebinding.test:${port}/`);
    expect((await outbound.fetch(url)).status).toBe(200);
    await expect(outbound.fetch(url)).rejects.toMatchObject({ detail: expect.stringMatching(/link-local/) });
    await outbound.close();
  });

  describe('the proxy git connects through', () => {
    /** Sends a CONNECT for `target` through the proxy and answers its status line and the socket. */
    function tunnel(proxyUrl: string, target: string, password?: string) {
      const proxy = new URL(proxyUrl);
      const socket = connect(Number(proxy.port), proxy.hostname);
      const auth = password ?? decodeURIComponent(proxy.password);
      socket.write(
        `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n` +
          `Proxy-Authorization: Basic ${Buffer.from(`fleet:${auth}`).toString('base64')}\r\n\r\n`,
      );
      return new Promise<{ status: string; socket: typeof socket }>((resolve) =>
        socket.once('data', (chunk: Buffer) => resolve({ status: chunk.toString().split('\r\n')[0]!, socket })),
      );
    }

    test('a tunnel opens to an allowed name only, for the holder of its password; a refusal is remembered', async () => {
      const outbound = testOutbound(logger);
      await withOutboundProxy(outbound, async (run) => {
        const stranger = await tunnel(run.url, `peer.test:${port}`, 'guessed');
        expect(stranger.status).toBe('HTTP/1.1 407 Proxy Authentication Required');
        stranger.socket.destroy();
        expect(run.failure()).toBeUndefined();

        const allowed = await tunnel(run.url, `peer.test:${port}`);
        expect(allowed.status).toBe('HTTP/1.1 200 Connection Established');
        allowed.socket.write('GET / HTTP/1.1\r\nHost: peer.test\r\n\r\n');
        const answer = await new Promise<string>((resolve) =>
          allowed.socket.once('data', (c: Buffer) => resolve(c.toString())),
        );
        expect(answer).toMatch(/^HTTP\/1.1 200/);
        allowed.socket.destroy();

        const refused = await tunnel(run.url, 'metadata.test:80');
        expect(refused.status).toBe('HTTP/1.1 502 Bad Gateway');
        refused.socket.destroy();
        expect(run.failure()?.detail).toMatch(/169.254.169.254 is link-local/);
      });
      await outbound.close();
    });
  });
});
