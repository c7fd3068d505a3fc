/**
 * A rollout's states as the console shows them (docs/rollouts.md, States), and what an
 * operator may do from each. The API decides in any case; the page only offers what it allows.
 */
import { Badge } from '@mantine/core';
import type { Schemas } from '../../api/client';

export type RolloutState = Schemas['Rollout']['state'];

export const ROLLOUT_STATES: readonly RolloutState[] = [
  'pending',
  'scheduled',
  'running',
  'paused',
  'completed',
  'failed',
  'aborted',
  'rolling-back',
  'rolled-back',
];

export function isRolloutState(value: string | null): value is RolloutState {
  return (ROLLOUT_STATES as readonly (string | null)[]).includes(value);
}

// Filled badges in dark shades: white text on them keeps 4.5:1 contrast on any row.
const STATE_COLORS: Partial<Record<RolloutState, string>> = {
  scheduled: 'indigo.9',
  running: 'blue.9',
  paused: 'yellow.9',
  completed: 'teal.9',
  failed: 'red.9',
  aborted: 'red.9',
  'rolling-back': 'orange.9',
  'rolled-back': 'gray.8',
};

export function RolloutStateBadge({ state }: { state: RolloutState }) {
  return (
    <Badge variant="filled" color={STATE_COLORS[state] ?? 'gray.8'} data-testid="rollout-state">
      {state}
    </Badge>
  );
}
