/**
 * The source's webhook: the URL to give the Git host and whether a token exists. An admin
 * generates or rotates the token (the old one stops working at once); the new token is shown
 * once, in a dialog with a copy button, and lives only in that dialog's state: not in the
 * URL, not in storage, not in the query cache (the confirmation's call returns nothing), and
 * it is dropped when the dialog closes.
 */
import { Alert, Button, Code, Group, Modal, Stack, Text, TextInput } from '@mantine/core';
import { useClipboard } from '@mantine/hooks';
import { useState } from 'react';
import { api, ok, type Schemas } from '../../api/client';
import { ConfirmButton } from '../../components/ConfirmButton';
import { Facts, Section } from '../AgentDetail';
import { when, type GitSource } from './shared';

type IssuedToken = Schemas['GitWebhookToken'];

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

function IssuedTokenDialog({ issued, onClose }: { issued: IssuedToken | null; onClose: () => void }) {
  return (
    <Modal
      opened={issued !== null}
      onClose={onClose}
      title="New webhook token"
      size="lg"
      closeOnClickOutside={false}
      closeButtonProps={{ 'aria-label': 'Close' }}
    >
      {issued && (
        <Stack gap="sm">
          <Alert color="blue.9" variant="outline" title="Copy it now">
            It will not be shown again: only its hash is kept. The previous token no longer works.
          </Alert>
          <TextInput
            label="Webhook token"
            readOnly
            value={issued.token}
            spellCheck={false}
            onFocus={(e) => e.currentTarget.select()}
            styles={{ input: { fontFamily: 'var(--mantine-font-family-monospace)' } }}
          />
          <Group>
            <CopyToken token={issued.token} />
          </Group>
          <Text size="sm">
            Give the Git host the webhook URL <Code>{issued.url}</Code> and the token: GitLab as its secret token, a
            script in the <Code>X-Service-Webhook-Token</Code> header, hosts that send no custom header (GitHub, Gitea,
            Bitbucket) as <Code>?token=</Code> in the URL.
          </Text>
          <Group justify="flex-end">
            <Button onClick={onClose}>Done</Button>
          </Group>
        </Stack>
      )}
    </Modal>
  );
}

export function Webhook({ source, mayRotate, onDone }: { source: GitSource; mayRotate: boolean; onDone: () => void }) {
  const [issued, setIssued] = useState<IssuedToken | null>(null);
  const label = source.webhook.configured ? 'Rotate webhook token' : 'Generate webhook token';
  const rotate = async () => {
    setIssued(
      await ok(
        api.POST('/api/git-sources/{id}/webhook-token', { params: { path: { id: source.id } }, cache: 'no-store' }),
      ),
    );
  };
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
            action={rotate}
            onDone={onDone}
          />
        </Group>
      )}
      <IssuedTokenDialog issued={issued} onClose={() => setIssued(null)} />
    </Section>
  );
}
