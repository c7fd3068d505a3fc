/**
 * A rollout's strategy as form inputs, for a new rollout and for a Git source's rollout
 * template: batches of a number of agents or of a share of the target, the bake between
 * batches, the apply timeout, the failure threshold and what crossing it does, offline
 * agents, the health gate, the time windows batches start in. The inputs' bounds are the
 * API's (RolloutStrategy), which says what is wrong with a window (a time, a zone).
 */
import { Button, Checkbox, Group, NumberInput, Select, Stack, Text, TextInput } from '@mantine/core';
import type { Schemas } from '../../api/client';

export type Strategy = Schemas['RolloutStrategy'];
/** A strategy as a rollout or a template read before the offline-agent fields existed may show it. */
type ShownStrategy = Omit<Strategy, 'offlineAgents' | 'lateArrivalSeconds'> &
  Partial<Pick<Strategy, 'offlineAgents' | 'lateArrivalSeconds'>>;

const WEEK_SECONDS = 7 * 86_400;

export const DEFAULT_STRATEGY: Strategy = {
  batchSize: 1,
  bakeSeconds: 0,
  applyTimeoutSeconds: 300,
  maxFailurePercent: 0,
  onFailure: 'pause',
  offlineAgents: 'defer',
  lateArrivalSeconds: WEEK_SECONDS,
};

const OFFLINE_AGENTS = [
  { value: 'defer', label: 'defer: they get it when they connect' },
  { value: 'skip', label: 'skip them' },
  { value: 'fail', label: 'fail them after the apply timeout' },
];

const BATCHES = [
  { value: 'size', label: 'a number of agents' },
  { value: 'percent', label: 'a share of the target (%)' },
];

/** The strategy in a line, as a rollout's page and a Git source's template show it. */
export function describeStrategy(strategy: ShownStrategy): string {
  const batches = strategy.batchSize ? `batches of ${strategy.batchSize}` : `batches of ${strategy.batchPercent} %`;
  const offline =
    strategy.offlineAgents === 'defer'
      ? `, offline agents deferred (late arrivals for ${strategy.lateArrivalSeconds ?? 0} s)`
      : strategy.offlineAgents
        ? `, offline agents ${strategy.offlineAgents === 'skip' ? 'skipped' : 'failed'}`
        : '';
  const gate = strategy.healthGate
    ? `, health gate (unhealthy ${strategy.healthGate.unhealthyAfterSeconds} s or over ${strategy.healthGate.maxDisconnects} disconnects fails)`
    : '';
  const windows = strategy.windows?.length
    ? `, batches start only ${strategy.windows.map((w) => `${w.days.join(',')} ${w.from}–${w.to} ${w.timeZone}`).join('; ')}`
    : '';
  return `${batches}, bake ${strategy.bakeSeconds} s, apply timeout ${strategy.applyTimeoutSeconds} s, max failures ${strategy.maxFailurePercent} %, on failure ${strategy.onFailure}${offline}${gate}${windows}`;
}

/** The strategy with its batch given one way only, as the API wants it. */
function batchedBy(strategy: Strategy, by: string | null): Strategy {
  const { batchSize, batchPercent, ...rest } = strategy;
  if (by === 'percent') return { ...rest, batchPercent: batchPercent ?? 10 };
  return { ...rest, batchSize: batchSize ?? 1 };
}

export function StrategyFields({ strategy, onChange }: { strategy: Strategy; onChange: (next: Strategy) => void }) {
  const set = (change: Partial<Strategy>) => onChange({ ...strategy, ...change });
  const byPercent = strategy.batchPercent !== undefined;
  return (
    <>
      <Group grow align="flex-start">
        <Select
          label="Batches of"
          data={BATCHES}
          value={byPercent ? 'percent' : 'size'}
          onChange={(by) => onChange(batchedBy(strategy, by))}
          allowDeselect={false}
        />
        {byPercent ? (
          <NumberInput
            label="Percent of the target per batch"
            description="0.01 to 100"
            min={0.01}
            max={100}
            decimalScale={2}
            value={strategy.batchPercent}
            onChange={(v) => set({ batchPercent: Number(v) })}
          />
        ) : (
          <NumberInput
            label="Agents per batch"
            min={1}
            max={1_000_000}
            allowDecimal={false}
            value={strategy.batchSize}
            onChange={(v) => set({ batchSize: Number(v) })}
          />
        )}
        <NumberInput
          label="Bake (seconds)"
          min={0}
          max={7 * 86_400}
          allowDecimal={false}
          value={strategy.bakeSeconds}
          onChange={(v) => set({ bakeSeconds: Number(v) })}
        />
      </Group>
      <Group grow align="flex-start">
        <NumberInput
          label="Apply timeout (seconds)"
          min={1}
          max={86_400}
          allowDecimal={false}
          value={strategy.applyTimeoutSeconds}
          onChange={(v) => set({ applyTimeoutSeconds: Number(v) })}
        />
        <NumberInput
          label="Max failures (%)"
          min={0}
          max={100}
          value={strategy.maxFailurePercent}
          onChange={(v) => set({ maxFailurePercent: Number(v) })}
        />
        <Select
          label="On failure"
          data={['pause', 'rollback']}
          value={strategy.onFailure}
          onChange={(v) => set({ onFailure: v === 'rollback' ? 'rollback' : 'pause' })}
          allowDeselect={false}
        />
      </Group>
      <Group grow align="flex-start">
        <Select
          label="Offline agents"
          description="An agent offline when its batch is pushed"
          data={OFFLINE_AGENTS}
          value={strategy.offlineAgents ?? 'defer'}
          onChange={(v) => set({ offlineAgents: v === 'skip' || v === 'fail' ? v : 'defer' })}
          allowDeselect={false}
        />
        <NumberInput
          label="Late arrivals (seconds)"
          description="How long a completed rollout still delivers to deferred agents (at most 30 days)"
          min={0}
          max={30 * 86_400}
          allowDecimal={false}
          disabled={(strategy.offlineAgents ?? 'defer') !== 'defer'}
          value={strategy.lateArrivalSeconds ?? WEEK_SECONDS}
          onChange={(v) => set({ lateArrivalSeconds: Number(v) })}
        />
      </Group>
      <HealthGateFields strategy={strategy} set={set} />
      <WindowFields strategy={strategy} set={set} />
    </>
  );
}

