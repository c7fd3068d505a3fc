/** One hub connection's message allowance, on a clock of the test's own. */
import { HUB_LIMITS, MessageAllowance } from '../../api/hub/limits';

test('a burst is taken at once, then the rate; the first drop of each second is told', () => {
  const allowance = new MessageAllowance(0);
  for (let i = 0; i < HUB_LIMITS.burst; i++) expect(allowance.admit(0)).toBe('take');
  expect(allowance.admit(0)).toBe('drop-and-tell');
  expect(allowance.admit(0)).toBe('drop');
  expect(allowance.admit(1000 / HUB_LIMITS.messagesPerSecond)).toBe('take');
  expect(allowance.admit(1000)).toBe('take'); // refilled meanwhile
});

test('a connection that goes on dropping past the limit within a second is to be closed', () => {
  const allowance = new MessageAllowance(0);
  for (let i = 0; i < HUB_LIMITS.burst; i++) allowance.admit(0);
  const verdicts = Array.from({ length: HUB_LIMITS.droppedPerSecond + 1 }, () => allowance.admit(0));
  expect(verdicts.at(-2)).toBe('drop');
  expect(verdicts.at(-1)).toBe('close');
});

test('malformed messages close the connection when too many fall within the window', () => {
  const allowance = new MessageAllowance(0);
  for (let i = 1; i < HUB_LIMITS.malformed; i++) expect(allowance.malformed(i)).toBe(false);
  expect(allowance.malformed(HUB_LIMITS.malformed)).toBe(true);
  const spread = new MessageAllowance(0);
  const far = HUB_LIMITS.malformedWindowMs;
  for (let i = 0; i < HUB_LIMITS.malformed * 3; i++) expect(spread.malformed(i * far)).toBe(false);
});
