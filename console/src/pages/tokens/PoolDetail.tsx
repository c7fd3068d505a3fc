/**
 * One token pool: its settings and how many of its tokens are active against its maximum;
 * operators issue a token from it (shown once; the API refuses with 409 at the maximum).
 * Its tokens follow, in the API's cursor pages with a state filter, both in the URL.
 */
import { Button, Group, Select, Skeleton, Stack, TextInput } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { useParams, useSearchParams } from 'react-router';
import { GroupLink } from '../groups/shared';
import { api, ok } from '../../api/client';
import { useLiveRefresh } from '../../api/live';
import { may, useSession } from '../../api/session';
import { CursorPager } from '../../components/CursorPager';
import { PageTitle } from '../../components/PageTitle';
import { ProblemAlert } from '../../components/ProblemAlert';
import { searchOf } from '../agentFilters';
import { Facts, Section } from '../AgentDetail';
import { SecretDialog, useSecretMutation } from './SecretOnce';
import { TokenTable } from './TokenTable';
import { TOKEN_STATES, tokenFiltersFrom } from './filters';
import { duration, TOKEN_EVENTS, TOKENS_KEY, useRefreshTokens, useTokens, when, type Pool } from './shared';

function usePool(id: string) {
  return useQuery({
    queryKey: [...TOKENS_KEY, 'pools', 'one', id],
    queryFn: () => ok(api.GET('/api/tokens/pools/{id}', { params: { path: { id } } })),
  });
}

function IssueFromPool({ pool }: { pool: Pool }) {
  const refresh = useRefreshTokens();
  const [name, setName] = useState('');
  const issue = useSecretMutation(
    () =>
      ok(
        api.POST('/api/tokens/pools/{id}/issue', {
          params: { path: { id: pool.id } },
          body: name.trim() ? { name } : {},
        }),
      ),
    () => {
      setName('');
      refresh();
    },
  );
  const submit = (event: FormEvent) => {
    event.preventDefault();
    issue.mutate();
  };
  return (
    <>
      <form onSubmit={submit} aria-label="Issue a token from this pool">
        <Group align="end" mb="md">
          <TextInput
            label="Token name"
            description="Optional"
            placeholder={`${pool.name} #${pool.activeTokens + 1}`}
            value={name}
            onChange={(e) => setName(e.currentTarget.value)}
          />
          <Button type="submit" loading={issue.isPending}>
            Issue a token
          </Button>
        </Group>
        {issue.isError && <ProblemAlert error={issue.error} mb="md" />}
      </form>
      <SecretDialog
        title={`Bootstrap token ${issue.data?.name ?? ''}`}
        label="Bootstrap token"
        secret={issue.data?.secret}
        onClose={issue.forget}
      />
    </>
  );
}

function PoolFacts({ pool }: { pool: Pool }) {
  return (
    <Section title="Settings">
      <Facts
        rows={[
          ['Group', <GroupLink key="group" id={pool.groupId} />],
          ['Active tokens', `${pool.activeTokens} of ${pool.maxActiveTokens}`],
          ['Token lifetime', duration(pool.tokenTtlSeconds)],
          ['Enrollments per token', pool.tokenMaxUses],
          ['Created', `${pool.createdBy}, ${when(pool.createdAt)}`],
        ]}
      />
    </Section>
  );
}

export function PoolDetailPage() {
  const { id = '' } = useParams();
  const [params, setParams] = useSearchParams();
  const session = useSession();
  const refresh = useRefreshTokens();
  const pool = usePool(id);
  const { state, cursor } = tokenFiltersFrom(params);
  const tokens = useTokens({ poolId: id, state, cursor });
  useLiveRefresh(TOKEN_EVENTS, [TOKENS_KEY]);
  const canOperate = session.data !== undefined && may(session.data, 'operate');
  if (pool.isError) return <ProblemAlert error={pool.error} />;
  if (!pool.data) return <Skeleton h={200} />;
  return (
    <Stack gap="md">
      <PageTitle>{`Pool ${pool.data.name}`}</PageTitle>
      <PoolFacts pool={pool.data} />
      {canOperate && <IssueFromPool pool={pool.data} />}
      <Section title="Its tokens">
        <Select
          label="State"
          placeholder="Any state"
          clearable
          data={TOKEN_STATES as string[]}
          value={state ?? null}
          onChange={(next) => setParams(searchOf({ state: TOKEN_STATES.find((known) => known === next) }))}
          w={220}
          mb="md"
        />
        {tokens.isError && <ProblemAlert error={tokens.error} mb="md" />}
        <TokenTable tokens={tokens.data?.items ?? []} canRevoke={canOperate} onRevoked={refresh} />
        <CursorPager filters={{ state, cursor }} nextCursor={tokens.data?.nextCursor} setParams={setParams} />
      </Section>
    </Stack>
  );
}
