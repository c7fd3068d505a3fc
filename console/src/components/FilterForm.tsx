/**
 * A list's filters as a search form. Its fields start from the filters in the URL and are
 * applied together as the URL's new query (from the first page: no cursor); each is named as
 * the API's query parameter. The form is drawn anew when the URL's filters change (back,
 * forward, a link), not when only the page does, so what is typed is never overwritten by a
 * page turn.
 */
import { Button, Checkbox, Group, Select, TextInput, type ComboboxData } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { searchOf } from '../pages/agentFilters';

export type FilterField = { name: string; label: string } & (
  | { kind: 'text'; placeholder?: string }
  /** One of `choices` or none ("Any"). */
  | { kind: 'choice'; choices: readonly string[] | readonly { value: string; label: string }[] }
  /** Checked: the parameter is `true`; unchecked: left out. */
  | { kind: 'check' }
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
