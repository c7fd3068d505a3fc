/** What the bootstrap token, pool and access token pages share: keys, events, badges, choices, paging. */
import { Badge, Box, Group, NumberInput, Select } from '@mantine/core';
import { keepPreviousData, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, ok, type Schemas } from '../../api/client';
import { CHOICES } from '../choices';
import { GROUPS_KEY } from '../groups/shared';
import { searchGroups, SearchSelect, type Choice } from '../groups/SearchSelect';
import type { TokenFilters } from './filters';

export type BootstrapToken = Schemas['BootstrapToken'];
export type Pool = Schemas['TokenPool'];

export const PAGE_SIZE = 25;

/** Every query of the bootstrap token and pool pages starts with this key: one invalidation refreshes them. */
export const TOKENS_KEY = ['tokens'];
/** A token issued, revoked or a pool created changes what these pages show. */
export const TOKEN_EVENTS = ['bootstrap-token.*', 'token-pool.*'];

export function useRefreshTokens(): () => void {
  const queryClient = useQueryClient();
  return () => void queryClient.invalidateQueries({ queryKey: TOKENS_KEY });
}

/** The API's times as this browser writes them. */
export const when = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : '—');

// Filled badges in dark shades: white text on them keeps 4.5:1 contrast on any row.
const STATE_COLORS: Record<string, string> = {
  active: 'teal.9',
  revoked: 'red.9',
  expired: 'gray.8',
  exhausted: 'violet.9',
};

export function TokenStateBadge({ state }: { state: string }) {
  return (
    // At least as wide as its word: a narrow table column would otherwise cut it short.
    <Badge variant="filled" color={STATE_COLORS[state] ?? 'gray.8'} miw="max-content">
      {state}
    </Badge>
  );
}

/** A page of bootstrap tokens as the filters choose them. */
export function useTokens(filters: TokenFilters) {
  return useQuery({
    queryKey: [...TOKENS_KEY, 'list', filters],
    queryFn: () => ok(api.GET('/api/tokens', { params: { query: { ...filters, limit: PAGE_SIZE } } })),
    placeholderData: keepPreviousData,
  });
}

/** A lifetime in seconds as a person reads it. */
export function duration(seconds: number): string {
  if (seconds % 86_400 === 0) return `${seconds / 86_400} d`;
  if (seconds % 3_600 === 0) return `${seconds / 3_600} h`;
  if (seconds % 60 === 0) return `${seconds / 60} min`;
  return `${seconds} s`;
}

export function usePoolChoices() {
  return useQuery({
    queryKey: [...TOKENS_KEY, 'pools', 'choices'],
    queryFn: () => ok(api.GET('/api/tokens/pools', { params: { query: { limit: CHOICES } } })),
  });
}

/**
 * The group new agents join: the tenant's default group unless one is chosen, found by name
 * on the server as it is typed (any of thousands).
 */
export function GroupSelect({ value, onChange }: { value: string | null; onChange: (id: string | null) => void }) {
  const [chosen, setChosen] = useState<Choice | null>(null);
  return (
    <Box mb="sm">
      <SearchSelect
        label="Group"
        description="Where the agents it enrolls go (default: the default group)"
        placeholder="default"
        queryKey={[...GROUPS_KEY, 'token-choices']}
        search={searchGroups}
        chosen={value && chosen?.value === value ? chosen : null}
        onChoose={(choice) => {
          setChosen(choice);
          onChange(choice?.value ?? null);
        }}
      />
    </Box>
  );
}

const UNITS = [
  { value: '60', label: 'minutes' },
  { value: '3600', label: 'hours' },
  { value: '86400', label: 'days' },
];

/** A lifetime in seconds, as an amount and a unit (the API takes seconds: 60 s to 365 days). */
export interface Lifetime {
  amount: number | string;
  /** Seconds in one of the unit. */
  unit: string;
}

export function LifetimeInput({
  label,
  value,
  onChange,
}: {
  label: string;
  value: Lifetime;
  onChange: (next: Lifetime) => void;
}) {
  return (
    <Group align="end" mb="sm" grow>
      <NumberInput
        label={label}
        min={1}
        allowDecimal={false}
        value={value.amount}
        onChange={(amount) => onChange({ ...value, amount })}
      />
      <Select
        label="Unit"
        data={UNITS}
        allowDeselect={false}
        value={value.unit}
        onChange={(unit) => onChange({ ...value, unit: unit ?? '3600' })}
      />
    </Group>
  );
}

export const inSeconds = ({ amount, unit }: Lifetime) => Number(amount) * Number(unit);
