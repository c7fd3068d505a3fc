/**
 * Checking and comparing contents as the api and the worker do it: a content of more than a
 * few KiB is parsed on a thread of the parsing pool, never on the event loop (a 1 MiB YAML
 * document is a second of CPU for the parser), and the pool's limits bound what all of them
 * cost at once. docs/decisions.md, Parsing budget.
 */
import { createThreadPool, TaskTooCostly, type ThreadPool } from '../../platform/thread-pool';
import { compareContents, contentProblem, type Comparison, type Format } from './content';
import {
  diffWithDesired,
  keptEffectiveConfig,
  type KeptEffectiveConfig,
  type KeptFile,
  type ReportedFile,
} from '../effective-config';

/** Below this many characters a content is parsed where it is (a few ms at most). */
const INLINE_CHARS = 16 * 1024;

/** What one parse may spend: far more than any real configuration of 1 MiB needs. */
export const PARSE_BUDGET = { timeoutMs: 10_000, heapMb: 256 };

/** Parses waiting for a thread; beyond this a check fails at once (ThreadPoolBusy: 503, retry). */
const MAX_WAITING = 64;

const CONTENT_MODULE = require.resolve('./content');
const EFFECTIVE_CONFIG_MODULE = require.resolve('../effective-config');

let pool: ThreadPool | undefined;
const threads = () => (pool ??= createThreadPool({ ...PARSE_BUDGET, maxQueued: MAX_WAITING }));

const overBudget = (error: TaskTooCostly) =>
  `could not be parsed within the parsing budget (${PARSE_BUDGET.timeoutMs / 1000} s, ` +
  `${PARSE_BUDGET.heapMb} MB; the ${error.limit === 'time' ? 'time' : 'memory'} ran out): simplify the document`;

/** Why `content` cannot be a version in `format` (undefined: it can). Throws ThreadPoolBusy when every thread is taken. */
export async function checkContent(format: Format, content: string): Promise<string | undefined> {
  if (format === 'text' || content.length < INLINE_CHARS) return contentProblem(format, content);
  try {
    return await threads().run<string | undefined>(CONTENT_MODULE, 'contentProblem', [format, content]);
  } catch (error) {
    if (error instanceof TaskTooCostly) return overBudget(error);
    throw error;
  }
}

/**
 * compareContents, on a thread when the versions are large. Throws ThreadPoolBusy, or
 * TaskTooCostly for a pair beyond the budget (stored versions are within it, so this is
 * not expected).
 */
export async function compareVersions(
  name: string,
  format: Format,
  from: { version: number; content: string },
  to: { version: number; content: string },
): Promise<Comparison> {
  const pair = [
    { version: from.version, content: from.content },
    { version: to.version, content: to.content },
  ];
  if (from.content.length + to.content.length < INLINE_CHARS) return compareContents(name, format, from, to);
  return threads().run<Comparison>(CONTENT_MODULE, 'compareContents', [name, format, ...pair]);
}

/**
 * keptEffectiveConfig (an agent's reported configuration, redacted), on a thread when it is
 * large. One beyond the parsing budget is kept as names and sizes only. Throws ThreadPoolBusy.
 */
export async function keepReportedConfig(files: ReportedFile[]): Promise<KeptEffectiveConfig> {
  const bytes = files.reduce((sum, file) => sum + file.body.byteLength, 0);
  if (bytes < INLINE_CHARS) return keptEffectiveConfig(files);
  try {
    return await threads().run<KeptEffectiveConfig>(EFFECTIVE_CONFIG_MODULE, 'keptEffectiveConfig', [files]);
  } catch (error) {
    if (!(error instanceof TaskTooCostly)) throw error;
    const sizes = files.map(({ name, contentType, body }) => ({
      name,
      contentType,
      bytes: body.byteLength,
      content: null,
    }));
    return { files: sizes, kept: false, redacted: 0 };
  }
}

/** diffWithDesired, on a thread when the contents are large. Throws ThreadPoolBusy. */
export async function diffEffectiveWithDesired(
  desired: Parameters<typeof diffWithDesired>[0],
  file: KeptFile & { content: string },
): Promise<string> {
  if (desired.content.length + file.content.length < INLINE_CHARS) return diffWithDesired(desired, file);
  return threads().run<string>(EFFECTIVE_CONFIG_MODULE, 'diffWithDesired', [desired, file]);
}

/** Ends the parsing threads (a process that stops, a test file's end). */
export async function closeContentThreads(): Promise<void> {
  await pool?.close();
  pool = undefined;
}
