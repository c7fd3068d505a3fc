/**
 * Docs that list what the code defines are checked against it, so they cannot drift.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { EVENT_TYPES } from '../db/repos/events';

test('docs/events.md lists exactly the event types the code can emit, in its order', () => {
  const doc = readFileSync(path.resolve(__dirname, '../docs/events.md'), 'utf8');
  const listed = [...doc.matchAll(/^\| `([a-z-]+(?:\.[a-z-]+)+)` \|/gm)].map((match) => match[1]);
  expect(listed).toEqual([...EVENT_TYPES]);
});
