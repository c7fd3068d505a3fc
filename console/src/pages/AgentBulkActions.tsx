/**
 * Acting at once on the agents chosen on a page of the inventory: move them to a group
 * (operators, admins) or revoke them (admins). Each agent is its own call, one after the
 * other (`POST /api/agents/{id}/move`, `…/revoke-cert`), so each is audited under its agent
 * exactly as the same change made from the agent's page; the dialog counts them as they go
 * and names every agent the API refused with its problem (the others are done: a refusal
 * stops nothing). At most a page of agents (25) is chosen.
 */
import { Button, Group, List, Modal, Progress, Text } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { useState } from 'react';
import { api, ApiProblem, ok, type Schemas } from '../api/client';
import { may, type Session } from '../api/session';
import { GROUPS_KEY } from './groups/shared';
import { searchGroups, SearchSelect, type Choice } from './groups/SearchSelect';

type Agent = Schemas['Agent'];

interface Run {
  /** The agents chosen when it started (the list may change under it). */
  agents: Agent[];
  done: number;
  refused: Array<{ agent: Agent; why: string }>;
  finished: boolean;
}

const reasonOf = (error: unknown) =>
  error instanceof ApiProblem ? [error.title, error.detail].filter(Boolean).join(': ') : String(error);

/** One action over the chosen agents: a button, then a dialog that asks, runs and reports. */
function BulkAction({
  label,
  question,
  color,
  disabled,
  agents,
  act,
  onDone,
}: {
  label: string;
  question: string;
  color?: string;
  disabled?: boolean;
  agents: Agent[];
  act: (agent: Agent) => Promise<unknown>;
  onDone: () => void;
}) {
  const [opened, { open, close }] = useDisclosure(false);
  const [run, setRun] = useState<Run | null>(null);
  const start = async () => {
    const chosen = [...agents];
    const refused: Run['refused'] = [];
    setRun({ agents: chosen, done: 0, refused, finished: false });
    for (const [i, agent] of chosen.entries()) {
      try {
        await act(agent);
      } catch (error) {
        refused.push({ agent, why: reasonOf(error) });
      }
      setRun({ agents: chosen, done: i + 1, refused: [...refused], finished: false });
    }
    setRun({ agents: chosen, done: chosen.length, refused, finished: true });
  };
  // The list is read again and the choice ends once the report has been read.
  const dismiss = () => {
    close();
    if (run?.finished) onDone();
    setRun(null);
  };
  const running = run !== null && !run.finished;
  return (
    <>
      <Button color={color} disabled={disabled || agents.length === 0} onClick={open}>
        {label}
      </Button>
      <Modal
        opened={opened}
        onClose={running ? () => {} : dismiss}
        title={label}
        closeButtonProps={{ 'aria-label': 'Close' }}
      >
        {run === null ? (
          <>
            <Text mb="md">{question}</Text>
            <Group justify="flex-end">
              <Button variant="default" onClick={dismiss}>
                Cancel
              </Button>
              <Button color={color} onClick={() => void start()}>
                {label}
              </Button>
            </Group>
          </>
        ) : (
          <>
            <Progress value={(run.done / run.agents.length) * 100} mb="xs" aria-hidden />
            <Text mb="md" role="status">
              {run.finished ? 'Done' : 'Working'}: {run.done - run.refused.length} of {run.agents.length} agents done
              {run.refused.length > 0 && `, ${run.refused.length} refused`}.
            </Text>
            {run.refused.length > 0 && (
              <List mb="md" aria-label="Refused">
                {run.refused.map(({ agent, why }) => (
                  <List.Item key={agent.id}>
                    {agent.name}: {why}
                  </List.Item>
                ))}
              </List>
            )}
            <Group justify="flex-end">
              <Button onClick={dismiss} disabled={running}>
                Close
              </Button>
            </Group>
          </>
        )}
      </Modal>
    </>
  );
}

export function AgentBulkActions({
  agents,
  session,
  onDone,
}: {
  agents: Agent[];
  session: Session;
  onDone: () => void;
}) {
  const [group, setGroup] = useState<Choice | null>(null);
  const count = `${agents.length} agent${agents.length === 1 ? '' : 's'}`;
  return (
    <Group align="end" mb="md" role="group" aria-label="Chosen agents">
      <Text size="sm" fw={600} pb={8}>
        {agents.length === 0 ? 'Choose agents below to move or revoke them at once' : `${count} chosen`}
      </Text>
      <SearchSelect
        label="Move to group"
        placeholder="Group name"
        queryKey={[...GROUPS_KEY, 'bulk-move-choices']}
        search={searchGroups}
        chosen={group}
        onChoose={setGroup}
      />
      <BulkAction
        label={`Move ${count}`}
        question={`Move ${count} to group ${group?.label ?? ''}? Each leaves the group it is in.`}
        disabled={!group}
        agents={agents}
        act={(agent) =>
          ok(api.POST('/api/agents/{id}/move', { params: { path: { id: agent.id } }, body: { groupId: group!.value } }))
        }
        onDone={onDone}
      />
      {may(session, 'admin') && (
        <BulkAction
          label={`Revoke ${count}`}
          color="red.9"
          question={`Revoke every certificate of ${count}? Their connections close and each must enroll again.`}
          agents={agents}
          act={(agent) => ok(api.POST('/api/agents/{id}/revoke-cert', { params: { path: { id: agent.id } } }))}
          onDone={onDone}
        />
      )}
    </Group>
  );
}
