/**
 * What an agent reports running (OpAMP `effective_config`), kept so an operator can compare
 * it with what it should run: bounded in size, and with secrets redacted by one rule before
 * it is stored. The same rule redacts the desired configuration before the two are compared,
 * so a secret never shows as a difference, nor at all. Pure functions (the gateway runs large
 * ones on the parsing threads). docs/agent-gateway.md, "Effective configuration".
 */
import { isScalar, parseDocument, visit } from 'yaml';
import { diffOf, type Format } from './configurations/content';

export const REDACTED = '<redacted>';

/** Kept up to this many bytes over all files; a larger one is kept as names and sizes only. */
export const EFFECTIVE_CONFIG_MAX_BYTES = 256 * 1024;

/** Words that make a key's value a secret (compared without case, `-`, `_` or `.`). */
const SECRET_WORDS = [
  'password',
  'passwd',
  'passphrase',
  'secret',
  'token',
  'apikey',
  'privatekey',
  'credential',
  'authorization',
  'bearer',
  'cookie',
];
/** …unless the key names where the secret is, not the secret: `token_url`, `key_file`, `password_file`. */
const NOT_THE_SECRET = /(url|uri|endpoint|file|path|type|name)$/;

export function isSecretKey(key: string): boolean {
  const word = key.toLowerCase().replace(/[^a-z]/g, '');
  return SECRET_WORDS.some((secret) => word.includes(secret)) && !NOT_THE_SECRET.test(word);
}

/** `${env:TOKEN}` and `${TOKEN}` name a secret kept elsewhere: shown as they are. */
const REFERENCE = /^\$\{[^}]+\}$/;

/** `scheme://user:password@host`: the password goes. */
const URL_PASSWORD = /\b([a-z][a-z0-9+.-]*:\/\/[^\s/:@]+:)([^\s/@]+)@/gi;

const redactUrls = (value: string) => value.replace(URL_PASSWORD, `$1${REDACTED}@`);

export interface Redacted {
  content: string;
  /** How many values the rule replaced. */
  redacted: number;
}

function redactYaml(content: string): Redacted | undefined {
  const doc = parseDocument(content, { uniqueKeys: false });
  if (doc.errors.length > 0) return undefined;
  let redacted = 0;
  visit(doc, {
    Pair(_, pair) {
      if (!isScalar(pair.key) || !isScalar(pair.value)) return;
      const value = pair.value.value;
      if (value === null || value === REDACTED || (typeof value === 'string' && REFERENCE.test(value))) return;
      if (!isSecretKey(String(pair.key.value))) return;
      pair.value.value = REDACTED;
      redacted++;
    },
    Scalar(_, node) {
      if (typeof node.value !== 'string' || node.value === REDACTED) return;
      const value = redactUrls(node.value);
      if (value !== node.value) {
        node.value = value;
        redacted++;
      }
    },
  });
  // Untouched, the text stays as written (a comparison with the desired one shows no reformatting).
  return { content: redacted > 0 ? String(doc) : content, redacted };
}

function redactJsonValue(value: unknown, count: { n: number }, key?: string): unknown {
  if (Array.isArray(value)) return value.map((item) => redactJsonValue(item, count));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([name, inner]) => [name, redactJsonValue(inner, count, name)]),
    );
  }
  if (
    key !== undefined &&
    isSecretKey(key) &&
    value !== null &&
    !(typeof value === 'string' && REFERENCE.test(value))
  ) {
    count.n++;
    return REDACTED;
  }
  if (typeof value === 'string') {
    const redacted = redactUrls(value);
    if (redacted !== value) count.n++;
    return redacted;
  }
  return value;
}

function redactJson(content: string): Redacted | undefined {
  let value: unknown;
  try {
    value = JSON.parse(content);
  } catch {
    return undefined;
  }
  const count = { n: 0 };
  const redacted = redactJsonValue(value, count);
  return { content: count.n > 0 ? JSON.stringify(redacted, null, 2) : content, redacted: count.n };
}

