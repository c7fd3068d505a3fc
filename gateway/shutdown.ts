/**
 * Stopping the listener: its WebSocket agents told to go elsewhere and marked offline at once,
 * new connections refused, HTTP requests in flight answered.
 */
import type { Server } from 'node:http';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import type { WebSocket, WebSocketServer } from 'ws';
import type { ListenerContext } from './listener-context';
import { setSessionsOffline } from './status';
import { CLOSE } from './websocket';

/** How long an HTTP request in flight has to finish when the listener stops. */
const HTTP_STRAGGLER_MS = 1000;

/**
 * Close frames go out this many at a time: between slices the event loop turns, so the
 * offline transaction's statements reach Postgres while the rest of the frames are sent.
 */
const GOING_AWAY_SLICE = 500;

/** How long a socket whose close frame cannot leave (a peer that reads nothing) is kept. */
const GOING_AWAY_GRACE_MS = 1000;

/**
 * Agents go at once (1001, going away) and reconnect to another replica: their sockets are
 * let go as soon as the close frame has left, without waiting for their closing handshakes.
 * Their rows are marked offline by one transaction, started first so that Postgres works
 * while the frames go out. New connections are refused; HTTP requests in flight are answered.
 */
export async function closeListener(ctx: ListenerContext, server: Server, wss: WebSocketServer): Promise<void> {
  const { db, logger, sessions } = ctx;
  ctx.stopping = true;
  const serverClosed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const adopted = [...sessions.byAgent.values()].filter((session) => !session.pending);
  for (const session of adopted) ctx.closedByShutdown.add(session.id);
  // After the status writes already under way (one landing later would bring its agent back online).
  const offline = Promise.all([...ctx.statusWrites])
    .then(() =>
      setSessionsOffline(
        db,
        adopted.map((session) => ({ agentId: session.agentId, sessionId: session.id })),
        `websocket closed (${CLOSE.goingAway})`,
      ),
    )
    .catch((error: unknown) => logger.error({ err: error }, 'marking agents offline at shutdown failed'));
  await sayGoingAway([...wss.clients]);
  await offline;
  await Promise.all([...ctx.pending]);
  await sessions.close();
  wss.close();
  // An HTTP request still in flight after the agents are gone has had its time.
  const stragglers = setTimeout(() => server.closeAllConnections(), HTTP_STRAGGLER_MS);
  await serverClosed;
  clearTimeout(stragglers);
}

/**
 * Tells every client 1001 (going away) and lets go of each socket as soon as its close frame
 * has left: the agent has all it needs to reconnect elsewhere, so its closing handshake is
 * not awaited (with 10,000 TLS agents those handshakes took seconds of both cores). A socket
 * whose frame is still queued after GOING_AWAY_GRACE_MS is dropped all the same.
 */
async function sayGoingAway(clients: WebSocket[]): Promise<void> {
  let queued: WebSocket[] = [];
  for (let i = 0; i < clients.length; i += GOING_AWAY_SLICE) {
    const slice = clients.slice(i, i + GOING_AWAY_SLICE);
    for (const ws of slice) ws.close(CLOSE.goingAway, 'server shutting down');
    // A TLS socket reports a write done on the next turn, even when the kernel took it at once.
    await nextTurn();
    queued.push(...dropFlushed(slice));
  }
  const deadline = Date.now() + GOING_AWAY_GRACE_MS;
  while (queued.length > 0 && Date.now() < deadline) {
    await sleep(10);
    queued = dropFlushed(queued);
  }
  for (const ws of queued) ws.terminate();
}

/** Terminates the sockets whose close frame has left (the kernel has it); returns the others. */
function dropFlushed(clients: WebSocket[]): WebSocket[] {
  return clients.filter((ws) => {
    if (ws.bufferedAmount > 0) return true;
    ws.terminate();
    return false;
  });
}
