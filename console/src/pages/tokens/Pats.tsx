/**
 * The tenant's personal access tokens (PATs, for automation), newest first: the API's filters
 * (role, state) and cursor pages, all in the URL. The API lets only admins list, issue and
 * revoke them; anyone else sees its refusal. An admin issues one (its token shown once) and
 * revokes one after a confirmation, which takes effect on every replica at once.
 */
import { Button, Group, Modal, NumberInput, Select, Skeleton, Table, Textarea, TextInput } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { useSearchParams } from 'react-router';
import { api, ok, type Schemas } from '../../api/client';
import { useLiveRefresh } from '../../api/live';
import { may, useSession } from '../../api/session';
import { FormFooter } from '../../components/FormFooter';
import { ConfirmButton } from '../../components/ConfirmButton';
import { CursorPager } from '../../components/CursorPager';
import { EmptyRow } from '../../components/EmptyRow';
import { PageTitle } from '../../components/PageTitle';
import { ProblemAlert } from '../../components/ProblemAlert';
import { searchOf } from '../agentFilters';
import { SecretDialog, useSecretMutation } from './SecretOnce';
import { PAGE_SIZE, TokenStateBadge, when } from './shared';

type Pat = Schemas['Pat'];
type Role = Pat['role'];
type PatState = Pat['state'];

const ROLES: readonly Role[] = ['viewer', 'operator', 'auditor', 'admin', 'peer'];
const PAT_STATES: readonly PatState[] = ['active', 'revoked', 'expired'];
const PATS_KEY = ['pats'];
const PAT_EVENTS = ['pat.*'];

interface PatFilters {
  role?: Role;
  state?: PatState;
  cursor?: string;
}

function patFiltersFrom(params: URLSearchParams): PatFilters {
  return {
    role: ROLES.find((role) => role === params.get('role')),
    state: PAT_STATES.find((state) => state === params.get('state')),
    cursor: params.get('cursor') || undefined,
  };
}

/** The allowed endpoints as typed, one a line; none means the token may call what its role allows. */
const endpointsOf = (text: string) =>
  text
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);

function CreatePat({ onCreated }: { onCreated: () => void }) {
  const [opened, { open, close }] = useDisclosure(false);
  const [name, setName] = useState('');
  const [role, setRole] = useState<Role>('viewer');
  const [endpoints, setEndpoints] = useState('');
  const [expiresInDays, setExpiresInDays] = useState<number | string>('');
  const create = useSecretMutation(
    () => {
      const allowedEndpoints = endpointsOf(endpoints);
      return ok(
        api.POST('/api/pats', {
          body: {
            name,
            role,
            ...(allowedEndpoints.length > 0 && { allowedEndpoints }),
            ...(expiresInDays !== '' && { expiresInDays: Number(expiresInDays) }),
          },
        }),
      );
    },
    () => {
      close();
      onCreated();
    },
  );
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate();
  };
  return (
    <>
      <Button onClick={open}>New access token</Button>
      <Modal opened={opened} onClose={close} title="New access token" closeButtonProps={{ 'aria-label': 'Close' }}>
        <form onSubmit={submit} aria-label="New access token">
          <TextInput label="Name" required value={name} onChange={(e) => setName(e.currentTarget.value)} mb="sm" />
          <Select
            label="Role"
            description="Not above your own"
            required
            allowDeselect={false}
            data={ROLES as string[]}
            value={role}
            onChange={(next) => setRole(ROLES.find((known) => known === next) ?? 'viewer')}
            mb="sm"
          />
          <Textarea
            label="Allowed endpoints"
            description='Optional, one a line, e.g. "POST /api/rollouts/{id}/start"; none: all its role allows'
            autosize
            minRows={2}
            value={endpoints}
            onChange={(e) => setEndpoints(e.currentTarget.value)}
            mb="sm"
          />
          <NumberInput
            label="Expires in (days)"
            description="Optional: the tenant's default (90 days unless set)"
            min={1}
            max={3650}
            allowDecimal={false}
            value={expiresInDays}
            onChange={setExpiresInDays}
            mb="md"
          />
          <FormFooter write={create} submitLabel="Create" onCancel={close} />
        </form>
      </Modal>
      <SecretDialog
        title={`Access token ${create.data?.name ?? ''}`}
        label="Access token"
        secret={create.data?.secret}
        onClose={create.forget}
      />
    </>
  );
}

