/**
 * Moving an agent to another group from its page (operators, admins): a group found by
 * name, then a confirmation. Agents are not concurrency-controlled (no ETag), so the move
 * sends no If-Match; a deleted target is the API's 409, shown in the dialog.
 */
import { Group } from '@mantine/core';
import { useState } from 'react';
import { api, ok, type Schemas } from '../../api/client';
import { ConfirmButton } from '../../components/ConfirmButton';
import { GROUPS_KEY } from './shared';
import { searchGroups, SearchSelect, type Choice } from './SearchSelect';

export function MoveAgent({ agent, onDone }: { agent: Schemas['Agent']; onDone: () => void }) {
  const [group, setGroup] = useState<Choice | null>(null);
  return (
    <Group align="end" mb="md" role="group" aria-label="Move to another group">
      <SearchSelect
        label="Move to group"
        placeholder="Group name"
        queryKey={[...GROUPS_KEY, 'move-choices']}
        search={searchGroups}
        chosen={group}
        onChoose={setGroup}
      />
      <ConfirmButton
        label="Move"
        disabled={!group || group.value === agent.groupId}
        question={`Move ${agent.name} to group ${group?.label ?? ''}? It leaves the group it is in.`}
        action={() =>
          ok(
            api.POST('/api/agents/{id}/move', {
              params: { path: { id: agent.id } },
              body: { groupId: group?.value ?? '' },
            }),
          )
        }
        onDone={() => {
          setGroup(null);
          onDone();
        }}
      />
    </Group>
  );
}
