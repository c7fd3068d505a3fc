/**
 * A whole split into parts: one bar, each part a segment as wide as its share, and beside it
 * a legend of the parts' counts, each a link to the list of what it counts. The bar is a
 * picture of the legend (hidden from screen readers, which read the legend).
 */
import { Anchor, Box, Group, Progress, Text } from '@mantine/core';
import { Link } from 'react-router';

export interface BarPart {
  label: string;
  count: number;
  /** A Mantine colour, e.g. `teal.7`: also the legend's swatch. */
  color: string;
  /** Where the count leads: the list filtered to these. */
  to?: string;
}

export function StackedBar({ parts, label }: { parts: BarPart[]; label: string }) {
  const total = parts.reduce((sum, part) => sum + part.count, 0);
  return (
    <Box>
      <Progress.Root size="xl" aria-hidden>
        {total > 0 &&
          parts
            .filter((part) => part.count > 0)
            .map((part) => <Progress.Section key={part.label} value={(part.count / total) * 100} color={part.color} />)}
      </Progress.Root>
      <Group component="ul" gap="md" mt={6} p={0} style={{ listStyle: 'none' }} aria-label={label}>
        {parts.map((part) => (
          <Group component="li" key={part.label} gap={6} wrap="nowrap">
            <Box w={10} h={10} bg={part.color} style={{ borderRadius: 2 }} aria-hidden />
            <Text size="sm">
              {part.to && part.count > 0 ? (
                <Anchor component={Link} to={part.to}>
                  {part.label} {part.count.toLocaleString()}
                </Anchor>
              ) : (
                `${part.label} ${part.count.toLocaleString()}`
              )}
            </Text>
          </Group>
        ))}
      </Group>
    </Box>
  );
}
