/**
 * One peer: its address, its health as the last ping found it, and what it said of itself.
 * Admins change it (name, base URL, a new credential) or unpair it, each sent with `If-Match`
 * = the ETag of the peer as shown, so a change decided on a stale view is refused (412); an
 * edit so refused can load the latest and re-apply its changes.
 */
import { Anchor, Button, Code, Group, Modal, PasswordInput, Skeleton, Stack, TextInput } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { api, ifMatch, noContent, ok } from '../../api/client';
import { useLiveRefresh, type CloudEvent } from '../../api/live';
import { may, useSession } from '../../api/session';
import { FormFooter } from '../../components/FormFooter';
import { ConfirmButton } from '../../components/ConfirmButton';
import { PageTitle } from '../../components/PageTitle';
import { ProblemAlert } from '../../components/ProblemAlert';
import { isStale, reapply, StaleEdit, type Reapplied } from '../../components/StaleEdit';
import { Facts, Section } from '../AgentDetail';
import { FEDERATION_KEY, FederationNav, HealthBadge, when } from './shared';

const LIVE = ['federation.peer.*'];

export const peerKey = (id: string) => [...FEDERATION_KEY, 'peers', 'one', id];

/** The peer with its ETag, which a change or a deletion sends back as If-Match. */
async function readPeer(id: string) {
  const call = api.GET('/api/federation/peers/{id}', { params: { path: { id } } });
  const peer = await ok(call);
  return { peer, etag: (await call).response.headers.get('ETag') };
}

type Shown = Awaited<ReturnType<typeof readPeer>>;
type Peer = Shown['peer'];

function usePeer(id: string) {
  return useQuery({ queryKey: peerKey(id), queryFn: () => readPeer(id) });
}

function PeerFacts({ peer }: { peer: Peer }) {
  return (
    <Section title="Peer">
      <Facts
        rows={[
          ['Base URL', <Code key="url">{peer.baseUrl}</Code>],
          ['Health', <HealthBadge key="health" healthy={peer.healthy} />],
          ['Last error', <span key="error">{peer.lastError ?? 'none'}</span>],
          ['Latency', peer.latencyMs === null ? 'not measured' : `${peer.latencyMs} ms`],
          ['Last check', when(peer.lastPingAt)],
          ['Last answered', when(peer.lastSeenAt)],
          ['Remote name', peer.remote?.name ?? 'never answered'],
          ['Remote version', peer.remote?.version ?? ''],
          ['Remote installation', peer.remote ? <Code key="installation">{peer.remote.installationId}</Code> : ''],
          ['Agent endpoint', peer.remote?.agentEndpoint ?? ''],
          ['Paired', `${peer.createdBy}, ${when(peer.createdAt)}`],
          ['Id', <Code key="id">{peer.id}</Code>],
        ]}
      />
    </Section>
  );
}

/** What the edit form holds of the peer (the credential apart: never read back). */
type PeerFields = { name: string; baseUrl: string };
const fieldsOf = (peer: Peer): PeerFields => ({ name: peer.name, baseUrl: peer.baseUrl });

/**
 * The edit form; a new credential lives only in its state, gone when the dialog closes. A
 * save refused with 412 offers to load the peer as it is now and put this form's changes on
 * top (StaleEdit); the next save sends the latest ETag.
 */
