/**
 * First and next page of a list that pages with the API's cursor, kept in the URL with the
 * list's other filters: the first page is the filters without a cursor, the next one the
 * filters with the API's `nextCursor`. `children` go beside the two buttons.
 */
import { Button, Group } from '@mantine/core';
import type { ReactNode } from 'react';
import { searchOf } from '../pages/agentFilters';

export function CursorPager<Filters extends { cursor?: string }>({
  filters,
  nextCursor,
  setParams,
  mt = 'md',
  children,
}: {
  filters: Filters;
  nextCursor: string | null | undefined;
  setParams: (params: URLSearchParams) => void;
  mt?: 'sm' | 'md';
  children?: ReactNode;
}) {
  const { cursor, ...withoutCursor } = filters;
  return (
    <Group mt={mt}>
      <Button variant="default" disabled={!cursor} onClick={() => setParams(searchOf(withoutCursor))}>
        First page
      </Button>
      <Button
        variant="default"
        disabled={!nextCursor}
        onClick={() => setParams(searchOf({ ...filters, cursor: nextCursor ?? undefined }))}
      >
        Next page
      </Button>
      {children}
    </Group>
  );
}
