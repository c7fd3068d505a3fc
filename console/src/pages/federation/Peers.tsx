/**
 * The federation area's first page: the tenant's peers with their health (the last ping:
 * latency, what the peer said of itself, when, why it failed), the API's cursor pages in the
 * URL, and pairing with another installation for admins.
 */
import { Anchor, Button, Group, Modal, PasswordInput, Skeleton, Table, Text, TextInput, Title } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { Link, useNavigate, useSearchParams } from 'react-router';
import { api, ok } from '../../api/client';
import { useLiveRefresh } from '../../api/live';
import { may, useSession } from '../../api/session';
import { FormFooter } from '../../components/FormFooter';
import { ColumnHeaders } from '../../components/ColumnHeaders';
import { CursorPager } from '../../components/CursorPager';
import { EmptyRow } from '../../components/EmptyRow';
import { PageTitle } from '../../components/PageTitle';
import { ProblemAlert } from '../../components/ProblemAlert';
import { peerKey } from './PeerDetail';
import { FEDERATION_KEY, FederationNav, HealthBadge, PAGE_SIZE, when } from './shared';

const LIVE = ['federation.peer.*'];
const LIST_KEY = [...FEDERATION_KEY, 'peers', 'list'];

const listPeers = (cursor: string | undefined) =>
  ok(api.GET('/api/federation/peers', { params: { query: { cursor, limit: PAGE_SIZE } } }));

// Typed by the call: the schema's FederationPeer types `remote` as an intersection no value satisfies.
type Peer = Awaited<ReturnType<typeof listPeers>>['items'][number];

/**
 * The pairing form. The credential lives only in this form's state, which goes when the
 * dialog closes: it is sent once, never stored in the browser, and the API never shows it back.
 */
function AddPeerForm({ close }: { close: () => void }) {
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const [name, setName] = useState('');
  const [baseUrl, setBaseUrl] = useState('');
  const [credential, setCredential] = useState('');
  const add = useMutation({
    // Dropped from the mutation cache once the form goes: its function holds the token.
    gcTime: 0,
    mutationFn: async () => {
      const call = api.POST('/api/federation/peers', { body: { name, baseUrl, credential } });
      const peer = await ok(call);
      return { peer, etag: (await call).response.headers.get('ETag') };
    },
    onSuccess: (created) => {
      setCredential('');
      // The peer's page opens with the creation's answer: the health its first ping found.
      queryClient.setQueryData(peerKey(created.peer.id), created);
      void queryClient.invalidateQueries({ queryKey: LIST_KEY });
      void navigate(`/federation/peers/${created.peer.id}`);
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    add.mutate();
  };
  return (
    <form onSubmit={submit} aria-label="Add a peer">
      <TextInput label="Name" required value={name} onChange={(e) => setName(e.currentTarget.value)} mb="sm" />
      <TextInput
        label="Base URL"
        description="The other installation's public address, https://host[:port]"
        required
        value={baseUrl}
        onChange={(e) => setBaseUrl(e.currentTarget.value)}
        mb="sm"
      />
      <PasswordInput
        label="Peer access token"
        description="A PAT with role peer that the other installation issued for this one. It is stored encrypted and never shown again."
        required
        autoComplete="off"
        value={credential}
        onChange={(e) => setCredential(e.currentTarget.value)}
        mb="md"
      />
      <FormFooter write={add} submitLabel="Add peer" onCancel={close} />
    </form>
  );
}

function AddPeer() {
  const [opened, { open, close }] = useDisclosure(false);
  return (
    <>
      <Button onClick={open}>Add peer</Button>
      <Modal opened={opened} onClose={close} title="Add a peer" closeButtonProps={{ 'aria-label': 'Close' }}>
        <AddPeerForm close={close} />
      </Modal>
    </>
  );
}

function PeerRows({ peers }: { peers: Peer[] }) {
  if (peers.length === 0) {
    return <EmptyRow columns={7}>No peer yet: this installation is not paired with another.</EmptyRow>;
  }
  return peers.map((peer) => (
    <Table.Tr key={peer.id}>
      <Table.Td>
        <Anchor component={Link} to={`/federation/peers/${peer.id}`}>
          {peer.name}
        </Anchor>
      </Table.Td>
      <Table.Td>{peer.baseUrl}</Table.Td>
      <Table.Td>
        <HealthBadge healthy={peer.healthy} />
      </Table.Td>
      <Table.Td>{peer.latencyMs === null ? '' : `${peer.latencyMs} ms`}</Table.Td>
      <Table.Td>{peer.remote ? `${peer.remote.name} ${peer.remote.version}` : 'never answered'}</Table.Td>
      <Table.Td>{when(peer.lastPingAt)}</Table.Td>
      <Table.Td>{peer.lastError ?? ''}</Table.Td>
    </Table.Tr>
  ));
}

export function PeersPage() {
  const [params, setParams] = useSearchParams();
  const cursor = params.get('cursor') || undefined;
  const session = useSession();
  const peers = useQuery({
    queryKey: [...LIST_KEY, cursor],
    queryFn: () => listPeers(cursor),
    placeholderData: keepPreviousData,
  });
  useLiveRefresh(LIVE, [LIST_KEY]);
  return (
    <>
      <PageTitle>Federation</PageTitle>
      <FederationNav />
      <Group justify="space-between" align="start" mb="sm">
        <div>
          <Title order={3} size="h4">
            Peers
          </Title>
          <Text size="sm">Installations this one calls: each issued it a peer access token.</Text>
        </div>
        {session.data && may(session.data, 'admin') && <AddPeer />}
      </Group>
      {peers.isError && <ProblemAlert error={peers.error} mb="md" />}
      <Skeleton visible={peers.isPending}>
        <Table striped highlightOnHover aria-label="Peers">
          <ColumnHeaders columns={['Name', 'Base URL', 'Health', 'Latency', 'Remote', 'Last check', 'Last error']} />
          <Table.Tbody>
            <PeerRows peers={peers.data?.items ?? []} />
          </Table.Tbody>
        </Table>
      </Skeleton>
      <CursorPager filters={{ cursor }} nextCursor={peers.data?.nextCursor} setParams={setParams} />
    </>
  );
}
