/**
 * The tenant's bootstrap tokens, newest first: the API's filters (state, pool, group) and
 * cursor pages, all in the URL; operators issue one (its token shown once) and revoke one
 * after a confirmation.
 */
import { Anchor, Group, Select, Skeleton } from '@mantine/core';
import { Link, useSearchParams } from 'react-router';
import { useLiveRefresh } from '../../api/live';
import { may, useSession } from '../../api/session';
import { CursorPager } from '../../components/CursorPager';
import { PageTitle } from '../../components/PageTitle';
import { ProblemAlert } from '../../components/ProblemAlert';
import { searchOf } from '../agentFilters';
import { IssueToken } from './IssueToken';
import { TokenTable } from './TokenTable';
import { TOKEN_STATES, tokenFiltersFrom, type TokenFilters } from './filters';
import { TOKEN_EVENTS, TOKENS_KEY, usePoolChoices, useRefreshTokens, useTokens } from './shared';
import { GROUPS_KEY, useGroup } from '../groups/shared';
import { searchGroups, SearchSelect } from '../groups/SearchSelect';

/** Each filter applies when chosen, from the first page. */
function Filters({ filters, apply }: { filters: TokenFilters; apply: (next: TokenFilters) => void }) {
  const pools = usePoolChoices();
  const group = useGroup(filters.groupId ?? '', filters.groupId !== undefined);
  const { cursor: _cursor, ...current } = filters;
  return (
    <Group role="search" aria-label="Filter bootstrap tokens" align="end" mb="md">
      <Select
        label="State"
        placeholder="Any state"
        clearable
        data={TOKEN_STATES as string[]}
        value={filters.state ?? null}
        onChange={(state) => apply({ ...current, state: TOKEN_STATES.find((known) => known === state) })}
      />
      <Select
        label="Pool"
        placeholder="Any pool"
        clearable
        searchable
        data={(pools.data?.items ?? []).map((pool) => ({ value: pool.id, label: pool.name }))}
        value={filters.poolId ?? null}
        onChange={(poolId) => apply({ ...current, poolId: poolId ?? undefined })}
      />
      <SearchSelect
        label="Group"
        placeholder="Any group"
        queryKey={[...GROUPS_KEY, 'token-filter-choices']}
        search={searchGroups}
        chosen={filters.groupId ? { value: filters.groupId, label: group.data?.group.name ?? filters.groupId } : null}
        onChoose={(choice) => apply({ ...current, groupId: choice?.value })}
      />
    </Group>
  );
}

export function BootstrapTokensPage() {
  const [params, setParams] = useSearchParams();
  const session = useSession();
  const refresh = useRefreshTokens();
  const filters = tokenFiltersFrom(params);
  const tokens = useTokens(filters);
  useLiveRefresh(TOKEN_EVENTS, [[...TOKENS_KEY, 'list']]);
  const canOperate = session.data !== undefined && may(session.data, 'operate');
  return (
    <>
      <Group justify="space-between" align="start">
        <PageTitle>Bootstrap tokens</PageTitle>
        <Group>
          <Anchor component={Link} to="/tokens/pools">
            Token pools
          </Anchor>
          {canOperate && <IssueToken />}
        </Group>
      </Group>
      <Filters filters={filters} apply={(next) => setParams(searchOf(next))} />
      {tokens.isError && <ProblemAlert error={tokens.error} mb="md" />}
      <Skeleton visible={tokens.isPending}>
        <TokenTable tokens={tokens.data?.items ?? []} canRevoke={canOperate} onRevoked={refresh} />
      </Skeleton>
      <CursorPager filters={filters} nextCursor={tokens.data?.nextCursor} setParams={setParams} />
    </>
  );
}
