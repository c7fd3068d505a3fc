/**
 * One group: its name, description, labels and member count, and its members in the API's
 * cursor pages (in the URL). Operators and admins change it, add agents to it, delete it
 * once empty and restore it, each sent with If-Match = the ETag of the group as shown, so a
 * group changed meanwhile is refused (412) and the problem shows where the write was made.
 */
import { Anchor, Button, Code, Group, Skeleton, Stack, Table } from '@mantine/core';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useParams, useSearchParams } from 'react-router';
import { api, ifMatch, noContent, ok, type Schemas } from '../../api/client';
import { useLiveRefresh, type CloudEvent } from '../../api/live';
import { AGENT_EVENTS } from '../Agents';
import { AddAgents } from './AddAgents';
import { may, useSession } from '../../api/session';
import { ConfirmButton } from '../../components/ConfirmButton';
import { CursorPager } from '../../components/CursorPager';
import { EmptyRow } from '../../components/EmptyRow';
import { PageTitle } from '../../components/PageTitle';
import { ProblemAlert } from '../../components/ProblemAlert';
import { Facts, Section } from '../AgentDetail';
import { StatusBadge } from '../Agents';
import { PAGE_SIZE } from './filters';
import { GroupFormModal } from './GroupForm';
import { searchAgents, SearchSelect, type Choice } from './SearchSelect';
import {
  DeletedBadge,
  GROUP_EVENTS,
  GROUPS_KEY,
  labelsText,
  useGroup,
  useRefreshGroups,
  type GroupBody,
} from './shared';

/** The group the API creates for agents without one: it cannot be renamed or deleted (409). */
const DEFAULT_GROUP = 'default';

interface Shown {
  group: GroupBody;
  etag: string | null;
}

/**
 * The form is filled from the group as shown when it opens, and saved with that view's ETag:
 * the page keeps following live changes meanwhile, and saving over one of them must be 412,
 * not a silent overwrite of a change the form never showed.
 */
function EditGroup(shown: Shown) {
  const [filledFrom, setFilledFrom] = useState<Shown | null>(null);
  const refresh = useRefreshGroups();
  const close = () => setFilledFrom(null);
  return (
    <>
      <Button onClick={() => setFilledFrom(shown)}>Edit</Button>
      <GroupFormModal
        opened={filledFrom !== null}
        title={`Edit ${shown.group.name}`}
        initial={filledFrom?.group}
        save={(body) =>
          ok(
            api.PUT('/api/groups/{id}', {
              params: { path: { id: shown.group.id }, header: ifMatch(filledFrom?.etag ?? null) },
              body,
            }),
          )
        }
        // A save refused with 412: the group as it is now, whose ETag the next save sends.
        reload={async () => {
          const call = api.GET('/api/groups/{id}', { params: { path: { id: shown.group.id } } });
          const group = await ok(call);
          setFilledFrom({ group, etag: (await call).response.headers.get('ETag') });
          return group;
        }}
        onSaved={() => {
          close();
          refresh();
        }}
        onCancel={close}
      />
    </>
  );
}

function GroupActions({ group, etag }: Shown) {
  const refresh = useRefreshGroups();
  const target = { params: { path: { id: group.id }, header: ifMatch(etag) } };
  if (group.deletedAt) {
    return (
      <Group mb="md" role="group" aria-label="Operations">
        <ConfirmButton
          label="Restore"
          question={`Restore ${group.name}? It becomes a live group again, under its name.`}
          action={() => ok(api.POST('/api/groups/{id}/restore', target))}
          onDone={refresh}
        />
      </Group>
    );
  }
  return (
    <Group mb="md" role="group" aria-label="Operations">
      <AddAgents groupId={group.id} groupName={group.name} />
      <EditGroup group={group} etag={etag} />
      {group.name !== DEFAULT_GROUP && (
        <ConfirmButton
          label="Delete"
          color="red.9"
          question={`Delete ${group.name}? Only an empty group can be deleted; it can be restored later.`}
          action={() => noContent(api.DELETE('/api/groups/{id}', target))}
          onDone={refresh}
        />
      )}
    </Group>
  );
}

function AddMember({ group, etag }: Shown) {
  const refresh = useRefreshGroups();
  const [agent, setAgent] = useState<Choice | null>(null);
  return (
    <Group align="end" mb="sm">
      <SearchSelect
        label="Agent to add"
        placeholder="Name or id"
        queryKey={[...GROUPS_KEY, 'agent-choices']}
        search={searchAgents}
        chosen={agent}
        onChoose={setAgent}
      />
      <ConfirmButton
        label="Add to group"
        disabled={!agent}
        question={`Move ${agent?.label ?? ''} into ${group.name}? It leaves the group it is in.`}
        action={() =>
          ok(
            api.POST('/api/groups/{id}/members', {
              params: { path: { id: group.id }, header: ifMatch(etag) },
              body: { agentId: agent?.value ?? '' },
            }),
          )
        }
        onDone={() => {
          setAgent(null);
          refresh();
        }}
      />
    </Group>
  );
}

