/** A table's head: one column header for each name, in order. */
import { Table } from '@mantine/core';

export function ColumnHeaders({ columns }: { columns: readonly string[] }) {
  return (
    <Table.Thead>
      <Table.Tr>
        {columns.map((column) => (
          <Table.Th key={column} scope="col">
            {column}
          </Table.Th>
        ))}
      </Table.Tr>
    </Table.Thead>
  );
}
