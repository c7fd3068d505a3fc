/**
 * What an operator may do to a rollout from its current state — start, pause, resume, abort,
 * roll back — each after a confirmation, sent with `If-Match`: the ETag of the rollout as the
 * page shows it, so an operation decided on a view that has since changed is refused (412)
 * rather than applied to a rollout the operator has not seen. The problem shows in the dialog.
 * A federated rollout's page offers its own operations the same way (`OperationButtons`).
 */
import { Group } from '@mantine/core';
import { api, ifMatch, ok } from '../../api/client';
import { ConfirmButton } from '../../components/ConfirmButton';
import type { RolloutState } from './rolloutStates';

/** The call's parameters: the rollout, and the ETag the page shows it with as If-Match. */
export function target(id: string, etag: string | null) {
  return { params: { path: { id }, header: ifMatch(etag) } };
}

export interface Operation<State extends string> {
  label: string;
  /** The states the API accepts it from (docs/rollouts.md, States; docs/federation.md, Operations). */
  from: readonly State[];
  question: string;
  danger?: boolean;
  send: (id: string, etag: string | null) => Promise<unknown>;
}

const OPERATIONS: readonly Operation<RolloutState>[] = [
  {
    label: 'Start',
    from: ['pending'],
    question: 'Start the rollout? The approved policies judge every target agent first, then the batches run.',
    send: (id, etag) => ok(api.POST('/api/rollouts/{id}/start', target(id, etag))),
  },
  {
    label: 'Pause',
    from: ['scheduled', 'running'],
    question: 'Pause the rollout? The batch being applied finishes; the next one waits until it is resumed.',
    send: (id, etag) => ok(api.POST('/api/rollouts/{id}/pause', target(id, etag))),
  },
  {
    label: 'Resume',
    from: ['paused'],
    question:
      'Resume the rollout? The next batch follows once the bake is over (a rollout whose start time is ahead is scheduled again).',
    send: (id, etag) => ok(api.POST('/api/rollouts/{id}/resume', target(id, etag))),
  },
  {
    label: 'Abort',
    from: ['pending', 'scheduled', 'running', 'paused'],
    question: 'Abort the rollout? No further batch is pushed; agents already pushed keep their configuration.',
    danger: true,
    send: (id, etag) => ok(api.POST('/api/rollouts/{id}/abort', target(id, etag))),
  },
  {
    label: 'Roll back',
    from: ['running', 'paused', 'completed', 'failed', 'aborted'],
    question: 'Roll back the rollout? Every agent it pushed to gets the configuration version it had before.',
    danger: true,
    send: (id, etag) => ok(api.POST('/api/rollouts/{id}/rollback', target(id, etag))),
  },
];

export function RolloutOperations(props: { id: string; state: RolloutState; etag: string | null; onDone: () => void }) {
  return <OperationButtons operations={OPERATIONS} {...props} />;
}

/** A button for each operation `state` allows, each asking first; nothing when none does. */
export function OperationButtons<State extends string>(props: {
  operations: readonly Operation<State>[];
  id: string;
  state: State;
  etag: string | null;
  onDone: () => void;
}) {
  const offered = props.operations.filter((operation) => operation.from.includes(props.state));
  if (offered.length === 0) return null;
  return (
    <Group mb="md" role="group" aria-label="Operations">
      {offered.map((operation) => (
        <ConfirmButton
          key={operation.label}
          label={operation.label}
          question={operation.question}
          color={operation.danger ? 'red.9' : undefined}
          action={() => operation.send(props.id, props.etag)}
          onDone={props.onDone}
        />
      ))}
    </Group>
  );
}
