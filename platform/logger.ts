import pino, { type Logger } from 'pino';
import type { Settings } from './settings';

/** JSON lines on stdout. Headers are never logged; the redaction is a second guard. */
export function createLogger(settings: Pick<Settings, 'logLevel'>, service: string): Logger {
  return pino({
    level: settings.logLevel,
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: ['req.headers.authorization', 'headers.authorization', 'token', '*.token', 'password', '*.password'],
  });
}
