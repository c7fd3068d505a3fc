/**
 * Selects whose choices the API searches as the person types (`q`), so any of thousands of
 * groups, agents or configurations can be found, not only the first page's. The chosen one
 * stays a choice while other searches run.
 */
import { MultiSelect, Select, type ComboboxParsedItem } from '@mantine/core';
import { useDebouncedValue } from '@mantine/hooks';
import { keepPreviousData, useQueries, useQuery, type QueryKey } from '@tanstack/react-query';
import { useState } from 'react';
import { api, ok } from '../../api/client';
import { groupQuery } from './shared';

export interface Choice {
  value: string;
  label: string;
}

/** How many matches a search shows: type more to narrow. */
const MATCHES = 50;
/** Typing is searched once it pauses, not at every key. */
const TYPING_PAUSE_MS = 250;

interface SearchSelectProps {
  label: string;
  description?: string;
  placeholder: string;
  queryKey: QueryKey;
  search: (q: string | undefined) => Promise<Choice[]>;
  chosen: Choice | null;
  onChoose: (choice: Choice | null) => void;
}

/**
 * What both selects share: the typed text, searched once typing pauses, and the props that
 * make a Mantine select show the API's matches as they are (it has searched already: by name,
 * for agents also by id prefix), with the chosen ones (`chosen`) kept among them.
 */
function useSearchedChoices(queryKey: QueryKey, search: SearchSelectProps['search'], chosen: Choice[]) {
  const [typed, setTyped] = useState('');
  const [q] = useDebouncedValue(typed.trim(), TYPING_PAUSE_MS);
  const choices = useQuery({
    queryKey: [...queryKey, q],
    queryFn: () => search(q || undefined),
    placeholderData: keepPreviousData,
  });
  const found = choices.data ?? [];
  const data = [...chosen.filter((choice) => !found.some((one) => one.value === choice.value)), ...found];
  return {
    searchable: true,
    searchValue: typed,
    onSearchChange: setTyped,
    filter: ({ options }: { options: ComboboxParsedItem[] }) => options,
    nothingFoundMessage: choices.isPending ? 'Searching…' : 'Nothing matches',
    error: choices.isError ? choices.error.message : undefined,
    data,
  };
}

export function SearchSelect({
  label,
  description,
  placeholder,
  queryKey,
  search,
  chosen,
  onChoose,
}: SearchSelectProps) {
  const searched = useSearchedChoices(queryKey, search, chosen ? [chosen] : []);
  return (
    <Select
      label={label}
      description={description}
      placeholder={placeholder}
      clearable
      {...searched}
      value={chosen?.value ?? null}
      onChange={(_, option) => onChoose(option ? { value: option.value, label: option.label } : null)}
    />
  );
}

interface SearchMultiSelectProps {
  label: string;
  queryKey: QueryKey;
  search: (q: string | undefined) => Promise<Choice[]>;
  chosen: Choice[];
  onChoose: (choices: Choice[]) => void;
}

/** The same for several choices: those chosen stay choices (with their labels) while other searches run. */
export function SearchMultiSelect({ label, queryKey, search, chosen, onChoose }: SearchMultiSelectProps) {
  const searched = useSearchedChoices(queryKey, search, chosen);
  return (
    <MultiSelect
      label={label}
      {...searched}
      value={chosen.map((choice) => choice.value)}
      onChange={(values) => onChoose(values.map((value) => searched.data.find((choice) => choice.value === value)!))}
    />
  );
}

/** Live groups whose name contains `q`. */
export async function searchGroups(q: string | undefined): Promise<Choice[]> {
  const page = await ok(api.GET('/api/groups', { params: { query: { q, limit: MATCHES } } }));
  return page.items.map((group) => ({ value: group.id, label: group.name }));
}

/** Configurations whose name contains `q`. */
export async function searchConfigurations(q: string | undefined): Promise<Choice[]> {
  const page = await ok(api.GET('/api/configurations', { params: { query: { q, limit: MATCHES } } }));
  return page.items.map((configuration) => ({ value: configuration.id, label: configuration.name }));
}

/** Agents whose name contains `q` or whose id starts with it. */
export async function searchAgents(q: string | undefined): Promise<Choice[]> {
  const page = await ok(api.GET('/api/agents', { params: { query: { q, limit: MATCHES } } }));
  return page.items.map((agent) => ({ value: agent.id, label: `${agent.name} (${agent.id.slice(0, 8)})` }));
}

/**
 * Groups chosen by id (a rollout's target, a policy's scope), searched on the server as the
 * person types; the chosen ones show their names, read by id when they were not among a
 * search's matches (a stored scope), else their ids (a group deleted since).
 */
export function GroupsField({
  label,
  value,
  onChange,
}: {
  label: string;
  value: string[];
  onChange: (ids: string[]) => void;
}) {
  const [named, setNamed] = useState<Map<string, string>>(new Map());
  const unnamed = value.filter((id) => !named.has(id));
  // The groups' own reads (the pages' `useGroup`): one cache for a group, whoever shows it.
  const looked = useQueries({ queries: unnamed.map(groupQuery) });
  const nameOf = (id: string) => named.get(id) ?? looked[unnamed.indexOf(id)]?.data?.group.name ?? id;
  return (
    <SearchMultiSelect
      label={label}
      queryKey={['groups', 'search']}
      search={searchGroups}
      chosen={value.map((id) => ({ value: id, label: nameOf(id) }))}
      onChoose={(choices) => {
        setNamed(new Map([...named, ...choices.map((choice): [string, string] => [choice.value, choice.label])]));
        onChange(choices.map((choice) => choice.value));
      }}
    />
  );
}
