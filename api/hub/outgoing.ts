/**
 * An event on its way to subscribers, and how its bytes reach their sockets. At 100,000
 * deliveries a second the hub's cost is per delivery, so everything that can be done once
 * per event is: the envelope is serialized, encoded and framed once, and since a server's
 * frames are not masked (RFC 6455 §5.1) every subscriber's socket gets the very same bytes.
 */
import type { Duplex } from 'node:stream';
import WebSocket from 'ws';
import { toCloudEvent, type EventRow } from '../../db/repos/events';
import type { Permission } from '../auth/roles';
import { permissionToReceive } from './event-types';

interface FrameOptions {
  fin: boolean;
  rsv1: boolean;
  opcode: number;
  mask: boolean;
  readOnly: boolean;
}

/** ws's own framing (untyped in @types/ws): the header and the payload of one frame. */
const { Sender } = WebSocket as unknown as { Sender: { frame(data: Buffer, options: FrameOptions): Buffer[] } };

/** A complete, unmasked text frame carrying `text`. */
export function textFrame(text: string): Buffer {
  const options = { fin: true, rsv1: false, opcode: 0x1, mask: false, readOnly: false };
  return Buffer.concat(Sender.frame(Buffer.from(text), options));
}

export class OutgoingEvent {
  private bytes: Buffer | undefined;
  /** What a subscriber needs beyond `read` to receive it (undefined: nothing). */
  readonly needs: Permission | undefined;

  constructor(readonly row: EventRow) {
    this.needs = permissionToReceive(row.type);
  }

  /** Its text frame, built when the first subscriber wants it. */
  get frame(): Buffer {
    return (this.bytes ??= textFrame(JSON.stringify(toCloudEvent(this.row))));
  }
}

/**
 * The TCP socket under a server-side WebSocket, where the hub writes its event frames: ws
 * keeps it as `_socket` and has no public way to write a prepared frame. The hub's server
 * has no compression, so ws's sender never holds frames back and a direct write cannot
 * overtake one of its own (pongs, control replies, the close frame). Throws if ws ever
 * changes that, so an upgrade fails loudly rather than events going nowhere.
 */
export function socketOf(ws: WebSocket): Duplex {
  const socket = (ws as unknown as { _socket?: Duplex })._socket;
  if (!socket || typeof socket.write !== 'function') throw new Error('ws no longer exposes its socket');
  return socket;
}

/** Writes frames in one go: a subscriber's events of one batch leave in one system call. */
export function writeFrames(socket: Duplex, frames: Buffer[]): void {
  if (frames.length === 1) {
    socket.write(frames[0]);
    return;
  }
  socket.cork();
  for (const frame of frames) socket.write(frame);
  socket.uncork();
}
