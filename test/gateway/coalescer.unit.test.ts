import { BatchSpacing, Coalescer } from '../../gateway/coalescer';

afterEach(() => jest.useRealTimers());

test('a batch starts at once at rest; the next waits out the spacing, with one retry however often it is asked', () => {
  jest.useFakeTimers();
  const spacing = new BatchSpacing(10);
  const retry = jest.fn();
  expect(spacing.mayStart(retry)).toBe(true);
  expect(spacing.mayStart(retry)).toBe(false);
  expect(spacing.mayStart(retry)).toBe(false);
  jest.advanceTimersByTime(9);
  expect(retry).not.toHaveBeenCalled();
  jest.advanceTimersByTime(1);
  expect(retry).toHaveBeenCalledTimes(1);
  expect(spacing.mayStart(retry)).toBe(true);
});

test('requests that come while the spacing runs go together in the next batch', async () => {
  jest.useFakeTimers();
  const batches: number[][] = [];
  const coalescer = new Coalescer<number, number>(
    async (inputs) => {
      batches.push(inputs);
      return inputs.map((input) => input * 2);
    },
    { maxBatch: 100, maxInFlight: 1, keyOf: String },
  );
  const first = coalescer.submit(1);
  await jest.advanceTimersByTimeAsync(0); // the turn ends: the first goes alone, at once
  expect(batches).toEqual([[1]]);
  const rest = [2, 3, 4].map((n) => coalescer.submit(n));
  await jest.advanceTimersByTimeAsync(5);
  expect(batches).toEqual([[1]]);
  await jest.advanceTimersByTimeAsync(5);
  expect(batches).toEqual([[1], [2, 3, 4]]);
  expect(await Promise.all([first, ...rest])).toEqual([2, 4, 6, 8]);
});
