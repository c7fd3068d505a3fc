/**
 * A list's state filter: the chosen state (or none) goes to the URL as the API's `state`
 * parameter, from the first page.
 */
import { Select } from '@mantine/core';
import { searchOf } from '../pages/agentFilters';

export function StateFilter({
  label = 'State',
  states,
  state,
  setParams,
  mb,
}: {
  label?: string;
  states: readonly string[];
  state: string | undefined;
  setParams: (params: URLSearchParams) => void;
  mb?: 'sm' | 'md';
}) {
  return (
    <Select
      label={label}
      placeholder="Any state"
      data={[...states]}
      value={state ?? null}
      onChange={(chosen) => setParams(searchOf({ state: chosen && states.includes(chosen) ? chosen : undefined }))}
      clearable
      w={220}
      mb={mb}
    />
  );
}