function RevokePat({ pat, onDone }: { pat: Pat; onDone: () => void }) {
  return (
    <ConfirmButton
      label={`Revoke ${pat.name}`}
      size="xs"
      color="red.9"
      question={`Revoke the access token ${pat.name}? Every call made with it is refused from now on, on every replica.`}
      action={() => ok(api.POST('/api/pats/{id}/revoke', { params: { path: { id: pat.id } } }))}
      onDone={onDone}
    />
  );
}

function PatRows({ pats, canRevoke, onRevoked }: { pats: Pat[]; canRevoke: boolean; onRevoked: () => void }) {
  if (pats.length === 0) {
    return <EmptyRow columns={canRevoke ? 8 : 7}>No access token matches these filters.</EmptyRow>;
  }
  return pats.map((pat) => (
    <Table.Tr key={pat.id}>
      <Table.Td>{pat.name}</Table.Td>
      <Table.Td>{pat.role}</Table.Td>
      <Table.Td>
        <TokenStateBadge state={pat.state} />
      </Table.Td>
      <Table.Td>{pat.allowedEndpoints?.join(', ') ?? 'all its role allows'}</Table.Td>
      <Table.Td>{when(pat.expiresAt)}</Table.Td>
      <Table.Td>{when(pat.lastUsedAt)}</Table.Td>
      <Table.Td>
        {pat.createdBy}, {when(pat.createdAt)}
      </Table.Td>
      {canRevoke && <Table.Td>{pat.state === 'active' && <RevokePat pat={pat} onDone={onRevoked} />}</Table.Td>}
    </Table.Tr>
  ));
}

function PatTable(props: { pats: Pat[]; canRevoke: boolean; onRevoked: () => void }) {
  return (
    <Table striped highlightOnHover aria-label="Access tokens">
      <Table.Thead>
        <Table.Tr>
          <Table.Th scope="col">Name</Table.Th>
          <Table.Th scope="col">Role</Table.Th>
          <Table.Th scope="col">State</Table.Th>
          <Table.Th scope="col">Allowed endpoints</Table.Th>
          <Table.Th scope="col">Expires</Table.Th>
          <Table.Th scope="col">Last used</Table.Th>
          <Table.Th scope="col">Created</Table.Th>
          {props.canRevoke && <Table.Th scope="col">Actions</Table.Th>}
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        <PatRows {...props} />
      </Table.Tbody>
    </Table>
  );
}

function Filters({ filters, apply }: { filters: PatFilters; apply: (next: PatFilters) => void }) {
  const { cursor: _cursor, ...current } = filters;
  return (
    <Group role="search" aria-label="Filter access tokens" align="end" mb="md">
      <Select
        label="Role"
        placeholder="Any role"
        clearable
        data={ROLES as string[]}
        value={filters.role ?? null}
        onChange={(role) => apply({ ...current, role: ROLES.find((known) => known === role) })}
      />
      <Select
        label="State"
        placeholder="Any state"
        clearable
        data={PAT_STATES as string[]}
        value={filters.state ?? null}
        onChange={(state) => apply({ ...current, state: PAT_STATES.find((known) => known === state) })}
      />
    </Group>
  );
}

export function PatsPage() {
  const [params, setParams] = useSearchParams();
  const session = useSession();
  const filters = patFiltersFrom(params);
  const pats = useQuery({
    queryKey: [...PATS_KEY, 'list', filters],
    queryFn: () => ok(api.GET('/api/pats', { params: { query: { ...filters, limit: PAGE_SIZE } } })),
    placeholderData: keepPreviousData,
  });
  useLiveRefresh(PAT_EVENTS, [PATS_KEY]);
  const isAdmin = session.data !== undefined && may(session.data, 'admin');
  const refresh = () => void pats.refetch();
  return (
    <>
      <Group justify="space-between" align="start">
        <PageTitle>Access tokens</PageTitle>
        {isAdmin && <CreatePat onCreated={refresh} />}
      </Group>
      <Filters filters={filters} apply={(next) => setParams(searchOf(next))} />
      {/* A refusal (only admins may list them) shows alone: an empty table would say there are none. */}
      {pats.isError ? (
        <ProblemAlert error={pats.error} mb="md" />
      ) : (
        <>
          <Skeleton visible={pats.isPending}>
            <PatTable pats={pats.data?.items ?? []} canRevoke={isAdmin} onRevoked={refresh} />
          </Skeleton>
          <CursorPager filters={filters} nextCursor={pats.data?.nextCursor} setParams={setParams} />
        </>
      )}
    </>
  );
}
