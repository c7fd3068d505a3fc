/**
 * A configuration's content in CodeMirror 6: YAML or JSON highlighting by the
 * configuration's format (text gets none), line numbers, undo, search. CodeMirror runs no
 * eval and only adds styles, which the console's Content-Security-Policy allows.
 */
import { json } from '@codemirror/lang-json';
import { yaml } from '@codemirror/lang-yaml';
import { EditorState, type Extension } from '@codemirror/state';
import { EditorView } from '@codemirror/view';
import { basicSetup } from 'codemirror';
import { useEffect, useRef } from 'react';
import type { Format } from './filters';
import type { Position } from './position';

const LANGUAGES: Record<Format, () => Extension> = { yaml, json, text: () => [] };

// CodeMirror's default gutter grey (#999 on #f5f5f5) is below the 4.5:1 contrast axe asks for.
const readable = EditorView.theme({
  '&': { border: '1px solid var(--mantine-color-gray-4)', borderRadius: '4px', fontSize: '14px' },
  '.cm-gutters': { color: '#495057', backgroundColor: '#f1f3f5' },
  '.cm-scroller': { minHeight: '16rem', maxHeight: '60vh' },
});

/** Puts the cursor on `at` (clamped to the content) and scrolls it into view. */
function moveCursor(view: EditorView, at: Position): void {
  const line = view.state.doc.line(Math.min(Math.max(at.line, 1), view.state.doc.lines));
  const offset = line.from + Math.min(Math.max(at.column - 1, 0), line.length);
  view.dispatch({ selection: { anchor: offset }, scrollIntoView: true });
  view.focus();
}

export interface CodeEditorProps {
  /** The content when the editor opens; later changes come from typing. */
  initial: string;
  format: Format;
  /** The editor's accessible name. */
  label: string;
  onChange?: (content: string) => void;
  readOnly?: boolean;
  /** Where to put the cursor: the spot a problem named. */
  cursorAt?: Position;
}

export function CodeEditor({ initial, format, label, onChange, readOnly = false, cursorAt }: CodeEditorProps) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView>(undefined);
  const changed = useRef(onChange);
  useEffect(() => {
    changed.current = onChange;
  });
  useEffect(() => {
    const created = new EditorView({
      parent: host.current!,
      state: EditorState.create({
        doc: initial,
        extensions: [
          basicSetup,
          LANGUAGES[format](),
          readable,
          EditorState.readOnly.of(readOnly),
          EditorView.editable.of(!readOnly),
          EditorView.contentAttributes.of({ 'aria-label': label }),
          EditorView.updateListener.of((update) => {
            if (update.docChanged) changed.current?.(update.state.doc.toString());
          }),
        ],
      }),
    });
    view.current = created;
    return () => created.destroy();
  }, [initial, format, label, readOnly]);
  useEffect(() => {
    if (cursorAt && view.current) moveCursor(view.current, cursorAt);
  }, [cursorAt]);
  return <div ref={host} data-testid="code-editor" />;
}
