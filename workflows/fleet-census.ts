import {
  continueAsNew,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import { fleetCensusStatusQuery, type FleetCensusInput, type FleetCensusStatus } from './definitions';

const { countFleet } = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  retry: { maximumInterval: '30 seconds' },
});

const MINUTE_MS = 60_000;

/**
 * Counts every tenant's agents once a minute, for ever (the overview's "online over the
 * last 24 hours"), continuing as new before its history grows large. Each count is taken a
 * second into its minute (timers to the minute, not a minute after the last count, which
 * would drift and skip minutes); a minute the worker was down simply has no count.
 */
export async function fleetCensusWorkflow(input: FleetCensusInput): Promise<void> {
  const status: FleetCensusStatus = { countsThisRun: 0, last: null };
  setHandler(fleetCensusStatusQuery, () => status);
  for (let count = 0; ; count++) {
    const { tenants, pruned } = await countFleet(input.keepDays);
    status.countsThisRun = count + 1;
    status.last = { tenants, pruned, at: new Date().toISOString() };
    setCurrentDetails(
      [
        `Counts every tenant's agents once a minute; keeps ${input.keepDays} days (GET /api/fleet/online)`,
        '',
        `**Last count** ${status.last.at}: ${tenants} tenants, ${pruned} old counts deleted`,
      ].join('\n'),
    );
    if (workflowInfo().continueAsNewSuggested || count >= 500) await continueAsNew<typeof fleetCensusWorkflow>(input);
    await sleep(MINUTE_MS - (Date.now() % MINUTE_MS) + 1_000);
  }
}
