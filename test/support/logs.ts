import { Writable } from 'node:stream';
import pino, { type Level, type Logger } from 'pino';

/** A logger whose lines a test reads back (e.g. to prove a secret never reaches the log). */
export function capturedLogger(level: Level = 'trace'): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  return { logger: pino({ level }, sink), lines };
}
