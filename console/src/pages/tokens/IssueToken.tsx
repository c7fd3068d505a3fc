/**
 * Issuing a bootstrap token (operators): its name, the group its agents join, its lifetime and
 * how many enrollments it allows, as `POST /api/tokens` takes them; the token then shows once.
 */
import { Button, Modal, NumberInput, TextInput } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { useState, type FormEvent } from 'react';
import { FormFooter } from '../../components/FormFooter';
import { SecretDialog, useIssueToken } from './SecretOnce';
import { GroupSelect, inSeconds, LifetimeInput, useRefreshTokens, type Lifetime } from './shared';

export function IssueToken() {
  const refresh = useRefreshTokens();
  const [opened, { open, close }] = useDisclosure(false);
  const [name, setName] = useState('');
  const [groupId, setGroupId] = useState<string | null>(null);
  const [lifetime, setLifetime] = useState<Lifetime>({ amount: 24, unit: '3600' });
  const [maxUses, setMaxUses] = useState<number | string>(1);
  const issue = useIssueToken(
    () => ({ name, groupId, expiresInSeconds: inSeconds(lifetime), maxUses: Number(maxUses) }),
    () => {
      close();
      refresh();
    },
  );
  const submit = (event: FormEvent) => {
    event.preventDefault();
    issue.mutate();
  };
  return (
    <>
      <Button onClick={open}>New bootstrap token</Button>
      <Modal opened={opened} onClose={close} title="New bootstrap token" closeButtonProps={{ 'aria-label': 'Close' }}>
        <form onSubmit={submit} aria-label="New bootstrap token">
          <TextInput label="Name" required value={name} onChange={(e) => setName(e.currentTarget.value)} mb="sm" />
          <GroupSelect value={groupId} onChange={setGroupId} />
          <LifetimeInput label="Expires in" value={lifetime} onChange={setLifetime} />
          <NumberInput
            label="Enrollments allowed"
            description="How many agents may enroll with it (1 to 1,000,000)"
            min={1}
            allowDecimal={false}
            value={maxUses}
            onChange={setMaxUses}
            mb="md"
          />
          <FormFooter write={issue} submitLabel="Issue" onCancel={close} />
        </form>
      </Modal>
      <SecretDialog
        title={`Bootstrap token ${issue.data?.name ?? ''}`}
        label="Bootstrap token"
        secret={issue.data?.secret}
        onClose={issue.forget}
      />
    </>
  );
}
