/**
 * What every activity shares, in Temporal's mock activity context: a long step heartbeats
 * until it settles, and a domain refusal fails the activity for good while anything else
 * stays retryable.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { ApplicationFailure } from '@temporalio/common';
import { failDomainErrorsForGood, whileHeartbeating } from '../../activities/keep-alive';
import { NotFoundError } from '../../domain/errors';

test('a long step heartbeats at once and on while it runs, and answers what it settled with', async () => {
  const env = new MockActivityEnvironment();
  let beats = 0;
  let secondBeat!: () => void;
  const twoBeats = new Promise<void>((resolve) => (secondBeat = resolve));
  env.on('heartbeat', () => {
    beats += 1;
    if (beats === 2) secondBeat();
  });
  const answer = await env.run(() => whileHeartbeating(() => twoBeats.then(() => 'done')));
  expect(answer).toBe('done');
});

test('a domain refusal fails for good, with its kind as the failure type; other errors stay retryable', async () => {
  const env = new MockActivityEnvironment();
  const activities = failDomainErrorsForGood({
    refuses: async () => {
      throw new NotFoundError('rollout', 'r-1');
    },
    breaks: async () => {
      throw new Error('connection reset');
    },
  });
  const refused = await env.run(activities.refuses).catch((error: unknown) => error);
  expect(refused).toBeInstanceOf(ApplicationFailure);
  expect(refused).toMatchObject({ nonRetryable: true, type: 'NotFoundError', message: "No rollout with id 'r-1'." });
  const broken = await env.run(activities.breaks).catch((error: unknown) => error);
  expect(broken).not.toBeInstanceOf(ApplicationFailure);
  expect((broken as Error).message).toBe('connection reset');
});
