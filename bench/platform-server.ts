/**
 * The servers measured by bench/platform.ts, in a process of their own: the full app
 * (auth, tenant, audit, ETag, problems) and a bare Koa app that runs the same queries
 * with none of it. Both share one settings object and the same pool size.
 * Prints `{"full": <port>, "bare": <port>}` when listening.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import pino from 'pino';
import { createApp } from '../api/app';
import { loadSettings } from '../platform/settings';
import { createDb } from '../db/connection';
import { listPatsQuery } from '../db/repos/pats';
import { findTenant } from '../db/repos/tenants';

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
