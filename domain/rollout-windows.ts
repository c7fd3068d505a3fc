/**
 * When a rollout may start a batch: its strategy's `windows` (days of the week, a local
 * from–to, an IANA time zone). Pure and deterministic (Intl's time-zone data, no clock), so
 * the rollout workflow computes the next opening from its own time (docs/rollouts.md, When it runs).
 */

export const WEEKDAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
export type Weekday = (typeof WEEKDAYS)[number];

/**
 * A window opens on each of `days` at `from` (local "HH:MM" in `timeZone`) and closes at `to`
 * the same day, or the next day when `to` is not after `from` (22:00–04:00 runs overnight).
 */
export interface RolloutWindow {
  days: Weekday[];
  from: string;
  to: string;
  timeZone: string;
}

const MINUTE = 60_000;
const DAY = 86_400_000;

/** Minutes since midnight of "HH:MM" (00:00 to 24:00). */
export function minutesOf(time: string): number {
  const [hours, minutes] = time.split(':').map(Number);
  return hours! * 60 + minutes!;
}

/** Whether Intl knows the IANA time zone. */
export function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

const formatters = new Map<string, Intl.DateTimeFormat>();

/** The wall-clock date and time in `timeZone` at instant `ms`, as if it were UTC (ms). */
function wallClock(timeZone: string, ms: number): number {
  let format = formatters.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(timeZone, format);
  }
  const parts = format.formatToParts(ms);
  const part = (type: Intl.DateTimeFormatPartTypes) => Number(parts.find((p) => p.type === type)?.value);
  return Date.UTC(part('year'), part('month') - 1, part('day'), part('hour'), part('minute'), part('second'));
}

/** The instant at which the wall clock in `timeZone` reads `wall` (ms as UTC); in a DST gap, about then. */
function instantOf(timeZone: string, wall: number): number {
  let instant = wall - (wallClock(timeZone, wall) - wall);
  instant = wall - (wallClock(timeZone, instant) - instant);
  return instant;
}

/**
 * The earliest instant at or after `now` (ms) inside one of the windows: `now` itself when a
 * window is open, else the next opening.
 */
export function nextWindowOpening(windows: readonly RolloutWindow[], now: number): number {
  let next = Infinity;
  for (const window of windows) {
    const today = Math.floor(wallClock(window.timeZone, now) / DAY) * DAY; // local midnight, as UTC
    const from = minutesOf(window.from);
    const to = minutesOf(window.to);
    // Yesterday's window may still be open (overnight); a week ahead holds every weekday.
    for (let offset = -1; offset <= 7; offset++) {
      const day = today + offset * DAY;
      if (!window.days.includes(WEEKDAYS[(new Date(day).getUTCDay() + 6) % 7]!)) continue;
      const opens = instantOf(window.timeZone, day + from * MINUTE);
      const closes = instantOf(window.timeZone, day + (to > from ? 0 : DAY) + to * MINUTE);
      if (opens <= now && now < closes) return now;
      if (opens > now) next = Math.min(next, opens);
    }
  }
  return next;
}

/** "mon,tue 22:00–04:00 Europe/Berlin; sat 10:00–12:00 UTC" */
export function describeWindows(windows: readonly RolloutWindow[]): string {
  return windows.map((w) => `${w.days.join(',')} ${w.from}–${w.to} ${w.timeZone}`).join('; ');
}
