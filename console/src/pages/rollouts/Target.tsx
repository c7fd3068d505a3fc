/** Whom a rollout targets, as a rollout's page and a Git source's rollout template show it. */
import { Stack } from '@mantine/core';
import type { Schemas } from '../../api/client';
import { GroupLink } from '../groups/shared';

type Target = Schemas['RolloutTarget'];

/** A label selector as `key=value` pairs, comma separated. */
export function selectorText(selector: Target['labelSelector']): string | undefined {
  if (!selector) return undefined;
  return Object.entries(selector)
    .map(([key, value]) => `${key}=${value}`)
    .join(', ');
}

/** Its groups by name (linked), its agents, its label selector. */
export function RolloutTarget({ target }: { target: Target }) {
  const labels = selectorText(target.labelSelector);
  return (
    <Stack gap={2}>
      {target.groupIds.length > 0 && (
        <span>
          {target.groupIds.length === 1 ? 'group ' : 'groups '}
          {target.groupIds.map((id, i) => (
            <span key={id}>
              {i > 0 && ', '}
              <GroupLink id={id} />
            </span>
          ))}
        </span>
      )}
      {target.agentIds.length > 0 && <span>agents {target.agentIds.join(', ')}</span>}
      {labels && <span>labels {labels}</span>}
    </Stack>
  );
}
