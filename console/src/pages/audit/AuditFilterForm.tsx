/** Every filter GET /api/audit/events takes, as form controls; applying them puts them in the URL. */
import { Button, Group, Select, SimpleGrid, TextInput } from '@mantine/core';
import { useState, type FormEvent } from 'react';
import { searchOf } from '../agentFilters';
import { ACTOR_TYPES, auditFiltersFrom, isoOf, localInputOf, METHODS, type AuditFilters } from './filters';

/**
 * The form's fields: text as typed, times as datetime-local values. One event by its number
 * (`seq`) is reached through the chain verification's link, not a field.
 */
type Fields = Record<Exclude<keyof AuditFilters, 'cursor' | 'seq'>, string>;

function fieldsOf(filters: AuditFilters): Fields {
  return {
    actor: filters.actor ?? '',
    actorType: filters.actorType ?? '',
    method: filters.method ?? '',
    status: filters.status ?? '',
    resourceType: filters.resourceType ?? '',
    resourceId: filters.resourceId ?? '',
    requestId: filters.requestId ?? '',
    from: localInputOf(filters.from),
    to: localInputOf(filters.to),
  };
}

function filtersOf(fields: Fields): AuditFilters {
  const trimmed = Object.fromEntries(Object.entries(fields).map(([name, value]) => [name, value.trim()]));
  return auditFiltersFrom(searchOf({ ...trimmed, from: isoOf(fields.from), to: isoOf(fields.to) }));
}

export function AuditFilterForm({ filters, apply }: { filters: AuditFilters; apply: (next: AuditFilters) => void }) {
  const [fields, setFields] = useState(() => fieldsOf(filters));
  const set = (name: keyof Fields) => (value: string | null) => setFields((now) => ({ ...now, [name]: value ?? '' }));
  const text = (name: keyof Fields, label: string, description?: string) => (
    <TextInput
      label={label}
      description={description}
      value={fields[name]}
      onChange={(event) => set(name)(event.currentTarget.value)}
    />
  );
  const submit = (event: FormEvent) => {
    event.preventDefault();
    apply(filtersOf(fields));
  };
  return (
    <form onSubmit={submit} role="search" aria-label="Filter the audit log">
      <SimpleGrid cols={{ base: 1, sm: 3, lg: 5 }} mb="sm">
        {text('actor', 'Actor', 'OIDC subject or PAT name')}
        <Select
          label="Actor type"
          placeholder="Any"
          clearable
          data={ACTOR_TYPES as string[]}
          value={fields.actorType || null}
          onChange={set('actorType')}
        />
        <Select
          label="Method"
          placeholder="Any"
          clearable
          data={METHODS as readonly string[] as string[]}
          value={fields.method || null}
          onChange={set('method')}
        />
        <TextInput
          label="Status"
          placeholder="e.g. 403"
          inputMode="numeric"
          value={fields.status}
          onChange={(event) => set('status')(event.currentTarget.value)}
        />
        {text('requestId', 'Request id')}
        {text('resourceType', 'Resource type', 'e.g. configuration')}
        {text('resourceId', 'Resource id')}
        <TextInput
          type="datetime-local"
          step={1}
          label="From"
          description="At or after (your time zone)"
          value={fields.from}
          onChange={(event) => set('from')(event.currentTarget.value)}
        />
        <TextInput
          type="datetime-local"
          step={1}
          label="To"
          description="Before (your time zone)"
          value={fields.to}
          onChange={(event) => set('to')(event.currentTarget.value)}
        />
      </SimpleGrid>
      <Group mb="md">
        <Button type="submit">Apply filters</Button>
        <Button variant="default" onClick={() => apply({})}>
          Clear filters
        </Button>
      </Group>
    </form>
  );
}