function EditPeerForm({ shown, close }: { shown: Shown; close: () => void }) {
  const queryClient = useQueryClient();
  const [typed, setTyped] = useState<PeerFields>(() => fieldsOf(shown.peer));
  const [base, setBase] = useState<{ fields: PeerFields; etag: string | null }>(() => ({
    fields: fieldsOf(shown.peer),
    etag: shown.etag,
  }));
  const [reapplied, setReapplied] = useState<Reapplied<PeerFields> | null>(null);
  const [credential, setCredential] = useState('');
  const { name, baseUrl } = typed;
  const set = (change: Partial<PeerFields>) => setTyped((current) => ({ ...current, ...change }));
  const save = useMutation({
    // Dropped from the mutation cache once the form goes: its function holds the token.
    gcTime: 0,
    mutationFn: async () => {
      const call = api.PUT('/api/federation/peers/{id}', {
        params: { path: { id: shown.peer.id }, header: ifMatch(base.etag) },
        body: { name, baseUrl, ...(credential ? { credential } : {}) },
      });
      const peer = await ok(call);
      return { peer, etag: (await call).response.headers.get('ETag') };
    },
    onSuccess: (saved) => {
      setCredential('');
      queryClient.setQueryData(peerKey(saved.peer.id), saved);
      void queryClient.invalidateQueries({ queryKey: [...FEDERATION_KEY, 'peers', 'list'] });
      close();
    },
  });
  const latest = useMutation({
    mutationFn: () => readPeer(shown.peer.id),
    onSuccess: (now) => {
      const result = reapply(base.fields, typed, fieldsOf(now.peer));
      setTyped(result.merged);
      setBase({ fields: fieldsOf(now.peer), etag: now.etag });
      setReapplied(result);
      save.reset();
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    save.mutate();
  };
  return (
    <form onSubmit={submit} aria-label="Edit the peer">
      <TextInput label="Name" required value={name} onChange={(e) => set({ name: e.currentTarget.value })} mb="sm" />
      <TextInput
        label="Base URL"
        required
        value={baseUrl}
        onChange={(e) => set({ baseUrl: e.currentTarget.value })}
        mb="sm"
      />
      <PasswordInput
        label="New peer access token"
        description="Leave empty to keep the stored one (only while the base URL stays on the same origin). The stored token is never shown."
        autoComplete="off"
        value={credential}
        onChange={(e) => setCredential(e.currentTarget.value)}
        mb="md"
      />
      <StaleEdit what="this peer" stale={isStale(save.error)} reload={latest} reapplied={reapplied} />
      <FormFooter write={save} submitLabel="Save and check" onCancel={close} />
    </form>
  );
}

function PeerOperations({ shown }: { shown: Shown }) {
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const [opened, { open, close }] = useDisclosure(false);
  const { peer, etag } = shown;
  const unpair = () =>
    noContent(api.DELETE('/api/federation/peers/{id}', { params: { path: { id: peer.id }, header: ifMatch(etag) } }));
  return (
    <Group mb="md" role="group" aria-label="Operations">
      <Button onClick={open}>Edit</Button>
      <Modal opened={opened} onClose={close} title="Edit the peer" closeButtonProps={{ 'aria-label': 'Close' }}>
        <EditPeerForm shown={shown} close={close} />
      </Modal>
      <ConfirmButton
        label="Delete"
        color="red.9"
        question={`Unpair ${peer.name}? Its credential is forgotten; handovers and federated rollouts that named it keep their records.`}
        action={unpair}
        onDone={() => {
          queryClient.removeQueries({ queryKey: peerKey(peer.id) });
          void queryClient.invalidateQueries({ queryKey: [...FEDERATION_KEY, 'peers', 'list'] });
          void navigate('/federation');
        }}
      />
    </Group>
  );
}

export function PeerDetailPage() {
  const { id = '' } = useParams();
  const session = useSession();
  const found = usePeer(id);
  useLiveRefresh(LIVE, [peerKey(id)], (event: CloudEvent) => event.subject === id);
  const shown = found.data;
  return (
    <Stack gap="md">
      <Anchor component={Link} to="/federation">
        ← All peers
      </Anchor>
      <PageTitle>{shown ? shown.peer.name : 'Peer'}</PageTitle>
      <FederationNav />
      {found.isError && <ProblemAlert error={found.error} />}
      <Skeleton visible={found.isPending}>
        {shown && session.data && may(session.data, 'admin') && <PeerOperations shown={shown} />}
        {shown && <PeerFacts peer={shown.peer} />}
      </Skeleton>
    </Stack>
  );
}
