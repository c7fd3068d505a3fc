/**
 * A list's filters as a search form. Its fields start from the filters in the URL and are
 * applied together as the URL's new query (from the first page: no cursor); each is named as
 * the API's query parameter. The form is drawn anew when the URL's filters change (back,
 * forward, a link), not when only the page does, so what is typed is never overwritten by a
 * page turn.
 */
import { Button, Checkbox, Group, Select, TextInput, type ComboboxData } from '@mantine/core';
import { useQuery, useQueryClient, type QueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { searchOf } from '../pages/agentFilters';
import { SearchSelect, type Choice } from '../pages/groups/SearchSelect';

export type FilterField = { name: string; label: string } & (
  | { kind: 'text'; placeholder?: string }
  /** One of `choices` or none ("Any"). */
  | { kind: 'choice'; choices: readonly string[] | readonly { value: string; label: string }[] }
  /** Checked: the parameter is `true`; unchecked: left out. */
  | { kind: 'check' }
  /**
   * An object chosen by name, searched on the server as it is typed (a group, a configuration):
   * the parameter is its id; `nameOf` reads the name of one the URL names.
   */
  | {
      kind: 'search';
      search: (q: string | undefined) => Promise<Choice[]>;
      /** Through the query client, so the name comes from (and stays in) the object's own query. */
      nameOf: (id: string, queries: QueryClient) => Promise<string>;
    }
);

interface FilterFormProps {
  /** The search form's accessible name. */
  label: string;
  fields: readonly FilterField[];
  /** The filters as the URL has them (a list's filters object: its string members are read). */
  values: object;
  apply: (search: URLSearchParams) => void;
}

/** The fields' values in `values`, '' for those it lacks. */
function valuesOf(fields: readonly FilterField[], values: object): Record<string, string> {
  const all = values as Record<string, unknown>;
  return Object.fromEntries(fields.map(({ name }) => [name, typeof all[name] === 'string' ? all[name] : '']));
}

export function FilterForm(props: FilterFormProps) {
  return <Fields key={searchOf(valuesOf(props.fields, props.values)).toString()} {...props} />;
}

function Fields({ label, fields, values, apply }: FilterFormProps) {
  const [typed, setTyped] = useState(() => valuesOf(fields, values));
  const set = (name: string, value: string) => setTyped((current) => ({ ...current, [name]: value }));
  const submit = (event: FormEvent) => {
    event.preventDefault();
    apply(searchOf(typed));
  };
  return (
    <form onSubmit={submit} role="search" aria-label={label}>
      <Group align="end" mb="md">
        {fields.map((field) => {
          const value = typed[field.name] ?? '';
          switch (field.kind) {
            case 'text':
              return (
                <TextInput
                  key={field.name}
                  label={field.label}
                  placeholder={field.placeholder}
                  value={value}
                  onChange={(e) => set(field.name, e.currentTarget.value)}
                />
              );
            case 'choice':
              return (
                <Select
                  key={field.name}
                  label={field.label}
                  placeholder="Any"
                  clearable
                  data={field.choices as ComboboxData}
                  value={value || null}
                  onChange={(chosen) => set(field.name, chosen ?? '')}
                />
              );
            case 'search':
              return (
                <SearchFilter
                  key={field.name}
                  field={field}
                  value={value}
                  onChange={(chosen) => set(field.name, chosen)}
                />
              );
            case 'check':
              return (
                <Checkbox
                  key={field.name}
                  label={field.label}
                  checked={value === 'true'}
                  onChange={(e) => set(field.name, e.currentTarget.checked ? 'true' : '')}
                  mb={8}
                />
              );
          }
        })}
        <Button type="submit">Apply filters</Button>
      </Group>
    </form>
  );
}

/** A `search` field: the chosen object by name (read by id when it came from the URL). */
function SearchFilter({
  field,
  value,
  onChange,
}: {
  field: Extract<FilterField, { kind: 'search' }>;
  value: string;
  onChange: (id: string) => void;
}) {
  const [picked, setPicked] = useState<Choice | null>(null);
  const queries = useQueryClient();
  const named = useQuery({
    queryKey: ['filter-name', field.name, value],
    enabled: value !== '' && picked?.value !== value,
    staleTime: Infinity,
    queryFn: () => field.nameOf(value, queries),
  });
  const chosen = value === '' ? null : picked?.value === value ? picked : { value, label: named.data ?? value };
  return (
    <SearchSelect
      label={field.label}
      placeholder="Any"
      queryKey={['filter-search', field.name]}
      search={field.search}
      chosen={chosen}
      onChoose={(choice) => {
        setPicked(choice);
        onChange(choice?.value ?? '');
      }}
    />
  );
}
