/**
 * The type checker names where an expression goes wrong as an offset into it
 * ("No such key: nope (at offset 6)", docs/policies.md); the editor puts its cursor on a
 * line and column.
 */
import type { Position } from '../configurations/position';

/** The offset a problem's detail names for `body.expression`, if it names one. */
export function expressionOffsetIn(detail: string): number | undefined {
  const named = /body\.expression: [^;]*\(at offset (\d+)\)/.exec(detail);
  return named ? Number(named[1]) : undefined;
}

/** Where the 0-based `offset` lies in `text`, as a 1-based line and column. */
export function positionAt(text: string, offset: number): Position {
  const before = text.slice(0, offset).split('\n');
  return { line: before.length, column: before[before.length - 1]!.length + 1 };
}
