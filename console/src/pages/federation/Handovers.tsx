/**
 * The tenant's handovers (sender side), newest first: a state filter and the API's cursor
 * pages in the URL, refreshed on `federation.handover.*` events; admins hand agents over to
 * a peer (a peer and connected agents chosen, then confirmed).
 */
import { Anchor, Badge, Button, Group, Modal, MultiSelect, Select, Skeleton, Table } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { useRef, useState } from 'react';
import { Link, useNavigate, useSearchParams } from 'react-router';
import { api, ok, type Schemas } from '../../api/client';
import { useLiveRefresh } from '../../api/live';
import { may, useSession } from '../../api/session';
import { ColumnHeaders } from '../../components/ColumnHeaders';
import { ConfirmButton } from '../../components/ConfirmButton';
import { CursorPager } from '../../components/CursorPager';
import { EmptyRow } from '../../components/EmptyRow';
import { PageTitle } from '../../components/PageTitle';
import { ProblemAlert } from '../../components/ProblemAlert';
import { StateFilter } from '../../components/StateFilter';
import { CHOICES, usePeerChoices } from '../choices';
import { FEDERATION_KEY, FederationNav, PAGE_SIZE, when } from './shared';

type Handover = Schemas['Handover'];
type State = Handover['state'];
const STATES: readonly State[] = ['running', 'completed', 'compensated', 'failed'];
const isState = (value: string | null): value is State => (STATES as readonly (string | null)[]).includes(value);

export const HANDOVER_EVENTS = ['federation.handover.*'];
const LIST_KEY = [...FEDERATION_KEY, 'handovers', 'list'];

// Filled badges in dark shades: white text on them keeps 4.5:1 contrast on any row.
const STATE_COLORS: Record<State, string> = {
  running: 'blue.9',
  completed: 'teal.9',
  compensated: 'grape.9',
  failed: 'red.9',
};

export function HandoverStateBadge({ state }: { state: State }) {
  return (
    <Badge variant="filled" color={STATE_COLORS[state]} data-testid="handover-state">
      {state}
    </Badge>
  );
}

function useChoices() {
  const peers = usePeerChoices();
  // Only a connected agent is offered the receiver; the others would be skipped.
  const agents = useQuery({
    queryKey: ['agents', 'choices', 'online'],
    queryFn: () => ok(api.GET('/api/agents', { params: { query: { status: 'online', limit: CHOICES } } })),
  });
  return { peers, agents };
}

function NewHandoverForm() {
  const navigate = useNavigate();
  const { peers, agents } = useChoices();
  const [peerId, setPeerId] = useState<string | null>(null);
  const [agentIds, setAgentIds] = useState<string[]>([]);
  const created = useRef<string | undefined>(undefined);
  const peer = peers.data?.items.find((item) => item.id === peerId);
  const handOver = async () => {
    const handover = await ok(api.POST('/api/federation/handovers', { body: { peerId: peerId!, agentIds } }));
    created.current = handover.id;
  };
  return (
    <>
      {peers.isError && <ProblemAlert error={peers.error} mb="sm" />}
      {agents.isError && <ProblemAlert error={agents.error} mb="sm" />}
      <Select
        label="Peer"
        placeholder="The installation that takes them"
        required
        searchable
        data={(peers.data?.items ?? []).map((item) => ({ value: item.id, label: item.name }))}
        value={peerId}
        onChange={setPeerId}
        mb="sm"
      />
      <MultiSelect
        label="Agents"
        placeholder="Connected agents of this installation (name or id)"
        required
        searchable
        data={(agents.data?.items ?? []).map((agent) => ({ value: agent.id, label: `${agent.name} · ${agent.id}` }))}
        value={agentIds}
        onChange={setAgentIds}
        mb="md"
      />
      <Group justify="flex-end">
        <ConfirmButton
          label="Hand over"
          disabled={!peer || agentIds.length === 0}
          question={`Hand ${agentIds.length} agent(s) over to ${peer?.name ?? 'the peer'}? Each is offered the peer's endpoint and leaves this installation once the peer sees it; those it never sees stay here.`}
          action={handOver}
          onDone={() => void navigate(`/federation/handovers/${created.current}`)}
        />
      </Group>
    </>
  );
}

function NewHandover() {
  const [opened, { open, close }] = useDisclosure(false);
  return (
    <>
      <Button onClick={open}>New handover</Button>
      <Modal opened={opened} onClose={close} title="Hand agents over" closeButtonProps={{ 'aria-label': 'Close' }}>
        <NewHandoverForm />
      </Modal>
    </>
  );
}

function HandoverRows({ handovers }: { handovers: Handover[] }) {
  if (handovers.length === 0) {
    return <EmptyRow columns={5}>No handover matches this filter.</EmptyRow>;
  }
  return handovers.map((handover) => (
    <Table.Tr key={handover.id}>
      <Table.Td>
        <Anchor component={Link} to={`/federation/handovers/${handover.id}`}>
          {handover.id}
        </Anchor>
      </Table.Td>
      <Table.Td>{handover.peerName}</Table.Td>
      <Table.Td>
        <HandoverStateBadge state={handover.state} />
      </Table.Td>
      <Table.Td>
        {handover.counts.handedOver} of {handover.counts.total}
      </Table.Td>
      <Table.Td>
        {handover.createdBy}, {when(handover.createdAt)}
      </Table.Td>
    </Table.Tr>
  ));
}

export function HandoversPage() {
  const [params, setParams] = useSearchParams();
  const session = useSession();
  const stateParam = params.get('state');
  const query = { state: isState(stateParam) ? stateParam : undefined, cursor: params.get('cursor') || undefined };
  const handovers = useQuery({
    queryKey: [...LIST_KEY, query],
    queryFn: () => ok(api.GET('/api/federation/handovers', { params: { query: { ...query, limit: PAGE_SIZE } } })),
    placeholderData: keepPreviousData,
  });
  useLiveRefresh(HANDOVER_EVENTS, [LIST_KEY]);
  return (
    <>
      <PageTitle>Handovers</PageTitle>
      <FederationNav />
      <Group justify="space-between" align="end" mb="md">
        <StateFilter states={STATES} state={query.state} setParams={setParams} />
        {session.data && may(session.data, 'admin') && <NewHandover />}
      </Group>
      {handovers.isError && <ProblemAlert error={handovers.error} mb="md" />}
      <Skeleton visible={handovers.isPending}>
        <Table striped highlightOnHover aria-label="Handovers">
          <ColumnHeaders columns={['Handover', 'Peer', 'State', 'Handed over', 'Created']} />
          <Table.Tbody>
            <HandoverRows handovers={handovers.data?.items ?? []} />
          </Table.Tbody>
        </Table>
      </Skeleton>
      <CursorPager filters={query} nextCursor={handovers.data?.nextCursor} setParams={setParams} />
    </>
  );
}
