/**
 * What the forms offer to choose from: the first page of each list, enough to pick from and
 * searchable. One query key per list, so every form showing the same choices shares one read.
 */
import { Select } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { api, ok } from '../api/client';
import { FEDERATION_KEY } from './federation/shared';

export const CHOICES = 200;

export function useGroupChoices() {
  return useQuery({
    queryKey: ['groups', 'choices'],
    queryFn: () => ok(api.GET('/api/groups', { params: { query: { limit: CHOICES } } })),
  });
}

function useConfigurationChoices() {
  return useQuery({
    queryKey: ['configurations', 'choices'],
    queryFn: () => ok(api.GET('/api/configurations', { params: { query: { limit: CHOICES } } })),
  });
}

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
 * them, with the lists they are chosen from: choosing another configuration clears the
 * version. `<VersionFields {...choice} />` shows the two fields.
 */
export function useVersionChoice() {
  const [configurationId, setConfigurationId] = useState<string | null>(null);
  const [version, setVersion] = useState<string | null>(null);
  return {
    configurations: useConfigurationChoices(),
    versions: usePublishedVersions(configurationId),
    configurationId,
    version,
    choose: (id: string | null, chosen: string | null) => {
      setConfigurationId(id);
      setVersion(chosen);
    },
  };
}

export type VersionChoice = ReturnType<typeof useVersionChoice>;

export function VersionFields({ configurations, versions, configurationId, version, choose }: VersionChoice) {
  return (
    <>
      <Select
        label="Configuration"
        searchable
        data={(configurations.data?.items ?? []).map((c) => ({ value: c.id, label: c.name }))}
        value={configurationId}
        onChange={(id) => choose(id, null)}
      />
      <Select
        label="Published version"
        data={(versions.data?.items ?? []).map((v) => ({ value: String(v.version), label: `v${v.version}` }))}
        value={version}
        onChange={(chosen) => choose(configurationId, chosen)}
        disabled={!configurationId}
      />
    </>
  );
}