const DEFAULT_GATE = { unhealthyAfterSeconds: 30, maxDisconnects: 3 };

/** The health gate: off, or how long unhealthy and how many disconnects during the bake fail an agent. */
function HealthGateFields({ strategy, set }: { strategy: Strategy; set: (change: Partial<Strategy>) => void }) {
  const gate = strategy.healthGate;
  return (
    <Group grow align="flex-start">
      <Checkbox
        label="Health gate"
        description="During each bake, agents that applied and then turn unhealthy or keep disconnecting fail"
        checked={gate !== undefined}
        onChange={(event) =>
          set({
            healthGate: event.currentTarget.checked ? DEFAULT_GATE : undefined,
            ...(event.currentTarget.checked && strategy.bakeSeconds < DEFAULT_GATE.unhealthyAfterSeconds
              ? { bakeSeconds: DEFAULT_GATE.unhealthyAfterSeconds }
              : {}),
          })
        }
      />
      <NumberInput
        label="Unhealthy for (seconds)"
        description="At most the bake"
        min={1}
        max={Math.max(1, strategy.bakeSeconds)}
        allowDecimal={false}
        disabled={!gate}
        value={gate?.unhealthyAfterSeconds ?? DEFAULT_GATE.unhealthyAfterSeconds}
        onChange={(v) => gate && set({ healthGate: { ...gate, unhealthyAfterSeconds: Number(v) } })}
      />
      <NumberInput
        label="Disconnects allowed"
        min={0}
        max={1000}
        allowDecimal={false}
        disabled={!gate}
        value={gate?.maxDisconnects ?? DEFAULT_GATE.maxDisconnects}
        onChange={(v) => gate && set({ healthGate: { ...gate, maxDisconnects: Number(v) } })}
      />
    </Group>
  );
}

type Window = NonNullable<Strategy['windows']>[number];
type Weekday = Window['days'][number];

const DAYS: { value: Weekday; label: string }[] = [
  { value: 'mon', label: 'Mon' },
  { value: 'tue', label: 'Tue' },
  { value: 'wed', label: 'Wed' },
  { value: 'thu', label: 'Thu' },
  { value: 'fri', label: 'Fri' },
  { value: 'sat', label: 'Sat' },
  { value: 'sun', label: 'Sun' },
];

/** Every IANA zone the browser knows, UTC first. */
const TIME_ZONES = ['UTC', ...Intl.supportedValuesOf('timeZone').filter((zone) => zone !== 'UTC')];

const workingHoursHere = (): Window => ({
  days: ['mon', 'tue', 'wed', 'thu', 'fri'],
  from: '09:00',
  to: '17:00',
  timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC',
});

/** Windows batches start in (none: any time): days, from–to in a zone; added and removed one by one. */
function WindowFields({ strategy, set }: { strategy: Strategy; set: (change: Partial<Strategy>) => void }) {
  const windows = strategy.windows ?? [];
  const update = (i: number, change: Partial<Window>) =>
    set({ windows: windows.map((window, j) => (j === i ? { ...window, ...change } : window)) });
  const remove = (i: number) => {
    const left = windows.filter((_, j) => j !== i);
    set({ windows: left.length > 0 ? left : undefined });
  };
  return (
    <Stack gap="xs" role="group" aria-label="Time windows">
      <Text size="sm" fw={500}>
        Time windows
      </Text>
      <Text size="xs" c="dimmed">
        A batch starts only inside one of them; a batch that started finishes. None: any time.
      </Text>
      {windows.map((window, i) => (
        <Stack key={i} gap={4} role="group" aria-label={`Window ${i + 1}`}>
          <Checkbox.Group
            label={`Window ${i + 1}: days`}
            value={window.days}
            onChange={(days) => update(i, { days: DAYS.map((day) => day.value).filter((day) => days.includes(day)) })}
          >
            <Group gap="sm" mt={4}>
              {DAYS.map((day) => (
                <Checkbox key={day.value} value={day.value} label={day.label} />
              ))}
            </Group>
          </Checkbox.Group>
          <Group grow align="flex-end">
            <TextInput
              label="From"
              description="HH:MM"
              value={window.from}
              onChange={(e) => update(i, { from: e.currentTarget.value })}
            />
            <TextInput
              label="To"
              description="HH:MM, up to 24:00"
              value={window.to}
              onChange={(e) => update(i, { to: e.currentTarget.value })}
            />
            <Select
              label="Time zone"
              searchable
              data={TIME_ZONES}
              value={window.timeZone}
              onChange={(zone) => zone && update(i, { timeZone: zone })}
              allowDeselect={false}
            />
            <Button variant="default" onClick={() => remove(i)}>
              Remove window {i + 1}
            </Button>
          </Group>
        </Stack>
      ))}
      <Group>
        <Button variant="default" onClick={() => set({ windows: [...windows, workingHoursHere()] })}>
          Add a time window
        </Button>
      </Group>
    </Stack>
  );
}
