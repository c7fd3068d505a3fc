/** The hub's heartbeat: a peer that stops answering pings (dead, or half-open) is dropped. */
import WebSocket from 'ws';
import { LiveUpdatesClient } from '../../scripts/live-updates/client';
import { startTestApp, type TestApp } from '../support/app';
import { eventually } from '../support/eventually';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ Events__HeartbeatSeconds: '1' });
});
afterAll(() => t?.close());

test('a subscriber that does not answer pings is dropped; one that does stays', async () => {
  const token = await t.pat('viewer');
  const alive = await LiveUpdatesClient.connect(t.baseUrl, token);
  // A peer whose pongs never come, as a dead one's would not.
  const silent = new WebSocket(`${t.baseUrl.replace('http', 'ws')}/hubs/live-updates`, {
    headers: { authorization: `Bearer ${token}` },
    autoPong: false,
  });
  const closed = new Promise<number>((resolve) => silent.on('close', resolve));
  await new Promise((resolve) => silent.once('open', resolve));
  await eventually(async () => expect(t.app.liveSubscribers()).toBe(2));

  expect(await closed).toBe(1006); // terminated, no closing handshake
  await eventually(async () => expect(t.app.liveSubscribers()).toBe(1));
  expect(await alive.ping()).toEqual({ type: 'pong' });
  await alive.close();
});
