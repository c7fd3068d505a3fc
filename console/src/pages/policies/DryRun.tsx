/**
 * The dry run (`POST /api/policies/evaluate`): the enforced policies judge a chosen rollout's
 * push (its configuration version, the agents it targets, its batch size) without pushing
 * anything, and the page shows the verdict: which agents they deny, by which policy, and why.
 * The rollout (and a policy to point out) are in the URL, so a verdict can be shared.
 */
import { Alert, Anchor, Select, Skeleton, Stack, Table, Text } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { Link, useSearchParams } from 'react-router';
import { api, ok, type Schemas } from '../../api/client';
import { useLiveRefresh } from '../../api/live';
import { PageTitle } from '../../components/PageTitle';
import { ProblemAlert } from '../../components/ProblemAlert';
import { searchOf } from '../agentFilters';
import { POLICIES_KEY, POLICY_EVENTS } from './shared';

type Rollout = Schemas['RolloutSummary'];
type Evaluation = Schemas['PolicyEvaluation'];

/** The rollouts to choose from: the newest page, searchable. */
const ROLLOUT_CHOICES = 200;
/** The agents a rollout targets are read in the API's largest pages, up to the dry run's own limit. */
const AGENTS_PAGE = 1000;
const MAX_AGENTS = 100_000;
const DRY_RUN_KEY = [...POLICIES_KEY, 'dry-run'];

function useRolloutChoices() {
  return useQuery({
    queryKey: ['rollouts', 'choices'],
    queryFn: () => ok(api.GET('/api/rollouts', { params: { query: { limit: ROLLOUT_CHOICES } } })),
  });
}

/** The agents the rollout recorded as its target (groups, agents and labels resolved at its creation). */
async function targetAgents(id: string): Promise<string[]> {
  const agents: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await ok(
      api.GET('/api/rollouts/{id}/agents', { params: { path: { id }, query: { limit: AGENTS_PAGE, cursor } } }),
    );
    agents.push(...page.items.map((agent) => agent.agentId));
    cursor = page.nextCursor ?? undefined;
  } while (cursor && agents.length < MAX_AGENTS);
  return agents.slice(0, MAX_AGENTS);
}

/** The push the rollout makes, as the dry run takes it: a percentage as the whole percent above it. */
function pushOf(rollout: Rollout, agentIds: string[]) {
  const { batchSize, batchPercent } = rollout.strategy;
  return {
    configurationId: rollout.configurationId,
    version: rollout.version,
    target: { agentIds },
    rollout: batchSize ? { batchSize } : { batchPercent: Math.ceil(batchPercent ?? 100) },
  };
}

function useDryRun(rollout: Rollout | undefined) {
  return useQuery({
    queryKey: [...DRY_RUN_KEY, rollout?.id],
    enabled: rollout !== undefined,
    queryFn: async () => {
      const agentIds = await targetAgents(rollout!.id);
      if (agentIds.length === 0) return null;
      return ok(api.POST('/api/policies/evaluate', { body: pushOf(rollout!, agentIds) }));
    },
  });
}

function Verdict({ evaluation, policyId }: { evaluation: Evaluation; policyId?: string }) {
  const denied = evaluation.verdicts.filter((verdict) => !verdict.allowed);
  if (denied.length === 0) {
    return (
      <Alert color="teal.9" variant="filled" title="The policies allow this push" role="status">
        {evaluation.verdicts.length} agents judged, none denied.
      </Alert>
    );
  }
  const deniedByPolicy = policyId && denied.some((v) => v.deniedBy.some((policy) => policy.policyId === policyId));
  return (
    <Stack gap="sm">
      <Alert color="red" variant="light" title="The policies deny this push" role="status">
        {denied.length} of {evaluation.verdicts.length} agents denied
        {policyId &&
          (deniedByPolicy ? ', some by the policy you came from.' : '; the policy you came from denies none.')}
      </Alert>
      <Table aria-label="Denied agents">
        <Table.Thead>
          <Table.Tr>
            <Table.Th scope="col">Agent</Table.Th>
            <Table.Th scope="col">Policy</Table.Th>
            <Table.Th scope="col">Why</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {denied.flatMap((verdict) =>
            verdict.deniedBy.map((policy) => (
              <Table.Tr key={`${verdict.agentId} ${policy.policyId}`}>
                <Table.Td>
                  <Anchor component={Link} to={`/agents/${verdict.agentId}`}>
                    {verdict.agentId}
                  </Anchor>
                </Table.Td>
                <Table.Td>
                  <Anchor
                    component={Link}
                    to={`/policies/${policy.policyId}`}
                    fw={policy.policyId === policyId ? 700 : undefined}
                  >
                    {policy.name}
                  </Anchor>
                </Table.Td>
                <Table.Td>{policy.error ?? 'the expression is false'}</Table.Td>
              </Table.Tr>
            )),
          )}
        </Table.Tbody>
      </Table>
    </Stack>
  );
}

const rolloutLabel = (rollout: Rollout) => `${rollout.name ?? rollout.id} (${rollout.state}, v${rollout.version})`;

export function DryRunPage() {
  const [params, setParams] = useSearchParams();
  const rolloutId = params.get('rollout');
  const policyId = params.get('policy') ?? undefined;
  const rollouts = useRolloutChoices();
  const rollout = rollouts.data?.items.find((r) => r.id === rolloutId);
  const dryRun = useDryRun(rollout);
  // A policy approved, enabled or changed meanwhile changes the verdict.
  useLiveRefresh(POLICY_EVENTS, [DRY_RUN_KEY]);
  const error = rollouts.error ?? dryRun.error;
  return (
    <Stack gap="md" maw={960}>
      <Anchor component={Link} to={policyId ? `/policies/${policyId}` : '/policies'}>
        ← {policyId ? 'The policy' : 'Policies'}
      </Anchor>
      <PageTitle>Dry run</PageTitle>
      <Text>
        The approved, enabled policies judge a rollout&apos;s push — its configuration version, the agents it targets,
        its batch size — as starting it would, without pushing anything. A draft is not enforced, so it is not judged
        until it is approved.
      </Text>
      <Select
        label="Rollout"
        placeholder="Choose a rollout"
        searchable
        data={(rollouts.data?.items ?? []).map((r) => ({ value: r.id, label: rolloutLabel(r) }))}
        value={rolloutId}
        onChange={(id) => setParams(searchOf({ rollout: id, policy: policyId }))}
        maw={560}
      />
      {rolloutId && rollouts.isSuccess && !rollout && (
        <Alert color="gray" variant="light" title="Not among the newest rollouts">
          The rollout {rolloutId} is not among the {ROLLOUT_CHOICES} newest; choose one of them.
        </Alert>
      )}
      {error && <ProblemAlert error={error} />}
      <Skeleton visible={rollout !== undefined && dryRun.isPending}>
        {dryRun.data === null && (
          <Alert color="gray" variant="light" title="No agents">
            The rollout targets no agent, so there is nothing to judge.
          </Alert>
        )}
        {dryRun.data && <Verdict evaluation={dryRun.data} policyId={policyId} />}
      </Skeleton>
    </Stack>
  );
}
