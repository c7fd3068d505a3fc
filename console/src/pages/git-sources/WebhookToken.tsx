/**
 * The source's webhook: the URL to give the Git host and whether a token exists. An admin
 * generates or rotates the token (the old one stops working at once); the new token is shown
 * once, in a dialog with a copy button and the webhook URL. It is held as the token pages hold
 * a secret (`useSecretMutation`: in a box emptied when the dialog closes, kept by no cache),
 * so it is never in the URL, the browser's storage or the query cache afterwards.
 */
import { Alert, Button, Code, Group, Modal, Stack, Text, TextInput } from '@mantine/core';
import { useClipboard } from '@mantine/hooks';
import { api, ok } from '../../api/client';
import { ConfirmButton } from '../../components/ConfirmButton';
import { Facts, Section } from '../AgentDetail';
import { useSecretMutation, type Secret } from '../tokens/SecretOnce';
import { when, type GitSource } from './shared';

function CopyToken({ token }: { token: string }) {
  const clipboard = useClipboard({ timeout: 3000 });
  return (
    <>
      <Button onClick={() => clipboard.copy(token)}>{clipboard.copied ? 'Copied' : 'Copy token'}</Button>
      {clipboard.error && (
        <Text size="sm" c="red.9" role="alert">
          This browser did not let the page copy it: select the token and copy it yourself.
        </Text>
      )}
    </>
  );
}

/**
 * The token and where it goes, read from its box here: only the box goes through props, so
 * the render React keeps from before the dialog closed holds an emptied box, not the token.
 */
function ShownToken({ secret, url, onClose }: { secret: Secret; url: string | undefined; onClose: () => void }) {
  const token = secret.value ?? '';
  return (
    <Stack gap="sm">
      <Alert color="blue.9" variant="outline" title="Copy it now">
        It will not be shown again: only its hash is kept. The previous token no longer works.
      </Alert>
      <TextInput
        label="Webhook token"
        readOnly
        value={token}
        spellCheck={false}
        onFocus={(e) => e.currentTarget.select()}
        styles={{ input: { fontFamily: 'var(--mantine-font-family-monospace)' } }}
      />
      <Group>
        <CopyToken token={token} />
      </Group>
      <Text size="sm">
        Give the Git host the webhook URL <Code>{url}</Code> and the token: GitLab as its secret token, a script in the{' '}
        <Code>X-Service-Webhook-Token</Code> header, hosts that send no custom header (GitHub, Gitea, Bitbucket) as{' '}
        <Code>?token=</Code> in the URL.
      </Text>
      <Group justify="flex-end">
        <Button onClick={onClose}>Done</Button>
      </Group>
    </Stack>
  );
}

/** Only the box goes through the dialog's props: once it is emptied, nothing the dialog keeps holds the token. */
function IssuedTokenDialog({ secret, url, onClose }: { secret?: Secret; url?: string; onClose: () => void }) {
  const shown = secret?.value !== undefined;
  return (
    <Modal
      opened={shown}
      onClose={onClose}
      title="New webhook token"
      size="lg"
      closeOnClickOutside={false}
      closeButtonProps={{ 'aria-label': 'Close' }}
    >
      {shown && <ShownToken secret={secret} url={url} onClose={onClose} />}
    </Modal>
  );
}

export function Webhook({ source, mayRotate, onDone }: { source: GitSource; mayRotate: boolean; onDone: () => void }) {
  const rotate = useSecretMutation(
    () => ok(api.POST('/api/git-sources/{id}/webhook-token', { params: { path: { id: source.id } } })),
    onDone,
  );
  const label = source.webhook.configured ? 'Rotate webhook token' : 'Generate webhook token';
  return (
    <Section title="Webhook">
      <Facts
        rows={[
          ['URL', <Code key="url">{source.webhook.url}</Code>],
          [
            'Token',
            source.webhook.configured ? `generated ${when(source.webhook.createdAt)}` : 'none yet (polling only)',
          ],
        ]}
      />
      {mayRotate && (
        <Group mt="sm">
          <ConfirmButton
            label={label}
            question={
              source.webhook.configured
                ? 'Rotate the webhook token? The current token stops working at once: deliveries fail until the Git host has the new one (polling and "Sync now" catch up).'
                : 'Generate a webhook token? It is shown once.'
            }
            action={async () => {
              await rotate.mutateAsync(); // the confirmation's own mutation keeps nothing of it
            }}
          />
        </Group>
      )}
      <IssuedTokenDialog secret={rotate.data?.secret} url={rotate.data?.url} onClose={rotate.forget} />
    </Section>
  );
}
