/** Addresses of the suite's infrastructure, published by global-setup.js. */
export interface TestInfra {
  postgresUrl: string;
  templateDatabase: string;
  temporalAddress: string;
  /** The time-skipping test server's start script (Java), for TestWorkflowEnvironment.createTimeSkipping. */
  temporalTestServer: string;
  oidcIssuer: string;
  strangerIssuer: string;
}

export function testInfra(): TestInfra {
  const raw = process.env.FLEET_TEST_INFRA;
  if (!raw)
    throw new Error('FLEET_TEST_INFRA is not set: run the tests through jest (global setup starts the infrastructure)');
  return JSON.parse(raw) as TestInfra;
}