function MemberRows({ agents }: { agents: Schemas['Agent'][] }) {
  if (agents.length === 0) {
    return <EmptyRow columns={3}>No agent in this group.</EmptyRow>;
  }
  return agents.map((agent) => (
    <Table.Tr key={agent.id}>
      <Table.Td>
        <Anchor component={Link} to={`/agents/${agent.id}`}>
          {agent.name}
        </Anchor>
      </Table.Td>
      <Table.Td>
        <StatusBadge status={agent.status} />
      </Table.Td>
      <Table.Td>{agent.lastSeenAt ? new Date(agent.lastSeenAt).toLocaleString() : 'never'}</Table.Td>
    </Table.Tr>
  ));
}

/** The members, by id, in the API's cursor pages (`?cursor=` in the URL). */
function Members({ shown, canAdd }: { shown: Shown; canAdd: boolean }) {
  const [params, setParams] = useSearchParams();
  const cursor = params.get('cursor') || undefined;
  const id = shown.group.id;
  const members = useQuery({
    queryKey: [...GROUPS_KEY, 'members', id, cursor],
    queryFn: () =>
      ok(api.GET('/api/groups/{id}/members', { params: { path: { id }, query: { cursor, limit: PAGE_SIZE } } })),
    placeholderData: keepPreviousData,
  });
  return (
    <Section title="Members">
      {canAdd && <AddMember {...shown} />}
      {members.isError && <ProblemAlert error={members.error} mb="sm" />}
      <Table striped aria-label="Members">
        <Table.Thead>
          <Table.Tr>
            <Table.Th scope="col">Agent</Table.Th>
            <Table.Th scope="col">Status</Table.Th>
            <Table.Th scope="col">Last seen</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          <MemberRows agents={members.data?.items ?? []} />
        </Table.Tbody>
      </Table>
      <CursorPager filters={{ cursor }} nextCursor={members.data?.nextCursor} setParams={setParams} />
    </Section>
  );
}

function GroupFacts({ group }: { group: GroupBody }) {
  const when = (time: string) => new Date(time).toLocaleString();
  return (
    <Section title="Group">
      <Facts
        rows={[
          ['State', group.deletedAt ? <DeletedBadge key="state" group={group} /> : 'live'],
          ['Description', group.description || 'none'],
          ['Labels', labelsText(group.labels)],
          ['Members', String(group.memberCount)],
          ['Created', when(group.createdAt)],
          ['Updated', when(group.updatedAt)],
          ...(group.deletedAt ? [['Deleted', when(group.deletedAt)] as [string, string]] : []),
          ['Id', <Code key="id">{group.id}</Code>],
        ]}
      />
    </Section>
  );
}

/**
 * This group's own events: its changes, agents moved into or out of it, agents enrolling into
 * it, and any member's status (a connection's events do not name the group, so every one
 * reads the members' page again, at most once a second).
 */
const concerns = (id: string) => (event: CloudEvent) =>
  event.subject === id ||
  event.data.fromGroupId === id ||
  event.data.toGroupId === id ||
  event.data.groupId === id ||
  (event.type.startsWith('agent.') && event.type !== 'agent.moved');

export function GroupDetailPage() {
  const { id = '' } = useParams();
  const session = useSession();
  const found = useGroup(id);
  useLiveRefresh(
    [...GROUP_EVENTS, ...AGENT_EVENTS],
    [
      [...GROUPS_KEY, 'one', id],
      [...GROUPS_KEY, 'members', id],
    ],
    concerns(id),
  );
  const shown = found.data && { group: found.data.group, etag: found.data.etag };
  const operator = session.data !== undefined && may(session.data, 'operate');
  return (
    <Stack gap="md">
      <Anchor component={Link} to="/groups">
        ← All groups
      </Anchor>
      <PageTitle>{shown ? shown.group.name : 'Group'}</PageTitle>
      {found.isError && <ProblemAlert error={found.error} />}
      <Skeleton visible={found.isPending}>
        {shown && operator && <GroupActions {...shown} />}
        {shown && <GroupFacts group={shown.group} />}
      </Skeleton>
      {shown && <Members shown={shown} canAdd={operator && !shown.group.deletedAt} />}
    </Stack>
  );
}
