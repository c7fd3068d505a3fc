/**
 * The tenant's configurations: the API's filters (name, format, label) and cursor pages,
 * all in the URL; creating one (name and format) for operators and admins.
 */
import { Anchor, Badge, Button, Group, Modal, Select, Skeleton, Table, TextInput, Textarea } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { keepPreviousData, useMutation, useQuery } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { Link, useNavigate, useSearchParams } from 'react-router';
import { api, ok, type Schemas } from '../../api/client';
import { useLiveRefresh } from '../../api/live';
import { may, useSession } from '../../api/session';
import { FormFooter } from '../../components/FormFooter';
import { CursorPager } from '../../components/CursorPager';
import { EmptyRow } from '../../components/EmptyRow';
import { PageTitle } from '../../components/PageTitle';
import { ProblemAlert } from '../../components/ProblemAlert';
import { CONFIGURATION_EVENTS, CONFIGURATIONS_KEY } from './shared';
import { configurationFiltersFrom, FORMATS, PAGE_SIZE, type Format } from './filters';
import { FilterForm, type FilterField } from '../../components/FilterForm';

const FILTERS: FilterField[] = [
  { name: 'q', label: 'Name', kind: 'text' },
  { name: 'format', label: 'Format', kind: 'choice', choices: FORMATS },
  { name: 'label', label: 'Label', kind: 'text', placeholder: 'key:value' },
];

function CreateConfiguration() {
  const navigate = useNavigate();
  const [opened, { open, close }] = useDisclosure(false);
  const [name, setName] = useState('');
  const [format, setFormat] = useState<Format>('yaml');
  const [description, setDescription] = useState('');
  const create = useMutation({
    mutationFn: () => ok(api.POST('/api/configurations', { body: { name, format, description, labels: {} } })),
    onSuccess: (created) => void navigate(`/configurations/${created.id}`),
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate();
  };
  return (
    <>
      <Button onClick={open}>New configuration</Button>
      <Modal opened={opened} onClose={close} title="New configuration" closeButtonProps={{ 'aria-label': 'Close' }}>
        <form onSubmit={submit} aria-label="New configuration">
          <TextInput label="Name" required value={name} onChange={(e) => setName(e.currentTarget.value)} mb="sm" />
          <Select
            label="Format"
            required
            allowDeselect={false}
            data={FORMATS as string[]}
            value={format}
            onChange={(value) => setFormat((value ?? 'yaml') as Format)}
            mb="sm"
          />
          <Textarea
            label="Description"
            value={description}
            onChange={(e) => setDescription(e.currentTarget.value)}
            mb="md"
          />
          <FormFooter write={create} submitLabel="Create" onCancel={close} />
        </form>
      </Modal>
    </>
  );
}

function ManagedBadge({ configuration }: { configuration: Schemas['Configuration'] }) {
  if (!configuration.managedBy) return null;
  return (
    <Badge variant="filled" color="violet.9">
      managed by Git
    </Badge>
  );
}

function ConfigurationRows({ configurations }: { configurations: Schemas['Configuration'][] }) {
  if (configurations.length === 0) {
    return <EmptyRow columns={5}>No configuration matches these filters.</EmptyRow>;
  }
  return configurations.map((configuration) => (
    <Table.Tr key={configuration.id}>
      <Table.Td>
        <Group gap="xs">
          <Anchor component={Link} to={`/configurations/${configuration.id}`}>
            {configuration.name}
          </Anchor>
          <ManagedBadge configuration={configuration} />
        </Group>
      </Table.Td>
      <Table.Td>{configuration.format}</Table.Td>
      <Table.Td>{configuration.latestVersion === 0 ? 'none' : `v${configuration.latestVersion}`}</Table.Td>
      <Table.Td>{configuration.publishedVersion ? `v${configuration.publishedVersion}` : 'none'}</Table.Td>
      <Table.Td>{new Date(configuration.updatedAt).toLocaleString()}</Table.Td>
    </Table.Tr>
  ));
}

export function ConfigurationsPage() {
  const [params, setParams] = useSearchParams();
  const session = useSession();
  const filters = configurationFiltersFrom(params);
  const configurations = useQuery({
    queryKey: [...CONFIGURATIONS_KEY, 'list', filters],
    queryFn: () => ok(api.GET('/api/configurations', { params: { query: { ...filters, limit: PAGE_SIZE } } })),
    placeholderData: keepPreviousData,
  });
  useLiveRefresh(CONFIGURATION_EVENTS, [[...CONFIGURATIONS_KEY, 'list']]);
  return (
    <>
      <Group justify="space-between" align="start">
        <PageTitle>Configurations</PageTitle>
        {session.data && may(session.data, 'operate') && <CreateConfiguration />}
      </Group>
      <FilterForm label="Filter configurations" fields={FILTERS} values={filters} apply={setParams} />
      {configurations.isError && <ProblemAlert error={configurations.error} mb="md" />}
      <Skeleton visible={configurations.isPending}>
        <Table striped highlightOnHover aria-label="Configurations">
          <Table.Thead>
            <Table.Tr>
              <Table.Th scope="col">Name</Table.Th>
              <Table.Th scope="col">Format</Table.Th>
              <Table.Th scope="col">Latest</Table.Th>
              <Table.Th scope="col">Published</Table.Th>
              <Table.Th scope="col">Updated</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            <ConfigurationRows configurations={configurations.data?.items ?? []} />
          </Table.Tbody>
        </Table>
      </Skeleton>
      <CursorPager filters={filters} nextCursor={configurations.data?.nextCursor} setParams={setParams} />
    </>
  );
}
