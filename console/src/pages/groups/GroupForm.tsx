/**
 * A group's name, description and labels, as creating one (POST) and changing one (PUT, a
 * full replacement) both send them. Labels are typed `key=value`, one a line; the API judges
 * the keys and values, and its problem shows under the form.
 */
import { Modal, Textarea, TextInput } from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import type { Schemas } from '../../api/client';
import { FormFooter } from '../../components/FormFooter';
import { isStale, reapply, StaleEdit, type Reapplied } from '../../components/StaleEdit';
import { labelPairs, type GroupBody } from './shared';

export type GroupWrite = Schemas['GroupWrite'];

/** `key=value` lines as labels, or the first line that is not one. */
export function labelsFrom(text: string): { labels: Record<string, string> } | { error: string } {
  const labels: Record<string, string> = {};
  const lines = text.split('\n').map((line) => line.trim());
  for (const [index, line] of lines.entries()) {
    if (!line) continue;
    const at = line.indexOf('=');
    if (at <= 0) return { error: `Line ${index + 1} is not key=value.` };
    labels[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return { labels };
}

interface GroupFormProps {
  title: string;
  initial?: GroupWrite;
  save: (body: GroupWrite) => Promise<GroupBody>;
  onSaved: (saved: GroupBody) => void;
  onCancel: () => void;
  /** Editing: the group as it is now, for a save refused with 412 (the caller then saves with its ETag). */
  reload?: () => Promise<GroupWrite>;
}

/** What the form holds, as the group's fields (labels as typed; unparsable lines kept as they are). */
type Typed = { name: string; description: string; labels: string };
const typedOf = (group: GroupWrite | undefined): Typed => ({
  name: group?.name ?? '',
  description: group?.description ?? '',
  labels: labelPairs(group?.labels ?? {}).join('\n'),
});

/** The form itself: drawn afresh each time its dialog opens, from the group as shown then. */
function GroupFields({ title, initial, save, onSaved, onCancel, reload }: GroupFormProps) {
  const [typed, setTyped] = useState<Typed>(() => typedOf(initial));
  const [base, setBase] = useState<Typed>(() => typedOf(initial));
  const [reapplied, setReapplied] = useState<Reapplied<Typed> | null>(null);
  const { name, description, labels } = typed;
  const set = (change: Partial<Typed>) => setTyped((current) => ({ ...current, ...change }));
  const parsed = labelsFrom(labels);
  const mutation = useMutation({ mutationFn: save, onSuccess: onSaved });
  const latest = useMutation({
    mutationFn: () => reload!(),
    onSuccess: (now) => {
      const result = reapply(base, typed, typedOf(now));
      setTyped(result.merged);
      setBase(typedOf(now));
      setReapplied(result);
      mutation.reset();
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if ('labels' in parsed) mutation.mutate({ name, description, labels: parsed.labels });
  };
  return (
    <form onSubmit={submit} aria-label={title}>
      <TextInput label="Name" required value={name} onChange={(e) => set({ name: e.currentTarget.value })} mb="sm" />
      <Textarea
        label="Description"
        value={description}
        onChange={(e) => set({ description: e.currentTarget.value })}
        mb="sm"
      />
      <Textarea
        // The hint in the label: Mantine's dimmed description text is below 4.5:1 contrast.
        label="Labels (one key=value a line)"
        autosize
        minRows={2}
        value={labels}
        error={'error' in parsed ? parsed.error : undefined}
        onChange={(e) => set({ labels: e.currentTarget.value })}
        mb="md"
      />
      {reload && <StaleEdit what="this group" stale={isStale(mutation.error)} reload={latest} reapplied={reapplied} />}
      <FormFooter write={mutation} submitLabel="Save" onCancel={onCancel} />
    </form>
  );
}

export function GroupFormModal({ opened, ...props }: GroupFormProps & { opened: boolean }) {
  return (
    <Modal opened={opened} onClose={props.onCancel} title={props.title} closeButtonProps={{ 'aria-label': 'Close' }}>
      <GroupFields {...props} />
    </Modal>
  );
}
