/** What the group pages share: the group query with its ETag, labels as text, paging, writes. */
import { Anchor, Badge } from '@mantine/core';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { Link } from 'react-router';
import { api, ok, type Schemas } from '../../api/client';

export type GroupBody = Schemas['Group'];

/** Every query of the group pages starts with this key: one invalidation refreshes them. */
export const GROUPS_KEY = ['groups'];

/** The events that change what the group pages show. */
export const GROUP_EVENTS = ['group.*', 'agent.moved'];

/** The group with its ETag, which every write sends back as If-Match. */
export function groupQuery(id: string) {
  return {
    queryKey: [...GROUPS_KEY, 'one', id],
    queryFn: async () => {
      const call = api.GET('/api/groups/{id}', { params: { path: { id } } });
      const group = await ok(call);
      return { group, etag: (await call).response.headers.get('ETag') };
    },
  };
}

export function useGroup(id: string, enabled = true) {
  return useQuery({ ...groupQuery(id), enabled });
}

export function useRefreshGroups(): () => void {
  const queryClient = useQueryClient();
  return () => void queryClient.invalidateQueries({ queryKey: GROUPS_KEY });
}

/** Labels as the pages write them, each `key=value`, by key (the API keeps no order: jsonb). */
export const labelPairs = (labels: Record<string, string>) =>
  Object.keys(labels)
    .sort()
    .map((key) => `${key}=${labels[key]}`);

export const labelsText = (labels: Record<string, string>) => labelPairs(labels).join(', ') || 'none';

export function DeletedBadge({ group }: { group: GroupBody }) {
  if (!group.deletedAt) return null;
  return (
    <Badge component="span" variant="filled" color="red.9">
      deleted
    </Badge>
  );
}

/**
 * A group by its name, linking to its page (an agent's group, a rollout's target), marked when
 * deleted; its id while the name loads or when it is gone. Inline, so it can stand in a sentence.
 */
export function GroupLink({ id }: { id: string }) {
  const found = useGroup(id);
  return (
    <span>
      <Anchor component={Link} to={`/groups/${id}`}>
        {found.data?.group.name ?? id}
      </Anchor>
      {found.data?.group.deletedAt && ' '}
      {found.data && <DeletedBadge group={found.data.group} />}
    </span>
  );
}