/** `key: value` and `key=value` lines (any text: a .env, an INI, YAML that does not parse). */
const ASSIGNMENT = /^(\s*["']?)([\w.-]+)(["']?\s*[:=]\s*)(\S.*)$/;

function redactText(content: string): Redacted {
  let redacted = 0;
  const lines = content.split('\n').map((line) => {
    const assignment = ASSIGNMENT.exec(line);
    if (assignment && isSecretKey(assignment[2]!) && !REFERENCE.test(assignment[4]!.trim())) {
      redacted++;
      return `${assignment[1]}${assignment[2]}${assignment[3]}${REDACTED}`;
    }
    const withoutPasswords = redactUrls(line);
    if (withoutPasswords !== line) redacted++;
    return withoutPasswords;
  });
  return { content: redacted > 0 ? lines.join('\n') : content, redacted };
}

/** `content` with its secrets replaced by `<redacted>`: by its format, or line by line when it does not parse. */
export function redactSecrets(format: Format, content: string): Redacted {
  const structured = format === 'yaml' ? redactYaml(content) : format === 'json' ? redactJson(content) : undefined;
  return structured ?? redactText(content);
}

/** The format an effective configuration file is in, from its content type (the desired one's when it names none). */
export function formatOfFile(contentType: string, fallback: Format = 'text'): Format {
  const type = contentType.toLowerCase();
  if (type.includes('json')) return 'json';
  if (type.includes('yaml') || type.includes('yml')) return 'yaml';
  return type ? 'text' : fallback;
}

export interface ReportedFile {
  name: string;
  contentType: string;
  body: Uint8Array;
}

export interface KeptFile {
  name: string;
  contentType: string;
  bytes: number;
  /** Redacted; null when the configuration was too large to keep. */
  content: string | null;
}

export interface KeptEffectiveConfig {
  files: KeptFile[];
  /** False: larger than EFFECTIVE_CONFIG_MAX_BYTES, kept as names and sizes only. */
  kept: boolean;
  redacted: number;
}

/** What is kept of a reported configuration map: each file redacted, by name, within the bound. */
export function keptEffectiveConfig(files: ReportedFile[]): KeptEffectiveConfig {
  const sorted = [...files].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const total = sorted.reduce((sum, file) => sum + file.body.byteLength, 0);
  if (total > EFFECTIVE_CONFIG_MAX_BYTES) {
    const sizes = sorted.map((file) => ({
      name: file.name,
      contentType: file.contentType,
      bytes: file.body.byteLength,
    }));
    return { files: sizes.map((file) => ({ ...file, content: null })), kept: false, redacted: 0 };
  }
  let redacted = 0;
  const kept = sorted.map((file) => {
    // Text as UTF-8; what is not valid UTF-8 keeps U+FFFD in its place, NUL too (Postgres cannot hold it).
    const text = Buffer.from(file.body).toString('utf8').replaceAll('\u0000', '\uFFFD');
    const result = redactSecrets(formatOfFile(file.contentType), text);
    redacted += result.redacted;
    return { name: file.name, contentType: file.contentType, bytes: file.body.byteLength, content: result.content };
  });
  return { files: kept, kept: true, redacted };
}

/**
 * The reported file an agent runs of its desired configuration: the one named as the
 * configuration (the name a push gives it), else the only one; none when several others.
 */
export function fileOfDesired(files: KeptFile[], configurationName: string): KeptFile | undefined {
  return files.find((file) => file.name === configurationName) ?? (files.length === 1 ? files[0] : undefined);
}

/**
 * The desired version against what the agent reports running, both redacted by the same
 * rule (the reported file by its content type, else the configuration's format): a unified
 * diff from `desired/<name>` to `effective/<file>`, empty when they are the same.
 */
export function diffWithDesired(
  desired: { name: string; format: Format; version: number; content: string },
  file: KeptFile & { content: string },
): string {
  const format = formatOfFile(file.contentType, desired.format);
  const expected = redactSecrets(format, desired.content).content;
  if (expected === file.content) return '';
  return diffOf(
    { path: `desired/${desired.name}`, header: `version ${desired.version}`, content: expected },
    { path: `effective/${file.name}`, header: 'reported', content: file.content },
  );
}
