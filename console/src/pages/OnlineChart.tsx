/**
 * Agents online over the last day, from the worker's per-minute census
 * (`GET /api/fleet/online`): a band from the fewest to the most online in each interval,
 * and the online agents reporting unhealthy below it. Minutes nobody counted (no worker
 * ran) break the line rather than join across it.
 */
import { Group, Text } from '@mantine/core';
import type { Schemas } from '../api/client';

type Interval = Schemas['FleetOnline']['intervals'][number];

const WIDTH = 600;
const HEIGHT = 120;

/** The runs of intervals that follow each other without a gap. */
function runsOf(intervals: Interval[], stepMs: number): Interval[][] {
  const runs: Interval[][] = [];
  let previous: number | undefined;
  for (const interval of intervals) {
    const at = Date.parse(interval.at);
    if (previous === undefined || at - previous > stepMs) runs.push([]);
    runs[runs.length - 1]!.push(interval);
    previous = at;
  }
  return runs;
}

export function OnlineChart({ online, hours }: { online: Schemas['FleetOnline']; hours: number }) {
  const stepMs = online.stepMinutes * 60_000;
  const to = Date.now();
  const from = to - hours * 3_600_000;
  const top = Math.max(1, ...online.intervals.map((one) => Math.max(one.onlineMax, one.enrolled)));
  const x = (at: string) => ((Date.parse(at) + stepMs / 2 - from) / (to - from)) * WIDTH;
  const y = (count: number) => HEIGHT - (count / top) * HEIGHT;
  const last = online.intervals.at(-1);
  const fewest = Math.min(...online.intervals.map((one) => one.onlineMin));
  const most = Math.max(...online.intervals.map((one) => one.onlineMax));
  const range = fewest === most ? `${most} throughout` : `between ${fewest} and ${most}`;
  const description = last
    ? `Agents online over the last ${hours} hours: ${range}, of ${last.enrolled} enrolled at the last count.`
    : `No counts of agents online in the last ${hours} hours yet: the worker counts them once a minute.`;
  return (
    <figure style={{ margin: 0 }}>
      <Group justify="space-between" mb={4} aria-hidden>
        <Text size="xs">
          <span style={{ color: 'var(--mantine-color-teal-8)' }}>■</span> online, fewest to most in each{' '}
          {online.stepMinutes} minutes <span style={{ color: 'var(--mantine-color-red-8)' }}>■</span> of them unhealthy
        </Text>
        <Text size="xs">scale 0–{top}</Text>
      </Group>
      <svg
        viewBox={`0 0 ${WIDTH} ${HEIGHT}`}
        width="100%"
        height={HEIGHT}
        preserveAspectRatio="none"
        role="img"
        aria-label={description}
        data-testid="online-chart"
      >
        <line x1={0} x2={WIDTH} y1={HEIGHT - 0.5} y2={HEIGHT - 0.5} stroke="var(--mantine-color-gray-5)" />
        {runsOf(online.intervals, stepMs).map((run) => {
          const upper = run.map((one) => `${x(one.at)},${y(one.onlineMax)}`);
          const lower = run.map((one) => `${x(one.at)},${y(one.onlineMin)}`).reverse();
          // A lone count is a dot: a line needs two.
          if (run.length === 1)
            return (
              <circle
                key={run[0]!.at}
                cx={x(run[0]!.at)}
                cy={y(run[0]!.onlineMax)}
                r={3}
                fill="var(--mantine-color-teal-8)"
                vectorEffect="non-scaling-stroke"
              />
            );
          return (
            <g key={run[0]!.at}>
              <polygon points={[...upper, ...lower].join(' ')} fill="var(--mantine-color-teal-2)" />
              <polyline
                points={upper.join(' ')}
                fill="none"
                stroke="var(--mantine-color-teal-8)"
                strokeWidth={2}
                vectorEffect="non-scaling-stroke"
              />
              <polyline
                points={run.map((one) => `${x(one.at)},${y(one.unhealthyMax)}`).join(' ')}
                fill="none"
                stroke="var(--mantine-color-red-8)"
                strokeWidth={1.5}
                vectorEffect="non-scaling-stroke"
              />
            </g>
          );
        })}
      </svg>
      <Group justify="space-between" component="figcaption">
        <Text size="xs">{hours} h ago</Text>
        <Text size="xs">{description}</Text>
        <Text size="xs">now</Text>
      </Group>
    </figure>
  );
}
