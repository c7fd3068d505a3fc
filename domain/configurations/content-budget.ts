/**
 * What a configuration may cost to parse, judged by one linear pass over the text before
 * any parser builds a tree of it. A parser's cost follows the document's structure, not
 * its size: 600 KB of nested `[` cost the YAML parser a second and 150 MB, and 100,000
 * aliases 400 ms before its own alias guard fired. The scan counts what drives that cost,
 * nesting and anchors/aliases, and a document over a limit is refused saying where.
 * docs/decisions.md, Parsing budget.
 */

/** Deeper documents are refused: no real configuration nests this far. */
export const MAX_NESTING = 256;
/** Anchors (`&name`) a YAML document may define, and aliases (`*name`) it may use. */
export const MAX_ANCHORS = 1000;
export const MAX_ALIASES = 1000;

/** Why the text is over the budget, where (offset) and in what words; undefined when it is within. */
export type BudgetExcess = { offset: number; reason: string } | undefined;

const deeper = (offset: number): BudgetExcess => ({ offset, reason: `nested deeper than ${MAX_NESTING} levels` });

/** JSON: the depth of `[` and `{` outside strings. */
export function scanJson(text: string): BudgetExcess {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      for (i++; i < text.length && text.charCodeAt(i) !== 0x22; i++) if (text.charCodeAt(i) === 0x5c) i++;
    } else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      if (++depth > MAX_NESTING) return deeper(i);
    } else if ((c === 0x5d /* ] */ || c === 0x7d) /* } */ && depth > 0) {
      depth--;
    }
  }
  return undefined;
}

const isBlank = (c: string | undefined) => c === undefined || c === ' ' || c === '\t' || c === '\n' || c === '\r';
/** Characters after which a node may start on the same line. */
const NODE_START_AFTER = new Set(['-', '?', ':', '[', '{', ',']);

/**
 * YAML: an upper bound of the nesting (block levels by indentation, with the `- ` and `? `
 * that open a level on the same line counted, plus the depth of flow collections) and the
 * anchors and aliases, outside comments and quoted and block scalars. The bound may count a
 * level twice (a sequence at its parent key's indentation), never none: a real document is
 * far within it, a hostile one is refused before it is parsed.
 */
export function scanYaml(text: string): BudgetExcess {
  let anchors = 0;
  let aliases = 0;
  let flow = 0;
  /** Indentations of the block levels open at the current line. */
  const indents: number[] = [];
  /** A block scalar's lines are those indented deeper than this (-1: not in one). */
  let blockScalarParent = -1;
  let i = 0;
  while (i < text.length) {
    // A line: its indentation first.
    const lineStart = i;
    while (text[i] === ' ') i++;
    const indent = i - lineStart;
    const first = text[i];
    const blankLine = first === '\n' || first === '\r' || first === undefined || first === '#';
    if (blockScalarParent >= 0) {
      if (blankLine || indent > blockScalarParent) {
        i = text.indexOf('\n', i) + 1 || text.length;
        continue;
      }
      blockScalarParent = -1;
    }
    if (!blankLine && flow === 0) {
      while (indents.length > 0 && indents[indents.length - 1]! >= indent) indents.pop();
      indents.push(indent);
      if (blockDepth(indents) > MAX_NESTING) return deeper(i);
    }
    let compact = 0;
    let previous = ''; // the last character that was not blank, on this line
    let atNodeStart = true;
    for (; i < text.length && text[i] !== '\n'; i++) {
      const c = text[i]!;
      if (c === ' ' || c === '\t' || c === '\r') continue;
      const nodeStart = atNodeStart || NODE_START_AFTER.has(previous);
      if (c === '#' && (i === lineStart || isBlank(text[i - 1]))) {
        i = text.indexOf('\n', i);
        if (i < 0) i = text.length;
        break;
      }
      if ((c === '"' || c === "'") && nodeStart) {
        i = endOfQuoted(text, i, c);
        previous = c;
        atNodeStart = false;
        continue;
      }
      if ((c === '-' || c === '?') && isBlank(text[i + 1]) && atNodeStart && flow === 0) {
        compact++;
        if (blockDepth(indents) + compact + flow > MAX_NESTING) return deeper(i);
        previous = c;
        continue;
      }
      if (
        (c === '|' || c === '>') &&
        nodeStart &&
        flow === 0 &&
        /^[|>][-+0-9]*[ \t]*(#.*)?\r?$/.test(restOfLine(text, i))
      ) {
        blockScalarParent = indent;
        i = text.indexOf('\n', i);
        if (i < 0) i = text.length;
        break;
      }
      if ((c === '&' || c === '*') && nodeStart && !isBlank(text[i + 1])) {
        if (c === '&' && ++anchors > MAX_ANCHORS) return { offset: i, reason: `more than ${MAX_ANCHORS} anchors` };
        if (c === '*' && ++aliases > MAX_ALIASES) return { offset: i, reason: `more than ${MAX_ALIASES} aliases` };
      } else if ((c === '[' || c === '{') && (nodeStart || flow > 0)) {
        flow++;
        if (blockDepth(indents) + compact + flow > MAX_NESTING) return deeper(i);
      } else if ((c === ']' || c === '}') && flow > 0) {
        flow--;
      }
      atNodeStart = false;
      previous = c;
    }
    i++; // the newline
  }
  return undefined;
}

/**
 * The block levels open at a line, at most: the first (the document's) one, and two for each
 * deeper indentation, since a sequence may sit at its parent key's indentation.
 */
const blockDepth = (indents: number[]) => indents.length * 2 - 1;

function restOfLine(text: string, from: number): string {
  const end = text.indexOf('\n', from);
  return text.slice(from, end < 0 ? text.length : end);
}

/** The offset of a quoted scalar's closing quote (or the end of the text when it has none). */
function endOfQuoted(text: string, open: number, quote: string): number {
  for (let i = open + 1; i < text.length; i++) {
    const c = text[i];
    if (quote === '"' && c === '\\') i++;
    else if (c === quote) {
      if (quote === "'" && text[i + 1] === "'") i++;
      else return i;
    }
  }
  return text.length;
}
