/** What the health gate says of an agent it fails, and when a batch's failures stop a rollout. */
import { batchFailure, healthVerdict } from '../../domain/rollouts';

test("an unhealthy agent's verdict names its deepest unhealthy component and that component's message", () => {
  const health = {
    lastError: 'pipeline failing',
    componentHealthMap: {
      'pipeline:logs': { healthy: true },
      'pipeline:traces': {
        status: 'StatusRecoverableError',
        componentHealthMap: {
          'receiver:otlp': { healthy: true },
          'exporter:otlp': { lastError: 'connection refused' },
        },
      },
    },
  };
  expect(healthVerdict({ unhealthyForSeconds: 31 }, health)).toBe(
    'unhealthy for 31 s after applying the version (pipeline:traces/exporter:otlp: connection refused)',
  );
  // Without components: the agent's own message, or its status, or nothing said.
  expect(healthVerdict({ unhealthyForSeconds: 5 }, { lastError: 'out of memory' })).toBe(
    'unhealthy for 5 s after applying the version (the agent: out of memory)',
  );
  expect(healthVerdict({ unhealthyForSeconds: 5 }, { status: 'StatusFatalError' })).toBe(
    'unhealthy for 5 s after applying the version (the agent: StatusFatalError)',
  );
  expect(healthVerdict({ unhealthyForSeconds: 5 }, null)).toBe(
    'unhealthy for 5 s after applying the version (the agent: unhealthy)',
  );
  expect(healthVerdict({ disconnects: 4 }, { healthy: true })).toBe(
    "the agent's connection dropped 4 times after it applied the version",
  );
});

test('a batch stops the rollout only when more than maxFailurePercent of the agents that answered failed', () => {
  expect(batchFailure({ maxFailurePercent: 0 }, { batch: 1, succeeded: 5, failed: 0 })).toBeUndefined();
  expect(batchFailure({ maxFailurePercent: 50 }, { batch: 2, succeeded: 1, failed: 1 })).toBeUndefined();
  expect(batchFailure({ maxFailurePercent: 0 }, { batch: 3, succeeded: 2, failed: 1 })).toBe(
    '1 of 3 agents of batch 3 failed (33.3% > maxFailurePercent 0)',
  );
  expect(batchFailure({ maxFailurePercent: 100 }, { batch: 1, succeeded: 0, failed: 4 })).toBeUndefined();
});
