/**
 * The console subscribes to the live-updates hub with its session cookie (a browser's
 * WebSocket cannot set an Authorization header), but only from a page of our own origin:
 * a cookie goes with a WebSocket any site opens, so another origin is refused
 * (cross-site WebSocket hijacking).
 */
import WebSocket from 'ws';
import { textOf } from '../../api/hub/hub';
import { startTestApp, type TestApp } from '../support/app';
import { browserCall, signInToConsole, type ConsoleBrowser } from '../support/console-sign-in';
import { eventually } from '../support/eventually';

let t: TestApp;
let alice: ConsoleBrowser;
let admin: string;
const sockets: WebSocket[] = [];

beforeAll(async () => {
  t = await startTestApp();
  admin = await t.pat('admin');
  alice = await signInToConsole(t, 'alice');
});
afterAll(async () => {
  for (const socket of sockets) socket.terminate();
  await t?.close();
});

interface Opened {
  socket?: WebSocket;
  refused?: { status: number; problem: any };
}

/** An upgrade as a browser sends it: the cookies, and the Origin of the page that opened it. */
function openHub(headers: Record<string, string>): Promise<Opened> {
  const socket = new WebSocket(`${t.baseUrl.replace('http', 'ws')}/hubs/live-updates`, { headers });
  sockets.push(socket);
  return new Promise((resolve, reject) => {
    socket.once('open', () => resolve({ socket }));
    socket.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ refused: { status: res.statusCode!, problem: JSON.parse(body) } }));
    });
    socket.once('error', reject);
  });
}

const sessionCookie = (browser: ConsoleBrowser) => browser.jar.header();

test('with the session cookie and our own Origin the console subscribes and gets its tenant’s events', async () => {
  const { socket, refused } = await openHub({ cookie: sessionCookie(alice), origin: 'http://fleet.test' });
  expect(refused).toBeUndefined();
  const messages: any[] = [];
  socket!.on('message', (data) => messages.push(JSON.parse(textOf(data))));
  socket!.send(JSON.stringify({ type: 'subscribe', events: ['group.*'] }));
  await eventually(async () => expect(messages.map((m) => m.type)).toContain('subscribed'));
  const created = await t.call('POST', '/api/groups', { token: admin, body: { name: 'live-in-console' } });
  expect(created.status).toBe(201);
  await eventually(async () =>
    expect(messages.find((m) => m.type === 'group.created')).toMatchObject({ subject: created.body.id }),
  );
});

test('the session cookie from another origin, or with no Origin, is refused (403) before any WebSocket exists', async () => {
  for (const origin of ['https://evil.example', 'http://fleet.test.evil.example', 'null']) {
    const { refused } = await openHub({ cookie: sessionCookie(alice), origin });
    expect({ origin, status: refused?.status }).toEqual({ origin, status: 403 });
    expect(refused!.problem).toMatchObject({ status: 403, instance: '/hubs/live-updates' });
  }
  const { refused } = await openHub({ cookie: sessionCookie(alice) });
  expect(refused?.status).toBe(403);
});

test('a bearer token still decides alone (no Origin needed); an ended session is 401', async () => {
  const withToken = await openHub({ authorization: `Bearer ${admin}`, cookie: 'fleet_session=whatever' });
  expect(withToken.socket).toBeDefined();

  const bob = await signInToConsole(t, 'bob');
  expect(
    (await browserCall(t, bob, 'POST', '/api/auth/logout', { headers: { origin: 'http://fleet.test' } })).status,
  ).toBe(200);
  const ended = await openHub({ cookie: sessionCookie(bob), origin: 'http://fleet.test' });
  expect(ended.refused?.status).toBe(401);
  const forged = await openHub({ cookie: 'fleet_session=not-a-session', origin: 'http://fleet.test' });
  expect(forged.refused?.status).toBe(401);
});
