/** A spot in the content, 1-based, as the API's problems name it ("line 3, column 7"). */
export interface Position {
  line: number;
  column: number;
}

/** The position a problem's detail names, if it names one. */
export function positionIn(detail: string): Position | undefined {
  const named = /line (\d+), column (\d+)/.exec(detail);
  return named ? { line: Number(named[1]), column: Number(named[2]) } : undefined;
}
