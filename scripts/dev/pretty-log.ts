/**
 * `npm run dev` prints its children's log lines for people: the processes write pino's JSON
 * lines as in production (platform/logger.ts), and this turns each into
 * `12:04:05 INFO  api     api listening  port=8080`. A line that is not JSON (a crash's
 * stack trace, a tool's own output) is printed as it is, after the process name.
 */

const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const COLORS: Record<string, string> = { WARN: '\x1b[33m', ERROR: '\x1b[31m', FATAL: '\x1b[31m', DEBUG: '\x1b[2m' };
/** Fields the line shows in its own place (or that say nothing to a person at the terminal). */
const SHOWN = new Set(['time', 'level', 'msg', 'service', 'pid', 'hostname', 'err']);
const MAX_VALUE = 120;

export interface PrettyOptions {
  color: boolean;
}

export function formatLogLine(service: string, line: string, options: PrettyOptions): string {
  const record = parseRecord(line);
  const name = service.padEnd(7);
  if (!record) return `${' '.repeat(9)}${' '.repeat(6)}${name} ${line}`;
  const level = LEVELS[Number(record.level)] ?? String(record.level);
  // A message of several lines (webpack's report, say) keeps the fields on its first line.
  const [first, ...more] = text(record.msg).split('\n');
  const head = `${clock(record.time)} ${paint(level.padEnd(5), level, options)} ${name} ${first}`;
  const fields = Object.entries(record)
    .filter(([key]) => !SHOWN.has(key))
    .map(([key, value]) => `${key}=${short(value)}`);
  const body = more.map((line) => `    ${line}`);
  return [fields.length ? `${head}  ${fields.join(' ')}` : head, ...body, ...errorLines(record.err)].join('\n');
}

function parseRecord(line: string): Record<string, unknown> | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const value: unknown = JSON.parse(line);
    return value && typeof value === 'object' && 'level' in value ? value : undefined;
  } catch {
    return undefined;
  }
}

/** Local wall-clock time: the terminal's reader compares it with their own clock. */
function clock(time: unknown): string {
  const date = new Date(typeof time === 'string' || typeof time === 'number' ? time : Date.now());
  return Number.isNaN(date.getTime()) ? '--:--:--' : date.toTimeString().slice(0, 8);
}

function paint(text: string, level: string, options: PrettyOptions): string {
  const color = COLORS[level];
  return options.color && color ? `${color}${text}\x1b[0m` : text;
}

function text(value: unknown): string {
  if (value === undefined) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

function short(value: unknown): string {
  const text = typeof value === 'string' && !/\s/.test(value) ? value : JSON.stringify(value);
  return text.length > MAX_VALUE ? `${text.slice(0, MAX_VALUE - 1)}…` : text;
}

/** An error's stack is what a developer wants under the line, indented. */
function errorLines(err: unknown): string[] {
  if (!err || typeof err !== 'object') return [];
  const { stack, message } = err as { stack?: unknown; message?: unknown };
  return text(typeof stack === 'string' ? stack : (message ?? err))
    .split('\n')
    .map((line) => `    ${line}`);
}
