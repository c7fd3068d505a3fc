/**
 * The servers measured by bench/platform.ts, in a process of their own: the full app
 * (auth, tenant, audit, ETag, problems) and a bare Koa app that runs the same queries
 * with none of it. Both share one settings object and the same pool size.
 * Prints `{"full": <port>, "bare": <port>}` when listening.
 *
 * Both run the compiled code the image runs (dist/, `npm run build`; bench:platform builds
 * it first), not the sources through tsx: tsx's transform wraps every function the
 * code creates in a naming helper, a cost per request that production does not pay and
 * that falls on the full app's code only.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import pino from 'pino';
import path from 'node:path';

const DIST = path.join(__dirname, '../dist');
/* eslint-disable @typescript-eslint/no-require-imports -- the compiled modules, typed by their sources */
const { createApp } = require(`${DIST}/api/app`) as typeof import('../api/app');
const { loadSettings } = require(`${DIST}/platform/settings`) as typeof import('../platform/settings');
const { createDb } = require(`${DIST}/db/connection`) as typeof import('../db/connection');
const { listPatsQuery } = require(`${DIST}/db/repos/pats`) as typeof import('../db/repos/pats');
const { findTenant } = require(`${DIST}/db/repos/tenants`) as typeof import('../db/repos/tenants');
/* eslint-enable @typescript-eslint/no-require-imports */

/** `handler`: a Koa app's callback, which settles every request itself (errors go to ctx.onerror). */
function listen(handler: (req: IncomingMessage, res: ServerResponse) => Promise<void>): Promise<number> {
  const server = createServer((req, res) => void handler(req, res));
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

async function main() {
  const settings = loadSettings(process.env);
  const db = createDb(settings.database.url, settings.database.poolMax);
  const app = await createApp({ settings, db, logger: pino({ level: 'silent' }) });

  const bare = new Koa();
  bare.use(async (ctx) => {
    if (ctx.path === '/bare/tenant') {
      ctx.body = await findTenant(db, 'default');
    } else if (ctx.path === '/bare/pats') {
      const query = listPatsQuery(db, 'default', {});
      const [rows, count] = await Promise.all([
        query
          .clone()
          .orderBy([
            { column: 'created_at', order: 'desc' },
            { column: 'id', order: 'desc' },
          ])
          .limit(51),
        query.clone().clearSelect().count({ n: '*' }).first(),
      ]);
      ctx.body = {
        items: rows.slice(0, 50).map(({ token_hash: _hash, ...row }: Record<string, unknown>) => row),
        total: count,
      };
    }
  });

  const ports = { full: await listen(app.koa.callback()), bare: await listen(bare.callback()) };
  process.stdout.write(`${JSON.stringify(ports)}\n`);
  process.on('SIGINT', () => process.exit(0)); // lets --cpu-prof write its profile
}

void main();
