/**
 * A save refused with 412 (someone saved the object after the form read it) is no dead end:
 * the form loads the object as it is now and puts its own changes on top — each field the form
 * changed keeps the form's value, every other field takes the latest — says which fields were
 * changed meanwhile, and the next save sends the latest ETag. Nothing typed is lost.
 */
import { Alert, Button, Stack, Text } from '@mantine/core';
import { ApiProblem } from '../api/client';
import { ProblemAlert } from './ProblemAlert';

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

export interface Reapplied<T> {
  merged: T;
  /** Fields someone else changed since the form read the object. */
  changedThere: Array<keyof T & string>;
  /** Of those, the ones the form changed too (the form's value is kept). */
  both: Array<keyof T & string>;
}

/** `latest` with the fields `mine` changed from `base` on top. */
export function reapply<T extends object>(base: T, mine: T, latest: T): Reapplied<T> {
  const keys = Object.keys(latest) as Array<keyof T & string>;
  const changedHere = keys.filter((key) => !same(mine[key], base[key]));
  const changedThere = keys.filter((key) => !same(latest[key], base[key]));
  const merged = { ...latest };
  for (const key of changedHere) merged[key] = mine[key];
  return { merged, changedThere, both: changedThere.filter((key) => changedHere.includes(key)) };
}

export const isStale = (error: unknown) => error instanceof ApiProblem && error.status === 412;

/** The notice of a stale save, with the way out; then what re-applying did, or why reading the latest failed. */
export function StaleEdit<T>({
  what,
  stale,
  reload,
  reapplied,
}: {
  /** The object, as the notice names it ("this policy"). */
  what: string;
  stale: boolean;
  /** The read of the latest (a mutation: run on the notice's button, its problem shown here). */
  reload: { isPending: boolean; error: Error | null; mutate: () => void };
  reapplied: Reapplied<T> | null;
}) {
  const pending = reload.isPending;
  const onReload = () => reload.mutate();
  return (
    <>
      {stale && (
        <Alert color="orange.9" variant="filled" title={`Someone saved ${what} after you opened it`} role="alert">
          <Stack gap="xs" align="flex-start">
            <Text size="sm">Nothing was lost: load what they saved and put your changes on top, then save again.</Text>
            <Button variant="white" color="dark" loading={pending} onClick={onReload}>
              Load the latest and re-apply my changes
            </Button>
          </Stack>
        </Alert>
      )}
      {reapplied && (
        <Alert color="blue.9" variant="filled" title="Your changes are on the latest version" role="status">
          {reapplied.changedThere.length === 0
            ? 'Nothing you see here was changed meanwhile.'
            : `Changed meanwhile: ${reapplied.changedThere.join(', ')}.`}
          {reapplied.both.length > 0 && ` You changed ${reapplied.both.join(', ')} too: yours is kept.`} Save to write
          it.
        </Alert>
      )}
      {reload.error && <ProblemAlert error={reload.error} />}
    </>
  );
}
