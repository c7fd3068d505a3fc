/**
 * The dry run (`POST /api/policies/evaluate`): the enforced policies judge a chosen rollout's
 * push (its configuration version, the agents it targets, its batch size) without pushing
 * anything, and the page shows the verdict: which agents they deny, by which policy, and why.
 * The rollout (and a policy to point out) are in the URL, so a verdict can be shared.
 */
import { Alert, Anchor, Select, Skeleton, Stack, Text } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { Link, useSearchParams } from 'react-router';
import { api, ok, type Schemas } from '../../api/client';
import { useLiveRefresh } from '../../api/live';
import { PageTitle } from '../../components/PageTitle';
import { ProblemAlert } from '../../components/ProblemAlert';
import { searchOf } from '../agentFilters';
import { POLICIES_KEY, POLICY_EVENTS } from './shared';
import { Verdict } from './Verdict';

type Rollout = Schemas['RolloutSummary'] | Schemas['Rollout'];

/** The rollouts to choose from: the newest, searchable (a deep link may name any). */
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

/** The rollout (any: a deep link may name one older than the choices) and its push's verdict. */
function useDryRun(rolloutId: string | null) {
  return useQuery({
    queryKey: [...DRY_RUN_KEY, rolloutId],
    enabled: rolloutId !== null,
    queryFn: async () => {
      const rollout = await ok(api.GET('/api/rollouts/{id}', { params: { path: { id: rolloutId! } } }));
      const agentIds = await targetAgents(rollout.id);
      // The API needs at least one agent to judge: a rollout that targets none has no verdict.
      const evaluation =
        agentIds.length === 0
          ? null
          : await ok(api.POST('/api/policies/evaluate', { body: pushOf(rollout, agentIds) }));
      return { rollout, evaluation };
    },
  });
}

const rolloutLabel = (rollout: Rollout) => `${rollout.name ?? rollout.id} (${rollout.state}, v${rollout.version})`;

/** The choices, and the rollout shown when it is older than they reach (a deep link). */
function withShown(choices: Rollout[], shown: Rollout | undefined): Rollout[] {
  return shown && !choices.some((rollout) => rollout.id === shown.id) ? [...choices, shown] : choices;
}

export function DryRunPage() {
  const [params, setParams] = useSearchParams();
  const rolloutId = params.get('rollout');
  const policyId = params.get('policy') ?? undefined;
  const rollouts = useRolloutChoices();
  const dryRun = useDryRun(rolloutId);
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
        data={withShown(rollouts.data?.items ?? [], dryRun.data?.rollout).map((r) => ({
          value: r.id,
          label: rolloutLabel(r),
        }))}
        value={rolloutId}
        onChange={(id) => setParams(searchOf({ rollout: id, policy: policyId }))}
        maw={560}
      />
      {error && <ProblemAlert error={error} />}
      <Skeleton visible={rolloutId !== null && dryRun.isPending}>
        {dryRun.data?.evaluation === null && (
          <Alert color="gray" variant="light" title="No agents">
            The rollout targets no agent, so there is nothing to judge.
          </Alert>
        )}
        {dryRun.data?.evaluation && <Verdict evaluation={dryRun.data.evaluation} policyId={policyId} />}
      </Skeleton>
    </Stack>
  );
}
