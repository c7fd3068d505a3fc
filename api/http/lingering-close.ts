import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';

/** How long a connection answered before its body was read goes on reading (and dropping) it. */
const LINGER_MS = 2_000;

const lingering = new WeakSet<Socket>();

/**
 * Makes the close after this response a lingering one, as nginx's `lingering_close`. The
 * request's body was left unread (refused before it was needed, or a 413 that stopped
 * reading), so the response says `Connection: close`; Node then closes the socket as soon
 * as the response is sent, and closing a socket whose peer is still sending makes the kernel
 * answer with a reset. A reset can reach the client before it has read the response: it sees
 * "connection reset" instead of our 401 or 413.
 *
 * So from here the rest of the body is read and dropped, and after the response the socket
 * only half-closes: the client reads the response, sees the end, and closes; its own close
 * ends ours. One that goes on sending is cut off LINGER_MS after the response.
 */
export function closeLingering(req: IncomingMessage): void {
  const socket = req.socket as Socket & { destroySoon(): void };
  if (lingering.has(socket)) return;
  lingering.add(socket);
  req.removeAllListeners('data');
  req.resume();
  // Node's server calls destroySoon on a socket whose response said `Connection: close`.
  socket.destroySoon = () => {
    if (socket.writable) socket.end();
    const cutOff = setTimeout(() => socket.destroy(), LINGER_MS).unref();
    socket.once('close', () => clearTimeout(cutOff));
  };
}
