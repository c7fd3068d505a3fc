/**
 * What the forms offer to choose from: configurations searched on the server (any of
 * thousands), and the first page of the short lists (peers, a configuration's published
 * versions). One query key per list, so every form showing the same choices shares one read.
 */
import { Select } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useEffect, useRef, useState } from 'react';
import { api, ok } from '../api/client';
import { useConfiguration } from './configurations/shared';
import { FEDERATION_KEY } from './federation/shared';
import { searchConfigurations, SearchSelect, type Choice } from './groups/SearchSelect';

export const CHOICES = 200;

export function usePeerChoices() {
  return useQuery({
    queryKey: [...FEDERATION_KEY, 'peers', 'choices'],
    queryFn: () => ok(api.GET('/api/federation/peers', { params: { query: { limit: CHOICES } } })),
  });
}

function usePublishedVersions(configurationId: string | null) {
  return useQuery({
    queryKey: ['configurations', 'published', configurationId],
    enabled: configurationId !== null,
    queryFn: () =>
      ok(
        api.GET('/api/configurations/{id}/versions', {
          params: { path: { id: configurationId! }, query: { state: 'published', limit: CHOICES } },
        }),
      ),
  });
}

/**
 * A configuration and one of its published versions, as a rollout (federated or not) pushes
 * them: the configuration searched on the server by name as it is typed (any of thousands),
 * the versions its published ones; choosing another configuration clears the version.
 * `initial` preselects both (a version page's "Roll out this version"). `<VersionFields
 * {...choice} />` shows the two fields.
 */
export function useVersionChoice(initial?: { configurationId: string; version: string }) {
  const [configuration, setConfiguration] = useState<Choice | null>(null);
  const [version, setVersion] = useState<string | null>(initial?.version ?? null);
  const configurationId = configuration?.value ?? null;
  // A preselected configuration is chosen once its name is read (the field shows names).
  const named = useConfiguration(initial?.configurationId ?? '', {
    enabled: initial !== undefined,
    staleTime: Infinity,
  });
  const preselected = useRef(false);
  useEffect(() => {
    if (!named.data || preselected.current) return;
    preselected.current = true;
    setConfiguration({ value: named.data.id, label: named.data.name });
  }, [named.data]);
  return {
    configuration,
    configurationError: named.error,
    versions: usePublishedVersions(configurationId),
    configurationId,
    version,
    choose: (chosen: Choice | null, chosenVersion: string | null) => {
      setConfiguration(chosen);
      setVersion(chosenVersion);
    },
  };
}

export type VersionChoice = ReturnType<typeof useVersionChoice>;

export function VersionFields({ configuration, versions, configurationId, version, choose }: VersionChoice) {
  return (
    <>
      <SearchSelect
        label="Configuration"
        placeholder="Type to search by name"
        queryKey={['configurations', 'search']}
        search={searchConfigurations}
        chosen={configuration}
        onChoose={(chosen) => choose(chosen, null)}
      />
      <Select
        label="Published version"
        data={(versions.data?.items ?? []).map((v) => ({ value: String(v.version), label: `v${v.version}` }))}
        value={version}
        onChange={(chosen) => choose(configuration, chosen)}
        disabled={!configurationId}
      />
    </>
  );
}
