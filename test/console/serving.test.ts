/**
 * The api serves the built console (global setup builds it): files with the right cache
 * headers, index.html for deep links with a strict Content-Security-Policy, and never in
 * place of the server's own paths.
 */
import { readdirSync } from 'node:fs';
import { get as httpGet, type IncomingHttpHeaders } from 'node:http';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import path from 'node:path';
import { CONSOLE_CSP, CONSOLE_DIST, isConsolePath } from '../../api/middleware/console';
import { startTestApp, type TestApp } from '../support/app';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t?.close());

const asset = () => readdirSync(path.join(CONSOLE_DIST, 'assets')).find((name) => name.endsWith('.js'))!;

test('/ and every deep link answer index.html, not cached, with a Content-Security-Policy of this origin only', async () => {
  for (const link of ['/', '/agents', '/agents/9b2f6a55-0000-4000-8000-000000000000?tab=health', '/rollouts']) {
    const res = await t.call('GET', link);
    expect({ link, status: res.status, type: res.headers.get('content-type') }).toEqual({
      link,
      status: 200,
      type: 'text/html; charset=utf-8',
    });
    expect(res.body).toContain('<div id="root"></div>');
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
  }
  expect(CONSOLE_CSP).toContain("script-src 'self'");
  expect(CONSOLE_CSP).toContain("frame-ancestors 'none'");
  expect(CONSOLE_CSP).not.toMatch(/script-src[^;]*unsafe/);
});

test('hashed assets are cached for a year; a missing asset is a 404 problem, not index.html', async () => {
  const res = await t.call('GET', `/assets/${asset()}`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
  expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
  const missing = await t.call('GET', '/assets/index-gone.js');
  expect(missing.status).toBe(404);
  expect(missing.headers.get('content-type')).toMatch(/application\/problem\+json/);
});

/** GET as a browser sends it, `acceptEncoding` as given, the body as it came over the wire (not decoded). */
function onTheWire(pathname: string, acceptEncoding: string): Promise<{ headers: IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const request = httpGet(`${t.baseUrl}${pathname}`, { headers: { 'accept-encoding': acceptEncoding } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
    });
    request.on('error', reject);
  });
}

test('the first load is under 250 KB as a browser gets it: assets precompressed (br, else gzip), each page its own chunk', async () => {
  const index = (await t.call('GET', '/')).body as string;
  const shell = [...index.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((match) => match[1]!);
  // The page a first load opens on (the overview) is a chunk of its own, fetched with it.
  const overview = readdirSync(path.join(CONSOLE_DIST, 'assets')).find((name) => /^Overview-.*\.js$/.test(name));
  expect(overview).toBeDefined();
  let bytes = Buffer.byteLength(index);
  for (const file of [...shell, `/assets/${overview}`]) {
    const { headers, body } = await onTheWire(file, 'gzip, deflate, br');
    expect({ file, encoding: headers['content-encoding'], vary: headers.vary }).toEqual({
      file,
      encoding: 'br',
      vary: 'Accept-Encoding',
    });
    bytes += body.length;
  }
  expect(bytes).toBeLessThan(250 * 1024);
  // No page of another area rides along: the rollouts pages are not named by index.html.
  expect(index).not.toMatch(/Rollout/);

  const script = shell.find((file) => file.endsWith('.js'))!;
  const plain = await onTheWire(script, 'identity');
  expect(plain.headers['content-encoding']).toBeUndefined();
  const gzip = await onTheWire(script, 'gzip');
  expect(gzip.headers['content-encoding']).toBe('gzip');
  expect(gunzipSync(gzip.body).equals(plain.body)).toBe(true);
  const br = await onTheWire(script, 'br');
  expect(brotliDecompressSync(br.body).equals(plain.body)).toBe(true);
  expect(br.body.length).toBeLessThan(plain.body.length / 3);
});

test('paths outside the console’s files never leave its folder', async () => {
  for (const sneaky of ['/../package.json', '/%2e%2e/package.json', '/assets/../../package.json']) {
    const res = await t.call('GET', sneaky);
    expect(String(res.body)).not.toContain('fleet-config-service');
  }
});

test('the server’s own paths are never the console’s: every route, the hub, probes and problem types', async () => {
  for (const route of t.app.routes)
    expect({ path: route.path, console: isConsolePath(route.path) }).toEqual({
      path: route.path,
      console: false,
    });
  expect(isConsolePath('/hubs/live-updates')).toBe(false);
  expect((await t.call('GET', '/API/TENANT')).status).toBe(404);
  expect((await t.call('GET', '/api/no-such-thing')).status).toBe(404);
  expect((await t.call('GET', '/api/no-such-thing')).headers.get('content-type')).toMatch(/problem\+json/);
  expect((await t.call('GET', '/healthz')).status).toBe(200);
  expect((await t.call('GET', '/errors/not-found')).headers.get('content-type')).not.toMatch(/html/);
  expect((await t.call('POST', '/agents')).status).toBe(404);
});

test('without a build, / says how to build the console', async () => {
  const unbuilt = await startTestApp({}, { consoleDist: path.join(CONSOLE_DIST, 'no-such-build') });
  try {
    const res = await unbuilt.call('GET', '/agents');
    expect(res.status).toBe(503);
    expect(res.body).toContain('npm run console:build');
    expect(res.headers.get('cache-control')).toBe('no-store');
  } finally {
    await unbuilt.close();
  }
});
