import { startTestApp, type TestApp } from '../support/app';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t?.close());

test('smoke', async () => {
  const admin = await t.token('default.admin');
  const res = await t.call('GET', '/api/tenant', { token: admin });
  expect(res.status).toBe(200);
  const pat = await t.pat('viewer');
  const r2 = await t.call('GET', '/api/tenant', { token: pat });
  expect(r2.status).toBe(200);
});
