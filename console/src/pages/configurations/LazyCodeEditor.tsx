/**
 * The code editor, loaded when a page first shows one: CodeMirror and its languages are a
 * good part of the console's script, which the other pages need not wait for.
 */
import { Skeleton } from '@mantine/core';
import { lazy, Suspense } from 'react';
import type { CodeEditorProps } from './CodeEditor';

const CodeEditor = lazy(() => import('./CodeEditor').then((module) => ({ default: module.CodeEditor })));

export function LazyCodeEditor(props: CodeEditorProps) {
  return (
    <Suspense fallback={<Skeleton height={256} role="status" aria-label="Loading the editor" />}>
      <CodeEditor {...props} />
    </Suspense>
  );
}
