/**
 * The tenant's bootstrap token pools, newest first, in the API's cursor pages (in the URL):
 * how many of its tokens are active against its maximum; operators create one.
 */
import { Anchor, Button, Group, Modal, NumberInput, Skeleton, Table, TextInput } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { keepPreviousData, useMutation, useQuery } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { Link, useNavigate, useSearchParams } from 'react-router';
import { GroupLink } from '../groups/shared';
import { api, ok } from '../../api/client';
import { useLiveRefresh } from '../../api/live';
import { may, useSession } from '../../api/session';
import { FormFooter } from '../../components/FormFooter';
import { CursorPager } from '../../components/CursorPager';
import { EmptyRow } from '../../components/EmptyRow';
import { PageTitle } from '../../components/PageTitle';
import { ProblemAlert } from '../../components/ProblemAlert';
import {
  duration,
  GroupSelect,
  inSeconds,
  LifetimeInput,
  PAGE_SIZE,
  TOKEN_EVENTS,
  TOKENS_KEY,
  when,
  type Lifetime,
  type Pool,
} from './shared';

function CreatePool() {
  const navigate = useNavigate();
  const [opened, { open, close }] = useDisclosure(false);
  const [name, setName] = useState('');
  const [groupId, setGroupId] = useState<string | null>(null);
  const [lifetime, setLifetime] = useState<Lifetime>({ amount: 24, unit: '3600' });
  const [tokenMaxUses, setTokenMaxUses] = useState<number | string>(1);
  const [maxActiveTokens, setMaxActiveTokens] = useState<number | string>(10);
  const create = useMutation({
    mutationFn: () =>
      ok(
        api.POST('/api/tokens/pools', {
          body: {
            name,
            ...(groupId && { groupId }),
            tokenTtlSeconds: inSeconds(lifetime),
            tokenMaxUses: Number(tokenMaxUses),
            maxActiveTokens: Number(maxActiveTokens),
          },
        }),
      ),
    onSuccess: (pool) => void navigate(`/tokens/pools/${pool.id}`),
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate();
  };
  return (
    <>
      <Button onClick={open}>New pool</Button>
      <Modal opened={opened} onClose={close} title="New token pool" closeButtonProps={{ 'aria-label': 'Close' }}>
        <form onSubmit={submit} aria-label="New token pool">
          <TextInput label="Name" required value={name} onChange={(e) => setName(e.currentTarget.value)} mb="sm" />
          <GroupSelect value={groupId} onChange={setGroupId} />
          <LifetimeInput label="Each token expires in" value={lifetime} onChange={setLifetime} />
          <NumberInput
            label="Enrollments per token"
            min={1}
            allowDecimal={false}
            value={tokenMaxUses}
            onChange={setTokenMaxUses}
            mb="sm"
          />
          <NumberInput
            label="Active tokens at most"
            description="Issuing is refused at this many active tokens"
            min={1}
            allowDecimal={false}
            value={maxActiveTokens}
            onChange={setMaxActiveTokens}
            mb="md"
          />
          <FormFooter write={create} submitLabel="Create" onCancel={close} />
        </form>
      </Modal>
    </>
  );
}

function PoolRows({ pools }: { pools: Pool[] }) {
  if (pools.length === 0) {
    return <EmptyRow columns={6}>No token pool yet.</EmptyRow>;
  }
  return pools.map((pool) => (
    <Table.Tr key={pool.id}>
      <Table.Td>
        <Anchor component={Link} to={`/tokens/pools/${pool.id}`}>
          {pool.name}
        </Anchor>
      </Table.Td>
      <Table.Td>
        <GroupLink id={pool.groupId} />
      </Table.Td>
      <Table.Td>
        {pool.activeTokens} of {pool.maxActiveTokens}
      </Table.Td>
      <Table.Td>{duration(pool.tokenTtlSeconds)}</Table.Td>
      <Table.Td>{pool.tokenMaxUses}</Table.Td>
      <Table.Td>
        {pool.createdBy}, {when(pool.createdAt)}
      </Table.Td>
    </Table.Tr>
  ));
}

export function PoolsPage() {
  const [params, setParams] = useSearchParams();
  const session = useSession();
  const filters = { cursor: params.get('cursor') || undefined };
  const pools = useQuery({
    queryKey: [...TOKENS_KEY, 'pools', 'list', filters],
    queryFn: () => ok(api.GET('/api/tokens/pools', { params: { query: { ...filters, limit: PAGE_SIZE } } })),
    placeholderData: keepPreviousData,
  });
  useLiveRefresh(TOKEN_EVENTS, [[...TOKENS_KEY, 'pools', 'list']]);
  return (
    <>
      <Group justify="space-between" align="start">
        <PageTitle>Token pools</PageTitle>
        {session.data && may(session.data, 'operate') && <CreatePool />}
      </Group>
      {pools.isError && <ProblemAlert error={pools.error} mb="md" />}
      <Skeleton visible={pools.isPending}>
        <Table striped highlightOnHover aria-label="Token pools">
          <Table.Thead>
            <Table.Tr>
              <Table.Th scope="col">Name</Table.Th>
              <Table.Th scope="col">Group</Table.Th>
              <Table.Th scope="col">Active tokens</Table.Th>
              <Table.Th scope="col">Token lifetime</Table.Th>
              <Table.Th scope="col">Enrollments per token</Table.Th>
              <Table.Th scope="col">Created</Table.Th>
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>
            <PoolRows pools={pools.data?.items ?? []} />
          </Table.Tbody>
        </Table>
      </Skeleton>
      <CursorPager filters={filters} nextCursor={pools.data?.nextCursor} setParams={setParams} />
    </>
  );
}
