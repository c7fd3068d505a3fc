/** What the policy pages share: the policy with its ETag, its badges, refreshing, events. */
import { Badge, Group } from '@mantine/core';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { api, ok, type Schemas } from '../../api/client';

export type Policy = Schemas['Policy'];
export type PolicyState = Policy['state'];

export const POLICY_STATES: readonly PolicyState[] = ['draft', 'approved'];

/** Every query of the policy pages starts with this key: one invalidation refreshes them. */
export const POLICIES_KEY = ['policies'];

/** The events that change what the policy pages show (created, updated, approved). */
export const POLICY_EVENTS = ['policy.*'];

/** The policy with its ETag, which approve, enable, disable and save send back as If-Match. */
export function usePolicy(id: string, { staleTime = 0 }: { staleTime?: number } = {}) {
  return useQuery({
    queryKey: [...POLICIES_KEY, 'one', id],
    queryFn: async () => {
      const call = api.GET('/api/policies/{id}', { params: { path: { id } } });
      const policy = await ok(call);
      return { policy, etag: (await call).response.headers.get('ETag') };
    },
    staleTime,
  });
}

export function useRefreshPolicies(): () => void {
  const queryClient = useQueryClient();
  return () => void queryClient.invalidateQueries({ queryKey: POLICIES_KEY });
}

// Filled badges in dark shades: white text on them keeps 4.5:1 contrast on any row.
export function PolicyBadges({ policy }: { policy: Policy }) {
  return (
    <Group gap={4} wrap="nowrap">
      <Badge variant="filled" color={policy.state === 'approved' ? 'teal.9' : 'grape.9'}>
        {policy.state === 'approved' ? 'approved' : 'approval pending'}
      </Badge>
      <Badge variant="filled" color={policy.enabled ? 'blue.9' : 'gray.8'}>
        {policy.enabled ? 'enabled' : 'disabled'}
      </Badge>
      {policy.builtin && (
        <Badge variant="outline" color="violet.9">
          built-in
        </Badge>
      )}
    </Group>
  );
}

/** The API's times as this browser writes them. */
export const when = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : '—');
