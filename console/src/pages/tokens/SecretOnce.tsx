/**
 * A secret the API shows once (a bootstrap token, an access token): shown in a dialog with a
 * copy button and the warning that it will not be shown again. It is kept in one `Secret`
 * box, emptied when the dialog closes: whatever still refers to the box then (the mutation's
 * result, the render React keeps from before the dialog closed) no longer holds the secret.
 * Nothing else keeps it: not the query or mutation cache, not storage, not the URL, so
 * reopening the page never shows it.
 */
import { Alert, Button, Group, Modal, Stack, Text, TextInput } from '@mantine/core';
import { useClipboard } from '@mantine/hooks';
import { useMutation } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { api, ok } from '../../api/client';

export class Secret {
  #value: string | undefined;

  constructor(value: string) {
    this.#value = value;
  }

  get value(): string | undefined {
    return this.#value;
  }

  forget(): void {
    this.#value = undefined;
  }
}

/**
 * A write whose answer carries a secret (`token`): the answer comes back with the secret in a
 * `Secret` box; `forget()` empties the box and drops the answer (gcTime 0: the mutation cache
 * does not keep it either).
 */
export function useSecretMutation<Issued extends { token: string }>(call: () => Promise<Issued>, onIssued: () => void) {
  const mutation = useMutation({
    mutationFn: async () => {
      const { token, ...issued } = await call();
      return { ...issued, secret: new Secret(token) };
    },
    onSuccess: onIssued,
    gcTime: 0,
  });
  const forget = () => {
    mutation.data?.secret.forget();
    mutation.reset();
  };
  return { ...mutation, forget };
}

/** A bootstrap token to issue, as the forms that issue one hold it. */
export interface TokenToIssue {
  name: string;
  /** None: the tenant's default group. */
  groupId?: string | null;
  expiresInSeconds: number;
  maxUses: number;
}

/**
 * Issues a bootstrap token (`POST /api/tokens`) from what `read` returns when the form is
 * sent; the token is shown once (useSecretMutation). The token page's form and a group's
 * "Add agents" issue through it.
 */
export function useIssueToken(read: () => TokenToIssue, onIssued: () => void) {
  return useSecretMutation(() => {
    const { groupId, ...token } = read();
    return ok(api.POST('/api/tokens', { body: { ...token, ...(groupId && { groupId }) } }));
  }, onIssued);
}

/**
 * Copies the secret with the Clipboard API, which exists in secure contexts only (HTTPS,
 * localhost): elsewhere, or when the browser refuses, the page says to copy it by hand (the
 * field selects the whole secret when focused).
 */
function CopyButton({ secret }: { secret: string }) {
  const clipboard = useClipboard({ timeout: 3000 });
  return (
    <Group gap="sm">
      <Button onClick={() => clipboard.copy(secret)}>Copy</Button>
      <Text size="sm" role="status">
        {clipboard.copied && 'Copied to the clipboard.'}
        {clipboard.error && 'The browser did not let the page copy it: select the token and copy it yourself.'}
      </Text>
    </Group>
  );
}

interface SecretDialogProps {
  title: string;
  secret: Secret | undefined;
  /** What the secret is, as the field's label. */
  label: string;
  onClose: () => void;
  /** What is shown with the secret and made from it (snippets that hold it): gone with it. */
  extra?: (secret: string) => ReactNode;
  size?: string;
}

/**
 * The secret in its field, rendered by a component of its own: only the box goes through the
 * dialog's props, so once the dialog closes (this component unmounted, its elements dropped)
 * no element React keeps from an earlier render holds the secret.
 */
function ShownSecret({ secret, label, onClose, extra }: Omit<SecretDialogProps, 'title'> & { secret: Secret }) {
  const value = secret.value ?? '';
  return (
    <Stack>
      <Alert color="red" variant="light" title="Copy it now">
        It will not be shown again: the service keeps only its hash.
      </Alert>
      <TextInput label={label} value={value} readOnly onFocus={(e) => e.currentTarget.select()} />
      <CopyButton secret={value} />
      {extra?.(value)}
      <Group justify="flex-end">
        <Button variant="default" onClick={onClose}>
          Done
        </Button>
      </Group>
    </Stack>
  );
}

/** The dialog showing `secret` (while its box holds one); closing it is the caller's cue to forget it. */
export function SecretDialog({ title, secret, label, onClose, extra, size }: SecretDialogProps) {
  const shown = secret?.value !== undefined;
  return (
    <Modal opened={shown} onClose={onClose} title={title} size={size} closeButtonProps={{ 'aria-label': 'Close' }}>
      {shown && <ShownSecret secret={secret} label={label} onClose={onClose} extra={extra} />}
    </Modal>
  );
}
