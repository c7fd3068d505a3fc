import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FleetApp } from '../app';
import { endWithProblem } from '../middleware/problems';
import { Problem } from '../problems';

/** The request line of a request Node could not read, as far as it got (for the problem's `instance`). */
function pathOf(error: { rawPacket?: unknown }): string {
  const raw = Buffer.isBuffer(error.rawPacket) ? error.rawPacket.toString('latin1', 0, 4096) : '';
  const target = /^[A-Z]+ (\/[^ ?\r\n]*)/.exec(raw)?.[1];
  return target ? target.slice(0, 1024) : '/';
}

/**
 * The HTTP server of an app (not listening): its requests, the hub's upgrades, and requests
 * Node cannot read, which get a problem document rather than Node's bare status line: 431
 * for a request line and headers over 16 KiB (Node's limit), 400 for anything else malformed.
 */
export function httpServer(app: FleetApp, errorsBaseUrl: string): Server {
  // Koa's handler settles every request itself (errors go to ctx.onerror): its promise never rejects.
  const handle = app.koa.callback();
  const server = createServer((req, res) => void handle(req, res));
  server.on('upgrade', (req, socket, head) => app.upgrade(req, socket, head)); // the live-updates hub
  server.on('clientError', (error: NodeJS.ErrnoException & { rawPacket?: unknown }, socket: Duplex) => {
    if (!socket.writable || error.code === 'ECONNRESET') {
      socket.destroy();
      return;
    }
    const problem =
      error.code === 'HPE_HEADER_OVERFLOW'
        ? new Problem('headers-too-large', 'The request line and headers are over 16 KiB.')
        : new Problem('bad-request', 'The request is not well-formed HTTP.');
    endWithProblem(socket, problem, { errorsBaseUrl, instance: pathOf(error), requestId: randomUUID() });
  });
  return server;
}
