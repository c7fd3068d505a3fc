/**
 * A write that asks first: the button opens a dialog saying what will happen; confirming
 * runs the call, and a problem the API answers is shown in the dialog.
 */
import { Button, Group, Modal, Text, type ButtonProps } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { useMutation } from '@tanstack/react-query';
import { ProblemAlert } from './ProblemAlert';

interface ConfirmButtonProps extends ButtonProps {
  label: string;
  /** What confirming does, in a sentence. */
  question: string;
  action: () => Promise<unknown>;
  onDone?: () => void;
}

export function ConfirmButton({ label, question, action, onDone, ...buttonProps }: ConfirmButtonProps) {
  const [opened, { open, close }] = useDisclosure(false);
  const mutation = useMutation({
    mutationFn: action,
    onSuccess: () => {
      close();
      onDone?.();
    },
  });
  // Each opening asks afresh: the problem of an earlier refused attempt is not shown again.
  const ask = () => {
    mutation.reset();
    open();
  };
  return (
    <>
      <Button {...buttonProps} onClick={ask}>
        {label}
      </Button>
      <Modal opened={opened} onClose={close} title={label} closeButtonProps={{ 'aria-label': 'Close' }}>
        <Text mb="md">{question}</Text>
        {mutation.isError && <ProblemAlert error={mutation.error} mb="md" />}
        <Group justify="flex-end">
          <Button variant="default" onClick={close}>
            Cancel
          </Button>
          <Button {...buttonProps} loading={mutation.isPending} onClick={() => mutation.mutate()}>
            {label}
          </Button>
        </Group>
      </Modal>
    </>
  );
}
