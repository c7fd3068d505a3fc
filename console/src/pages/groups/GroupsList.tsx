/**
 * The tenant's groups, oldest first: the API's filters (name, label, deleted ones too) and
 * cursor pages, all in the URL; creating one for operators and admins.
 */
import { Anchor, Button, Group, Skeleton, Table } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Link, useNavigate, useSearchParams } from 'react-router';
import { api, ok } from '../../api/client';
import { useLiveRefresh } from '../../api/live';
import { may, useSession } from '../../api/session';
import { CursorPager } from '../../components/CursorPager';
import { EmptyRow } from '../../components/EmptyRow';
import { PageTitle } from '../../components/PageTitle';
import { ProblemAlert } from '../../components/ProblemAlert';
import { groupFiltersFrom, PAGE_SIZE } from './filters';
import { GroupFormModal } from './GroupForm';
import { DeletedBadge, GROUP_EVENTS, GROUPS_KEY, labelsText, type GroupBody } from './shared';
import { FilterForm, type FilterField } from '../../components/FilterForm';

const FILTERS: FilterField[] = [
  { name: 'q', label: 'Name', kind: 'text' },
  { name: 'label', label: 'Label', kind: 'text', placeholder: 'key:value' },
  { name: 'includeDeleted', label: 'Deleted groups too', kind: 'check' },
];

function CreateGroup() {
  const navigate = useNavigate();
  const [opened, { open, close }] = useDisclosure(false);
  return (
    <>
      <Button onClick={open}>New group</Button>
      <GroupFormModal
        opened={opened}
        title="New group"
        save={(body) => ok(api.POST('/api/groups', { body }))}
        onSaved={(created) => void navigate(`/groups/${created.id}`)}
        onCancel={close}
      />
    </>
  );
}

function GroupRows({ groups }: { groups: GroupBody[] }) {
  if (groups.length === 0) {
    return <EmptyRow columns={4}>No group matches these filters.</EmptyRow>;
  }
  return groups.map((group) => (
    <Table.Tr key={group.id}>
      <Table.Td>
        <Group gap="xs">
          <Anchor component={Link} to={`/groups/${group.id}`}>
            {group.name}
          </Anchor>
          <DeletedBadge group={group} />
        </Group>
      </Table.Td>
      <Table.Td>{group.memberCount}</Table.Td>
      <Table.Td>{labelsText(group.labels)}</Table.Td>
      <Table.Td>{new Date(group.createdAt).toLocaleString()}</Table.Td>
    </Table.Tr>
  ));
}

export function GroupsPage() {
  const [params, setParams] = useSearchParams();
  const session = useSession();
  const filters = groupFiltersFrom(params);
  const groups = useQuery({
    queryKey: [...GROUPS_KEY, 'list', filters],
    queryFn: () => ok(api.GET('/api/groups', { params: { query: { ...filters, limit: PAGE_SIZE } } })),
    placeholderData: keepPreviousData,
  });
  useLiveRefresh(GROUP_EVENTS, [[...GROUPS_KEY, 'list']]);
  return (
    <>
      <Group justify="space-between" align="start">
        <PageTitle>Groups</PageTitle>
        {session.data && may(session.data, 'operate') && <CreateGroup />}
      </Group>
      <FilterForm label="Filter groups" fields={FILTERS} values={filters} apply={setParams} />
      {groups.isError && <ProblemAlert error={groups.error} mb="md" />}
      <Skeleton visible={groups.isPending}>
        <Table striped highlightOnHover aria-label="Groups">
          <Table.Thead>
            <Table.Tr>
              <Table.Th scope="col">Name</Table.Th>
              <Table.Th scope="col">Members</Table.Th>
              <Table.Th scope="col">Labels</Table.Th>
              <Table.Th scope="col">Created</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            <GroupRows groups={groups.data?.items ?? []} />
          </Table.Tbody>
        </Table>
      </Skeleton>
      <CursorPager filters={filters} nextCursor={groups.data?.nextCursor} setParams={setParams} />
    </>
  );
}
