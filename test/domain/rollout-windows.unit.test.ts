/** When a rollout's windows let a batch start: time zones, overnight windows, daylight saving. */
import { describeWindows, isTimeZone, nextWindowOpening, type RolloutWindow } from '../../domain/rollout-windows';

const at = (iso: string) => Date.parse(iso);
const next = (windows: RolloutWindow[], now: string) => new Date(nextWindowOpening(windows, at(now))).toISOString();

// 2026-11-29 is a Sunday; Berlin is UTC+1 in winter, UTC+2 from 2026-03-29 02:00.
const weeknights: RolloutWindow = {
  days: ['mon', 'tue', 'wed', 'thu', 'fri'],
  from: '22:00',
  to: '04:00',
  timeZone: 'Europe/Berlin',
};

test('an overnight window opens on its days in its time zone and stays open into the next morning', () => {
  expect(next([weeknights], '2026-11-29T12:00:00Z')).toBe('2026-11-30T21:00:00.000Z'); // Sunday: Monday 22:00 Berlin
  expect(next([weeknights], '2026-11-30T21:30:00Z')).toBe('2026-11-30T21:30:00.000Z'); // open: now
  expect(next([weeknights], '2026-12-05T02:59:00Z')).toBe('2026-12-05T02:59:00.000Z'); // Friday's, Saturday 03:59
  expect(next([weeknights], '2026-12-05T03:00:00Z')).toBe('2026-12-07T21:00:00.000Z'); // closed at 04:00: Monday
});

test('the wall clock is followed across daylight saving time', () => {
  // Monday 2026-03-30 22:00 in Berlin is summer time: 20:00 UTC.
  expect(next([weeknights], '2026-03-28T12:00:00Z')).toBe('2026-03-30T20:00:00.000Z');
  const newYork: RolloutWindow = { days: ['mon'], from: '09:00', to: '24:00', timeZone: 'America/New_York' };
  expect(next([newYork], '2026-11-29T00:00:00Z')).toBe('2026-11-30T14:00:00.000Z');
});

test('of several windows the earliest opening wins; a window a week away is found', () => {
  const saturday: RolloutWindow = { days: ['sat'], from: '10:00', to: '11:00', timeZone: 'UTC' };
  const tokyo: RolloutWindow = { days: ['sun'], from: '08:00', to: '09:00', timeZone: 'Asia/Tokyo' };
  expect(next([saturday], '2026-11-28T11:00:00Z')).toBe('2026-12-05T10:00:00.000Z');
  expect(next([saturday, tokyo], '2026-11-28T11:00:00Z')).toBe('2026-11-28T23:00:00.000Z');
  expect(describeWindows([weeknights, saturday])).toBe(
    'mon,tue,wed,thu,fri 22:00–04:00 Europe/Berlin; sat 10:00–11:00 UTC',
  );
});

test('time zones are IANA names Intl knows', () => {
  expect(isTimeZone('Europe/Berlin')).toBe(true);
  expect(isTimeZone('UTC')).toBe(true);
  expect(isTimeZone('Mars/Olympus_Mons')).toBe(false);
  expect(isTimeZone('')).toBe(false);
});
