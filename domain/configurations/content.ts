import { createHash } from 'node:crypto';
import { createTwoFilesPatch } from 'diff';
import { isScalar, parseDocument, visit, type Document } from 'yaml';
import { MAX_NESTING, scanJson, scanYaml } from './content-budget';

/** Pure rules for the content of configuration versions: size, syntax, hash and diffs. */

export const FORMATS = ['yaml', 'json', 'text'] as const;
export type Format = (typeof FORMATS)[number];

/** At most 1 MiB, counted in bytes of UTF-8 (what is stored, hashed and pushed). */
export const CONTENT_LIMIT_BYTES = 1_048_576;

export const contentBytes = (content: string): number => Buffer.byteLength(content, 'utf8');

/** sha256 hex of the UTF-8 bytes: the `config_hash` an agent reports back. */
export const contentHash = (content: string): string => createHash('sha256').update(content, 'utf8').digest('hex');

export type Parsed = { ok: true; value: unknown } | { ok: false; message: string };

/** 1-based line and column (in characters) of a string offset. */
export function positionOf(text: string, offset: number): { line: number; col: number } {
  const before = text.slice(0, Math.max(0, Math.min(offset, text.length)));
  const lastBreak = before.lastIndexOf('\n');
  return { line: before.split('\n').length, col: before.length - lastBreak };
}

const at = (pos: { line: number; col: number }, message: string) => `line ${pos.line}, column ${pos.col}: ${message}`;

// Postgres text cannot hold NUL, and a lone surrogate has no UTF-8 form: refuse both, with where.
// eslint-disable-next-line no-control-regex -- matching NUL is the point
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function checkStorable(content: string): string | undefined {
  const found = UNSTORABLE.exec(content);
  if (!found) return undefined;
  const what = found[0] === '\u0000' ? 'a NUL character' : 'an unpaired UTF-16 surrogate';
  return at(positionOf(content, found.index), `${what} cannot be stored`);
}

function parseYaml(content: string): Parsed {
  // uniqueKeys: the parser compares every key with every other of its map (a map of 40,000
  // keys took 13 s); duplicateKey finds the same in one pass.
  const doc = parseDocument(content, { prettyErrors: true, uniqueKeys: false });
  const [error] = doc.errors;
  if (error) {
    const pos = error.linePos?.[0] ?? positionOf(content, error.pos[0]);
    const reason =
      error.code === 'MULTIPLE_DOCS'
        ? 'a configuration holds a single YAML document, but a second one starts here'
        : error.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
    return { ok: false, message: at(pos, `invalid YAML: ${reason}`) };
  }
  const duplicate = duplicateKey(doc);
  if (duplicate !== undefined) {
    return { ok: false, message: at(positionOf(content, duplicate), 'invalid YAML: Map keys must be unique') };
  }
  try {
    return { ok: true, value: doc.toJS() }; // refuses alias bombs (maxAliasCount)
  } catch (e) {
    return { ok: false, message: at({ line: 1, col: 1 }, `invalid YAML: ${(e as Error).message}`) };
  }
}

/** The offset of the first key that repeats one of its map's scalar keys (as the parser compares them). */
function duplicateKey(doc: Document.Parsed): number | undefined {
  let found: number | undefined;
  visit(doc, {
    Map(_, map) {
      const seen = new Set<unknown>();
      for (const { key } of map.items) {
        if (!isScalar(key)) continue;
        if (seen.has(key.value)) {
          found = key.range?.[0] ?? 0;
          return visit.BREAK;
        }
        seen.add(key.value);
      }
      return undefined;
    },
  });
  return found;
}

const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const ESCAPE = /\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})/y;

/**
 * Where JSON text first goes wrong, and why. JSON.parse does not say where on every Node
 * version, so this scanner (iterative: deep nesting cannot overflow it) finds the spot.
 */
