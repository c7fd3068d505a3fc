/** The one row of a table that has nothing to list: what it would list, across every column. */
import { Table } from '@mantine/core';
import type { ReactNode } from 'react';

export function EmptyRow({ columns, children }: { columns: number; children: ReactNode }) {
  return (
    <Table.Tr>
      <Table.Td colSpan={columns}>{children}</Table.Td>
    </Table.Tr>
  );
}
