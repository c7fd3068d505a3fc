/**
 * One rule for the text of a request: every string is valid Unicode. Bytes that are not
 * UTF-8 (`FF FE`, an overlong `C0 AF`, an encoded surrogate `ED A0 80`) and a lone UTF-16
 * surrogate (a JSON escape `\ud800` with no pair) are refused, naming the field, rather than
 * stored as U+FFFD: two different byte strings would become one, and a hash or a signature
 * over the stored text would not be one over what was sent.
 */
import type { FieldError } from '../problems';

const NOT_UTF8 = 'must be valid UTF-8';
const NO_NUL = 'must not contain NUL (\\u0000)';

/** The document's statement of NO_NUL, on every string query parameter. */
export const WITHOUT_NUL = { not: { pattern: '\\u0000' } };
const LONE_SURROGATE = 'must not contain a lone UTF-16 surrogate (\\ud800-\\udfff without its pair)';

/** The offset of the first byte that does not begin a valid UTF-8 sequence (-1: all valid). */
export function firstInvalidUtf8(bytes: Uint8Array): number {
  for (let i = 0; i < bytes.length;) {
    const b = bytes[i]!;
    if (b < 0x80) {
      i++;
      continue;
    }
    // The second byte's range, and how many continuation bytes follow it (RFC 3629, table 3-7).
    let low = 0x80;
    let high = 0xbf;
    let length: number;
    if (b >= 0xc2 && b <= 0xdf) length = 2;
    else if (b >= 0xe0 && b <= 0xef) {
      length = 3;
      if (b === 0xe0) low = 0xa0; // no overlong forms
      if (b === 0xed) high = 0x9f; // no surrogates
    } else if (b >= 0xf0 && b <= 0xf4) {
      length = 4;
      if (b === 0xf0) low = 0x90;
      if (b === 0xf4) high = 0x8f; // nothing above U+10FFFF
    } else return i;
    const second = bytes[i + 1];
    if (second === undefined || second < low || second > high) return i;
    for (let k = 2; k < length; k++) {
      const next = bytes[i + k];
      if (next === undefined || next < 0x80 || next > 0xbf) return i;
    }
    i += length;
  }
  return -1;
}

interface Frame {
  array: boolean;
  /** An object's member being read (its name once read), or an array's index. */
  at: string | number;
  expectName: boolean;
}

/** Where in a JSON document its text `prefix` ends: the member path, and whether inside a member's name. */
export function jsonPathAt(prefix: string): { path: string[]; inName: boolean } {
  const stack: Frame[] = [];
  let inString = false;
  let isName = false;
  let text = '';
  for (let i = 0; i < prefix.length; i++) {
    const c = prefix[i]!;
    const top = stack[stack.length - 1];
    if (inString) {
      if (c === '\\') {
        text += prefix[++i] ?? '';
      } else if (c === '"') {
        inString = false;
        if (isName && top) top.at = text;
      } else text += c;
      continue;
    }
    if (c === '"') {
      inString = true;
      isName = top !== undefined && !top.array && top.expectName;
      text = '';
    } else if (c === '{' || c === '[') {
      stack.push({ array: c === '[', at: c === '[' ? 0 : '', expectName: c === '{' });
    } else if (c === '}' || c === ']') {
      stack.pop();
    } else if (c === ':' && top && !top.array) {
      top.expectName = false;
    } else if (c === ',' && top) {
      if (top.array) top.at = Number(top.at) + 1;
      else top.expectName = true;
    }
  }
  const inName = inString && isName;
  const frames = inName ? stack.slice(0, -1) : stack;
  return { path: frames.map((frame) => String(frame.at)), inName };
}

/** The field of the first invalid byte of a JSON body, as the route's errors name fields. */
export function invalidUtf8Field(body: Buffer, offset: number): FieldError {
  const { path, inName } = jsonPathAt(body.subarray(0, offset).toString('utf8'));
  return { path: ['body', ...path].join('.'), message: inName ? `a member name ${NOT_UTF8}` : NOT_UTF8 };
}

/** Escapes that may stand for half of a surrogate pair: only then is the parsed body walked. */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;

/** The first string (or member name) of a parsed JSON body that holds a lone surrogate. */
export function loneSurrogateField(text: string, body: unknown): FieldError | undefined {
  if (!SURROGATE_ESCAPE.test(text)) return undefined;
  const stack: Array<[unknown, string[]]> = [[body, ['body']]];
  while (stack.length > 0) {
    const [value, path] = stack.pop()!;
    if (typeof value === 'string') {
      if (!value.isWellFormed()) return { path: path.join('.'), message: LONE_SURROGATE };
    } else if (typeof value === 'object' && value !== null) {
      const entries = Object.entries(value as Record<string, unknown>);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [name, member] = entries[i]!;
        if (!name.isWellFormed()) return { path: path.join('.'), message: `a member name ${LONE_SURROGATE}` };
        stack.push([member, [...path, name]]);
      }
    }
  }
  return undefined;
}

/**
 * The query string's parameters that are not percent-encoded UTF-8 (`%FF`, `%ED%A0%80`):
 * decoded, they would silently become U+FFFD. And those holding NUL (`%00`): no text the
 * service keeps can hold one (Postgres text cannot), so a filter with it is a mistake.
 */
export function invalidQueryFields(querystring: string): FieldError[] {
  const errors: FieldError[] = [];
  for (const pair of querystring.split('&')) {
    const equals = pair.indexOf('=');
    const [name, value] = equals < 0 ? [pair, ''] : [pair.slice(0, equals), pair.slice(equals + 1)];
    const decoded = [name, value].map((part) => {
      try {
        // A `%` that starts no escape is a literal `%` (as URLSearchParams reads it): only bytes count.
        return decodeURIComponent(part.replace(/\+/g, ' ').replace(/%(?![0-9a-fA-F]{2})/g, '%25'));
      } catch {
        return undefined;
      }
    });
    if (decoded[0] === undefined) errors.push({ path: 'query', message: `a parameter name ${NOT_UTF8}` });
    else if (decoded[1] === undefined) errors.push({ path: `query.${decoded[0]}`, message: NOT_UTF8 });
    else if (decoded[1].includes('\u0000')) errors.push({ path: `query.${decoded[0]}`, message: NO_NUL });
  }
  return errors;
}
