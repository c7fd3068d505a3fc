/**
 * A new rollout (operators): a published version of a configuration, the groups it goes to
 * the strategy (its time windows too) and when it may start. The policy dry run (`POST /api/policies/evaluate`) is previewed for
 * exactly these choices before the rollout can be created; it is created pending, and
 * started from its page (where the policies judge it again).
 */
import { Button, Group, Stack, Textarea, TextInput } from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { useNavigate, useSearchParams } from 'react-router';
import { api, ok } from '../../api/client';
import { OperatorsOnly } from '../../components/OperatorsOnly';
import { PageTitle } from '../../components/PageTitle';
import { ProblemAlert } from '../../components/ProblemAlert';
import { useVersionChoice, VersionFields } from '../choices';
import { GroupsField } from '../groups/SearchSelect';
import { Verdict } from '../policies/Verdict';
import { DEFAULT_STRATEGY, StrategyFields, type Strategy } from './StrategyFields';

export function NewRolloutPage() {
  return (
    <OperatorsOnly what="create rollouts" title="New rollout">
      <NewRolloutForm />
    </OperatorsOnly>
  );
}

function NewRolloutForm() {
  const navigate = useNavigate();
  const [params] = useSearchParams();
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  // A version page's "Roll out this version" comes with both.
  const preselected = params.get('configurationId');
  const choice = useVersionChoice(
    preselected ? { configurationId: preselected, version: params.get('version') ?? '' } : undefined,
  );
  const { configurationId, version } = choice;
  const [groupIds, setGroupIds] = useState<string[]>([]);
  const [strategy, setStrategy] = useState<Strategy>(DEFAULT_STRATEGY);
  /** `datetime-local`: the browser's own time, sent as an instant. */
  const [startAt, setStartAt] = useState('');

  const push = { configurationId: configurationId ?? '', version: Number(version), target: { groupIds } };
  const batch = { batchSize: strategy.batchSize, batchPercent: strategy.batchPercent };
  /** The choices the shown preview is of: any change asks for a new preview. */
  const choices = JSON.stringify({ push, batch });
  const preview = useMutation({
    mutationFn: () => ok(api.POST('/api/policies/evaluate', { body: { ...push, rollout: batch } })),
  });
  const [previewed, setPreviewed] = useState<string | undefined>();
  const create = useMutation({
    mutationFn: () =>
      ok(
        api.POST('/api/rollouts', {
          body: {
            ...push,
            target: { groupIds, agentIds: [], labelSelector: null },
            ...(name.trim() && { name }),
            ...(description.trim() && { description }),
            ...(startAt && { startAt: new Date(startAt).toISOString() }),
            strategy,
          },
        }),
      ),
    onSuccess: (rollout) => void navigate(`/rollouts/${rollout.id}`),
  });
  const previewShown = previewed === choices && preview.data;
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate();
  };

  return (
    <form onSubmit={submit} aria-label="New rollout">
      <PageTitle>New rollout</PageTitle>
      <Stack maw={640}>
        {choice.configurationError && <ProblemAlert error={choice.configurationError} />}
        <TextInput label="Name" value={name} onChange={(e) => setName(e.currentTarget.value)} />
        <Textarea label="Description" value={description} onChange={(e) => setDescription(e.currentTarget.value)} />
        <VersionFields {...choice} />
        <GroupsField label="Target groups" value={groupIds} onChange={setGroupIds} />
        <StrategyFields strategy={strategy} onChange={setStrategy} />
        <TextInput
          type="datetime-local"
          label="Start at"
          description="Optional, in your browser's time: started before then, the rollout waits (scheduled) and pushes its first batch then"
          value={startAt}
          onChange={(e) => setStartAt(e.currentTarget.value)}
        />
        <Group>
          <Button
            variant="default"
            disabled={!configurationId || !version || groupIds.length === 0}
            loading={preview.isPending}
            onClick={() => preview.mutate(undefined, { onSuccess: () => setPreviewed(choices) })}
          >
            Preview policies
          </Button>
          <Button type="submit" disabled={!previewShown || !preview.data.allowed} loading={create.isPending}>
            Create rollout
          </Button>
        </Group>
        {preview.isError && <ProblemAlert error={preview.error} />}
        {previewShown && <Verdict evaluation={preview.data} />}
        {create.isError && <ProblemAlert error={create.error} />}
      </Stack>
    </form>
  );
}