export function jsonErrorAt(text: string): { offset: number; reason: string } | undefined {
  let i = 0;
  const stack: string[] = [];
  const skipSpace = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i]!)) i++;
  };
  const string = (): string | undefined => {
    i++; // the opening quote
    for (;;) {
      const c = text[i];
      if (c === undefined) return 'unterminated string';
      if (c === '"') return void i++;
      if (c === '\\') {
        ESCAPE.lastIndex = i;
        if (!ESCAPE.test(text)) return 'invalid escape in string';
        i = ESCAPE.lastIndex;
      } else if (c < ' ') return 'control character in string';
      else i++;
    }
  };
  const key = (): string | undefined => {
    skipSpace();
    if (text[i] !== '"') return 'expected a double-quoted property name';
    const bad = string();
    if (bad) return bad;
    skipSpace();
    if (text[i] !== ':') return "expected ':' after the property name";
    i++;
    return undefined;
  };
  let expectValue = true;
  for (;;) {
    skipSpace();
    const c = text[i];
    let bad: string | undefined;
    if (expectValue) {
      if (c === undefined) return { offset: i, reason: 'unexpected end of input, expected a value' };
      if (c === '{' || c === '[') {
        i++;
        skipSpace();
        if (text[i] === (c === '{' ? '}' : ']')) {
          i++;
          expectValue = false;
          continue;
        }
        stack.push(c);
        if (c === '{') bad = key();
      } else if (c === '"') {
        bad = string();
        expectValue = false;
      } else if (/[-0-9]/.test(c)) {
        NUMBER.lastIndex = i;
        if (!NUMBER.test(text)) bad = 'invalid number';
        else i = NUMBER.lastIndex;
        expectValue = false;
      } else {
        const literal = ['true', 'false', 'null'].find((word) => text.startsWith(word, i));
        if (!literal) bad = `unexpected character ${JSON.stringify(c)}, expected a value`;
        else i += literal.length;
        expectValue = false;
      }
    } else {
      const top = stack[stack.length - 1];
      if (top === undefined)
        return i < text.length ? { offset: i, reason: 'unexpected content after the JSON value' } : undefined;
      const close = top === '{' ? '}' : ']';
      if (c === ',') {
        i++;
        expectValue = true;
        if (top === '{') bad = key();
      } else if (c === close) {
        stack.pop();
        i++;
      } else {
        bad = c === undefined ? `unexpected end of input, expected ',' or '${close}'` : `expected ',' or '${close}'`;
      }
    }
    if (bad) return { offset: i, reason: bad };
  }
}

function parseJson(content: string): Parsed {
  try {
    return { ok: true, value: JSON.parse(content) };
  } catch (e) {
    const found = jsonErrorAt(content) ?? { offset: 0, reason: (e as Error).message };
    return { ok: false, message: at(positionOf(content, found.offset), `invalid JSON: ${found.reason}`) };
  }
}

/** How deep arrays and objects nest, counted without recursion (aliases can nest deeper than the text). */
function nestingDepth(root: unknown): number {
  let deepest = 0;
  const stack: Array<[unknown, number]> = [[root, 0]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop()!;
    if (typeof value !== 'object' || value === null) continue;
    deepest = Math.max(deepest, depth + 1);
    if (deepest > MAX_NESTING) return deepest;
    for (const child of Object.values(value)) stack.push([child, depth + 1]);
  }
  return deepest;
}

/**
 * Parses content in its format; the message of a refusal names line and column. A document
 * over the parsing budget (content-budget.ts) is refused before it is parsed.
 */
export function parseContent(format: Format, content: string): Parsed {
  const unstorable = checkStorable(content);
  if (unstorable) return { ok: false, message: unstorable };
  if (format === 'text') return { ok: true, value: content };
  const name = format === 'yaml' ? 'YAML' : 'JSON';
  const excess = format === 'yaml' ? scanYaml(content) : scanJson(content);
  if (excess)
    return { ok: false, message: at(positionOf(content, excess.offset), `invalid ${name}: ${excess.reason}`) };
  const parsed = format === 'yaml' ? parseYaml(content) : parseJson(content);
  if (parsed.ok && nestingDepth(parsed.value) > MAX_NESTING) {
    return { ok: false, message: `invalid ${name}: nested deeper than ${MAX_NESTING} levels` };
  }
  return parsed;
}

/** Why `content` cannot be a version of a configuration in `format` (undefined: it can). */
export function contentProblem(format: Format, content: string): string | undefined {
  const parsed = parseContent(format, content);
  return parsed.ok ? undefined : parsed.message;
}

export interface KeyChange {
  op: 'added' | 'removed' | 'changed';
  /** `a.b[0].c`; keys that are not plain identifiers are quoted (`a["x.y"]`); the root is `''`. */
  path: string;
  from?: unknown;
  to?: unknown;
}

