/**
 * An object of the API by its name where the console shows one by id (an event's subject, an
 * audit event's resource): read once per object (`staleTime`: names rarely change), linking to
 * its page where it has one. Its id while the name loads, and when it cannot be read (deleted,
 * or not the reader's to read: a viewer and an access token).
 */
import { Anchor } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { Link } from 'react-router';
import { api, ok } from '../api/client';

interface Kind {
  /** Reads the object's name (null: it has none). */
  name: (id: string) => Promise<string | null>;
  /** Its console page, when it has one. */
  page?: (id: string) => string;
}

const path = (id: string) => ({ params: { path: { id } } });

/** By the API's resource types (the audit trail's `resourceType`). */
const KINDS: Record<string, Kind> = {
  agent: { name: async (id) => (await ok(api.GET('/api/agents/{id}', path(id)))).name, page: (id) => `/agents/${id}` },
  group: { name: async (id) => (await ok(api.GET('/api/groups/{id}', path(id)))).name, page: (id) => `/groups/${id}` },
  configuration: {
    name: async (id) => (await ok(api.GET('/api/configurations/{id}', path(id)))).name,
    page: (id) => `/configurations/${id}`,
  },
  rollout: {
    name: async (id) => (await ok(api.GET('/api/rollouts/{id}', path(id)))).name,
    page: (id) => `/rollouts/${id}`,
  },
  policy: {
    name: async (id) => (await ok(api.GET('/api/policies/{id}', path(id)))).name,
    page: (id) => `/policies/${id}`,
  },
  'git-source': {
    name: async (id) => (await ok(api.GET('/api/git-sources/{id}', path(id)))).name,
    page: (id) => `/git-sources/${id}`,
  },
  'bootstrap-token': { name: async (id) => (await ok(api.GET('/api/tokens/{id}', path(id)))).name },
  'token-pool': {
    name: async (id) => (await ok(api.GET('/api/tokens/pools/{id}', path(id)))).name,
    page: (id) => `/tokens/pools/${id}`,
  },
  pat: { name: async (id) => (await ok(api.GET('/api/pats/{id}', path(id)))).name },
  'federation-peer': {
    name: async (id) => (await ok(api.GET('/api/federation/peers/{id}', path(id)))).name,
    page: (id) => `/federation/peers/${id}`,
  },
  'federated-rollout': {
    name: async (id) => (await ok(api.GET('/api/federation/rollouts/{id}', path(id)))).name,
    page: (id) => `/federation/rollouts/${id}`,
  },
  handover: { name: async () => null, page: (id) => `/federation/handovers/${id}` },
};

/** The resource type an event's subject is, by the event's type. */
export function subjectKind(eventType: string): string | undefined {
  if (eventType === 'rollout.agent-updated') return 'agent'; // its subject is the agent
  const prefixes: Array<[string, string]> = [
    ['agent.', 'agent'],
    ['group.', 'group'],
    ['configuration.', 'configuration'],
    ['rollout.', 'rollout'],
    ['policy.', 'policy'],
    ['git-source.', 'git-source'],
    ['git.sync-run.', 'git-source'],
    ['bootstrap-token.', 'bootstrap-token'],
    ['token-pool.', 'token-pool'],
    ['pat.', 'pat'],
    ['federation.peer.', 'federation-peer'],
    ['federation.rollout.', 'federated-rollout'],
    ['federation.handover.', 'handover'],
  ];
  return prefixes.find(([prefix]) => eventType.startsWith(prefix))?.[1];
}

const NAME_STALE_MS = 5 * 60_000;

export function ResourceName({ kind, id }: { kind: string | undefined; id: string }) {
  const known = kind ? KINDS[kind] : undefined;
  const name = useQuery({
    queryKey: ['names', kind, id],
    queryFn: () => known!.name(id),
    enabled: known !== undefined,
    staleTime: NAME_STALE_MS,
    retry: false,
  });
  const text = name.data ?? id;
  if (!known?.page) return <>{text}</>;
  return (
    <Anchor component={Link} to={known.page(id)} title={name.data ? id : undefined}>
      {text}
    </Anchor>
  );
}
