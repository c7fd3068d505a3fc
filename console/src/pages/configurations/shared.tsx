/** What the configuration pages share: the configuration query, its Git notice, publishing. */
import { Alert, Anchor, Badge, Button, Code, Group, Select } from '@mantine/core';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { Link } from 'react-router';
import { api, ok, type Schemas } from '../../api/client';
import { ConfirmButton } from '../../components/ConfirmButton';

export type Configuration = Schemas['Configuration'];
export type VersionSummary = Schemas['ConfigurationVersionSummary'];

/** Every query of the configuration pages starts with this key: one invalidation refreshes them. */
export const CONFIGURATIONS_KEY = ['configurations'];

/** The events that change what the configuration pages show. */
export const CONFIGURATION_EVENTS = ['configuration.*'];

/** One configuration: every page and name that shows it reads it under this key. */
export function configurationQuery(id: string) {
  return {
    queryKey: [...CONFIGURATIONS_KEY, 'one', id],
    queryFn: () => ok(api.GET('/api/configurations/{id}', { params: { path: { id } } })),
  };
}

export function useConfiguration(
  id: string,
  { staleTime = 0, enabled = true }: { staleTime?: number; enabled?: boolean } = {},
) {
  return useQuery({ ...configurationQuery(id), staleTime, enabled });
}

/** A configuration version by the configuration's name, linked; its id while the name loads or when it is gone. */
export function ConfigurationLink({ id, version }: { id: string; version: number }) {
  const configuration = useConfiguration(id);
  return (
    <Anchor component={Link} to={`/configurations/${id}`}>
      {configuration.data?.name ?? id} v{version}
    </Anchor>
  );
}

export function useRefreshConfigurations(): () => void {
  const queryClient = useQueryClient();
  return () => void queryClient.invalidateQueries({ queryKey: CONFIGURATIONS_KEY });
}

/**
 * The Git source by its name, linked to its page; its id while the name loads or when it is
 * gone. In the alert's own colour, underlined: the primary blue on the alert's violet is 3.8:1.
 */
function GitSourceName({ id }: { id: string }) {
  const source = useQuery({
    queryKey: ['git-sources', 'name', id],
    queryFn: () => ok(api.GET('/api/git-sources/{id}', { params: { path: { id } } })),
  });
  return (
    <Anchor component={Link} to={`/git-sources/${id}`} c="inherit" underline="always">
      Git source {source.data?.name ?? id}
    </Anchor>
  );
}

/** A Git source owns it: the API refuses edits (409 managed-by-git), so the console offers none. */
export function GitManagedNotice({ configuration }: { configuration: Configuration }) {
  if (!configuration.managedBy) return null;
  return (
    <Alert color="violet" variant="light" title="Managed by Git" mb="md">
      It comes from <Code>{configuration.sourcePath ?? configuration.name}</Code> of{' '}
      <GitSourceName id={configuration.managedBy} />: change it there. Versions it synced can still be published here.
    </Alert>
  );
}

const STATE_COLORS: Record<VersionSummary['state'], string> = { draft: 'gray.8', published: 'teal.9' };

export function StateBadge({ state }: { state: VersionSummary['state'] }) {
  return (
    <Badge variant="filled" color={STATE_COLORS[state]}>
      {state}
    </Badge>
  );
}

export function PublishButton({
  configuration,
  version,
  onDone,
}: {
  configuration: Configuration;
  version: number;
  onDone: () => void;
}) {
  return (
    <ConfirmButton
      label={`Publish v${version}`}
      size="xs"
      question={`Publish version ${version} of ${configuration.name}? Published versions cannot be changed, and rollouts can send it to agents.`}
      action={() =>
        ok(
          api.POST('/api/configurations/{id}/versions/{version}/publish', {
            params: { path: { id: configuration.id, version } },
          }),
        )
      }
      onDone={onDone}
    />
  );
}

/** The API's times as this browser writes them. */
export const when = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : '—');

/** Two versions of 1..latest to compare; `onCompare` opens or changes the comparison. */
export function VersionPairForm({
  latest,
  from,
  to,
  onCompare,
}: {
  latest: number;
  from?: number;
  to?: number;
  onCompare: (from: string, to: string) => void;
}) {
  const numbers = Array.from({ length: latest }, (_, i) => String(latest - i));
  const [left, setLeft] = useState<string | null>(from ? String(from) : null);
  const [right, setRight] = useState<string | null>(to ? String(to) : null);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (left && right) onCompare(left, right);
  };
  return (
    <form onSubmit={submit} aria-label="Compare versions">
      <Group align="end" mb="md">
        <Select label="From version" data={numbers} value={left} onChange={setLeft} allowDeselect={false} />
        <Select label="To version" data={numbers} value={right} onChange={setRight} allowDeselect={false} />
        <Button type="submit" variant="default">
          Compare
        </Button>
      </Group>
    </form>
  );
}
