/**
 * The end of a form in a dialog or a page: the API's problem with the last attempt, if any,
 * then Cancel and the submit button (busy while the write is under way).
 */
import { Button, Group } from '@mantine/core';
import { ProblemAlert } from './ProblemAlert';

interface FormFooterProps {
  /** The form's write (a TanStack mutation): its error and whether it is under way. */
  write: { error: Error | null; isPending: boolean };
  submitLabel: string;
  onCancel: () => void;
}

export function FormFooter({ write, submitLabel, onCancel }: FormFooterProps) {
  return (
    <>
      {write.error && <ProblemAlert error={write.error} mb="md" />}
      <Group justify="flex-end">
        <Button variant="default" onClick={onCancel}>
          Cancel
        </Button>
        <Button type="submit" loading={write.isPending}>
          {submitLabel}
        </Button>
      </Group>
    </>
  );
}