const PLAIN_KEY = /^[A-Za-z_$][A-Za-z0-9_$-]*$/;

function childPath(parent: string, key: string | number): string {
  if (typeof key === 'number') return `${parent}[${key}]`;
  if (PLAIN_KEY.test(key)) return parent === '' ? key : `${parent}.${key}`;
  return `${parent}[${JSON.stringify(key)}]`;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function walk(from: unknown, to: unknown, path: string, out: KeyChange[]): void {
  if (Array.isArray(from) && Array.isArray(to)) {
    // by index: an element inserted at the front shows as changes down the list
    const common = Math.min(from.length, to.length);
    for (let i = 0; i < common; i++) walk(from[i], to[i], childPath(path, i), out);
    for (let i = common; i < from.length; i++) out.push({ op: 'removed', path: childPath(path, i), from: from[i] });
    for (let i = common; i < to.length; i++) out.push({ op: 'added', path: childPath(path, i), to: to[i] });
  } else if (isObject(from) && isObject(to)) {
    for (const key of Object.keys(from)) {
      if (Object.hasOwn(to, key)) walk(from[key], to[key], childPath(path, key), out);
      else out.push({ op: 'removed', path: childPath(path, key), from: from[key] });
    }
    for (const key of Object.keys(to)) {
      if (!Object.hasOwn(from, key)) out.push({ op: 'added', path: childPath(path, key), to: to[key] });
    }
  } else if (!Object.is(from, to)) {
    out.push({ op: 'changed', path, from, to });
  }
}

/** Key-level changes from one parsed document to another, in document order. */
export function keyDiff(from: unknown, to: unknown): KeyChange[] {
  const out: KeyChange[] = [];
  walk(from, to, '', out);
  return out;
}

/** Long enough for any realistic edit; a pathological pair falls back to a full replacement. */
const DIFF_TIMEOUT_MS = 1000;

const linesOf = (text: string) => (text === '' ? [] : text.replace(/\n$/, '').split('\n'));

/** A valid unified diff that removes every old line and adds every new one. */
function replacementPatch(oldName: string, newName: string, a: string, b: string): string {
  const [old, next] = [linesOf(a), linesOf(b)];
  const range = (n: number) => (n === 0 ? '0,0' : `1,${n}`);
  const body = (lines: string[], sign: string, text: string) =>
    lines.map((l) => `${sign}${l}\n`).join('') +
    (lines.length > 0 && !text.endsWith('\n') ? '\\ No newline at end of file\n' : '');
  return (
    `===================================================================\n--- ${oldName}\n+++ ${newName}\n` +
    `@@ -${range(old.length)} +${range(next.length)} @@\n${body(old, '-', a)}${body(next, '+', b)}`
  );
}

/** Unified diff of two contents; `name` labels the file in the headers. */
export function unifiedDiff(
  name: string,
  from: { version: number; content: string },
  to: { version: number; content: string },
): string {
  return diffOf(
    { path: `a/${name}`, header: `version ${from.version}`, content: from.content },
    { path: `b/${name}`, header: `version ${to.version}`, content: to.content },
  );
}

/** Unified diff of two texts, each labelled by a path and a header (`--- a/name\tversion 1`). */
export function diffOf(
  from: { path: string; header: string; content: string },
  to: { path: string; header: string; content: string },
): string {
  const patch = createTwoFilesPatch(from.path, to.path, from.content, to.content, from.header, to.header, {
    timeout: DIFF_TIMEOUT_MS,
  });
  return (
    patch ?? replacementPatch(`${from.path}\t${from.header}`, `${to.path}\t${to.header}`, from.content, to.content)
  );
}

export interface Comparison {
  unifiedDiff: string;
  /** Key-level changes, for YAML and JSON whose both versions parse; else null. */
  changes: KeyChange[] | null;
}

/** What changed from one version to another (`name` labels the file in the diff's headers). */
export function compareContents(
  name: string,
  format: Format,
  from: { version: number; content: string },
  to: { version: number; content: string },
): Comparison {
  let changes: KeyChange[] | null = null;
  if (format !== 'text') {
    const [a, b] = [parseContent(format, from.content), parseContent(format, to.content)];
    // stored versions were checked when saved; one that no longer parses has no key-level diff
    changes = a.ok && b.ok ? keyDiff(a.value, b.value) : null;
  }
  return { unifiedDiff: unifiedDiff(name, from, to), changes };
}
