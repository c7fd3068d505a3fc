/**
 * A new federated rollout (operators): a published version of one of this installation's
 * configurations, the installations it goes to (this one and peers, in the order listed:
 * `sequential` starts each once the one before completed), and each one's target and
 * strategy. Creating it is the dry run: every installation is asked first and nothing is
 * created unless all accept; a refusal is shown as the API words it, naming the installation.
 */
import { Button, Checkbox, Group, NumberInput, Select, Stack, Table, TextInput, Title } from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { useNavigate } from 'react-router';
import { api, ok, type Schemas } from '../../api/client';
import { ColumnHeaders } from '../../components/ColumnHeaders';
import { PageTitle } from '../../components/PageTitle';
import { ProblemAlert } from '../../components/ProblemAlert';
import { Section } from '../AgentDetail';
import { usePeerChoices, useVersionChoice, VersionFields } from '../choices';
import { searchGroups, SearchMultiSelect, type Choice } from '../groups/SearchSelect';
import { DEFAULT_STRATEGY } from '../rollouts/StrategyFields';
import { FEDERATION_KEY, FederationNav } from './shared';

const LOCAL = 'local';

interface Plan {
  included: boolean;
  /** Groups of that installation, searched there as the operator types. */
  groups: Choice[];
  batchSize: number;
  bakeSeconds: number;
}

const NOT_PLANNED: Plan = { included: false, groups: [], batchSize: 1, bakeSeconds: 0 };

/** Where an installation's groups are searched: this one's own list, or a peer asked through this one. */
function groupSearch(peerId: string): (q: string | undefined) => Promise<Choice[]> {
  if (peerId === LOCAL) return searchGroups;
  return async (q) => {
    const page = await ok(
      api.GET('/api/federation/peers/{id}/groups', { params: { path: { id: peerId }, query: { q, limit: 50 } } }),
    );
    return page.items.map((group) => ({ value: group.id, label: group.name }));
  };
}

function InstallationFields(props: { peerId: string; name: string; plan: Plan; change: (plan: Plan) => void }) {
  const { peerId, name, plan, change } = props;
  return (
    <Section title={name}>
      <Checkbox
        label={`Roll out on ${name}`}
        checked={plan.included}
        onChange={(e) => change({ ...plan, included: e.currentTarget.checked })}
        mb={plan.included ? 'sm' : 0}
      />
      {plan.included && (
        <Stack gap="sm">
          <SearchMultiSelect
            label={`Target groups on ${name}`}
            queryKey={[...FEDERATION_KEY, 'group-choices', peerId]}
            search={groupSearch(peerId)}
            chosen={plan.groups}
            onChoose={(groups) => change({ ...plan, groups })}
          />
          <Group grow>
            <NumberInput
              label={`Agents per batch on ${name}`}
              min={1}
              value={plan.batchSize}
              onChange={(v) => change({ ...plan, batchSize: Number(v) })}
            />
            <NumberInput
              label={`Bake on ${name} (seconds)`}
              min={0}
              value={plan.bakeSeconds}
              onChange={(v) => change({ ...plan, bakeSeconds: Number(v) })}
            />
          </Group>
        </Stack>
      )}
    </Section>
  );
}

/** What each installation said to the dry run: it would take its part, or its problem. */
function Checks({ verdicts }: { verdicts: Schemas['FederatedRolloutDryRun']['installations'] }) {
  return (
    <Table aria-label="Installation checks">
      <ColumnHeaders columns={['Installation', 'Verdict', 'Why']} />
      <Table.Tbody>
        {verdicts.map((verdict) => (
          <Table.Tr key={verdict.installation}>
            <Table.Th scope="row">{verdict.installation}</Table.Th>
            <Table.Td>{verdict.allowed ? 'would take its part' : 'refuses'}</Table.Td>
            <Table.Td>{typeof verdict.problem?.detail === 'string' ? verdict.problem.detail : ''}</Table.Td>
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  );
}

export function NewFederatedRolloutPage() {
  const navigate = useNavigate();
  const [name, setName] = useState('');
  const choice = useVersionChoice();
  const { configurationId, version } = choice;
  const [mode, setMode] = useState<'sequential' | 'parallel'>('sequential');
  const [plans, setPlans] = useState<Record<string, Plan>>({});
  const peers = usePeerChoices();
  const candidates = [
    { peerId: LOCAL, name: 'this installation' },
    ...(peers.data?.items ?? []).map((peer) => ({ peerId: peer.id, name: peer.name })),
  ];
  const planOf = (peerId: string) => plans[peerId] ?? NOT_PLANNED;
  const chosen = candidates.filter((candidate) => planOf(candidate.peerId).included);
  const body = {
    ...(name.trim() && { name }),
    configurationId: configurationId ?? '',
    version: Number(version),
    mode,
    installations: chosen.map(({ peerId }) => {
      const { groups, batchSize, bakeSeconds } = planOf(peerId);
      return {
        peerId,
        target: { groupIds: groups.map((group) => group.value), agentIds: [], labelSelector: null },
        strategy: { ...DEFAULT_STRATEGY, batchSize, bakeSeconds },
      };
    }),
  };
  const check = useMutation({ mutationFn: () => ok(api.POST('/api/federation/rollouts/dry-run', { body })) });
  /** The choices the shown check is of: it is hidden once they change. */
  const [checkedFor, setCheckedFor] = useState<string | undefined>();
  const create = useMutation({
    mutationFn: () => ok(api.POST('/api/federation/rollouts', { body })),
    onSuccess: (rollout) => void navigate(`/federation/rollouts/${rollout.id}`),
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate();
  };
  const errors = [
    ...(choice.configurationError ? [choice.configurationError] : []),
    ...[choice.versions, peers].flatMap((query) => (query.error ? [query.error] : [])),
  ];
  return (
    <form onSubmit={submit} aria-label="New federated rollout">
      <PageTitle>New federated rollout</PageTitle>
      <FederationNav />
      <Stack maw={720}>
        {errors.map((error) => (
          <ProblemAlert key={error.message} error={error} />
        ))}
        <TextInput label="Name" value={name} onChange={(e) => setName(e.currentTarget.value)} />
        <VersionFields {...choice} />
        <Select
          label="Order"
          allowDeselect={false}
          data={[
            { value: 'sequential', label: 'sequential: each installation once the one before it completed' },
            { value: 'parallel', label: 'parallel: every installation at once' },
          ]}
          value={mode}
          onChange={(value) => setMode(value === 'parallel' ? 'parallel' : 'sequential')}
        />
        <Title order={3} size="h5">
          Installations, in this order
        </Title>
        {candidates.map((candidate) => (
          <InstallationFields
            key={candidate.peerId}
            peerId={candidate.peerId}
            name={candidate.name}
            plan={planOf(candidate.peerId)}
            change={(plan) => setPlans({ ...plans, [candidate.peerId]: plan })}
          />
        ))}
        <Group>
          <Button
            variant="default"
            disabled={!configurationId || !version || chosen.length === 0}
            loading={check.isPending}
            onClick={() => check.mutate(undefined, { onSuccess: () => setCheckedFor(JSON.stringify(body)) })}
          >
            Check installations
          </Button>
          <Button
            type="submit"
            disabled={!configurationId || !version || chosen.length === 0}
            loading={create.isPending}
          >
            Check and create
          </Button>
        </Group>
        {check.isError && <ProblemAlert error={check.error} />}
        {check.data && checkedFor === JSON.stringify(body) && <Checks verdicts={check.data.installations} />}
        {create.isError && <ProblemAlert error={create.error} />}
      </Stack>
    </form>
  );
}
