/**
 * Temporal's time-skipping test server for workflow tests, with the search attributes our
 * workflows set registered (the test server refuses undefined ones, as a real server does;
 * the dev server gets them as flags in scripts/infra/temporal.ts).
 */
import { temporal } from '@temporalio/proto';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { SEARCH_ATTRIBUTES } from '../../scripts/infra/temporal';

const INDEXED_TYPES = {
  Keyword: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
} as const;

/** The test server's start script, which every project's global setup finds (or resolves) once. */
function testServerPath(): string {
  const found = process.env.FLEET_TEMPORAL_TEST_SERVER;
  if (!found)
    throw new Error('FLEET_TEMPORAL_TEST_SERVER is not set: run the tests through jest (its global setup finds it)');
  return found;
}

export async function startTimeSkippingTemporal(): Promise<TestWorkflowEnvironment> {
  const env = await TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: { type: 'existing-path', path: testServerPath() } },
  });
  const searchAttributes = Object.fromEntries(
    Object.entries(SEARCH_ATTRIBUTES).map(([name, type]) => [name, INDEXED_TYPES[type]]),
  );
  await env.connection.operatorService.addSearchAttributes({ namespace: env.namespace ?? 'default', searchAttributes });
  return env;
}
