/**
 * The API's unified diff (GET /api/configurations/{id}/versions/compare) laid out side by
 * side: unchanged lines on both sides, a run of removed lines next to the run of added
 * lines that replaced it, line numbers from the hunk headers.
 */
export interface Cell {
  line: number;
  text: string;
}

export interface DiffRow {
  kind: 'same' | 'changed' | 'removed' | 'added' | 'hunk';
  left?: Cell;
  right?: Cell;
}

const HUNK = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/;

/** Pairs a run of removed lines with the run of added lines after it, row by row. */
function pairRuns(removed: Cell[], added: Cell[]): DiffRow[] {
  const rows: DiffRow[] = [];
  for (let i = 0; i < Math.max(removed.length, added.length); i++) {
    const left = removed[i];
    const right = added[i];
    rows.push({ kind: left && right ? 'changed' : left ? 'removed' : 'added', left, right });
  }
  return rows;
}

export function sideBySide(unifiedDiff: string): DiffRow[] {
  const rows: DiffRow[] = [];
  let removed: Cell[] = [];
  let added: Cell[] = [];
  let left = 0;
  let right = 0;
  let inHunk = false;
  const flush = () => {
    rows.push(...pairRuns(removed, added));
    removed = [];
    added = [];
  };
  for (const line of unifiedDiff.split('\n')) {
    const hunk = HUNK.exec(line);
    if (hunk) {
      flush();
      left = Number(hunk[1]);
      right = Number(hunk[2]);
      inHunk = true;
      rows.push({ kind: 'hunk' });
    } else if (!inHunk || line.startsWith('\\')) {
      continue; // the file headers before the first hunk; "\ No newline at end of file"
    } else if (line.startsWith('-')) {
      removed.push({ line: left++, text: line.slice(1) });
    } else if (line.startsWith('+')) {
      added.push({ line: right++, text: line.slice(1) });
    } else if (line.startsWith(' ')) {
      flush();
      rows.push({
        kind: 'same',
        left: { line: left++, text: line.slice(1) },
        right: { line: right++, text: line.slice(1) },
      });
    }
  }
  flush();
  return rows;
}
