/**
 * An api replica in a process of its own, so its CPU and memory are its own (the hub's
 * subscribers of bench/hub.ts, the uploads of bench/hostile-content.ts): the whole app from
 * environment settings, with the hub on its upgrade. Prints `{"port": <port>}` once listening.
 */
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { createApp } from '../api/app';
import { httpServer } from '../api/http/server';
import { createDb } from '../db/connection';
import { loadSettings } from '../platform/settings';

async function main() {
  const settings = loadSettings(process.env);
  const db = createDb(settings.database.url, settings.database.poolMax);
  const app = await createApp({ settings, db, logger: pino({ level: 'warn' }) });
  const server = httpServer(app, settings.errorsBaseUrl);
  server.listen(0, '127.0.0.1', () =>
    process.stdout.write(`${JSON.stringify({ port: (server.address() as AddressInfo).port })}\n`),
  );
  process.on('SIGINT', () => process.exit(0)); // lets --cpu-prof write its profile
}

void main();
