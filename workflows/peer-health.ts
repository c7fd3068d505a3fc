import { continueAsNew, proxyActivities, sleep, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { PeerHealthInput } from './definitions';

const { pingAllPeers } = proxyActivities<Activities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '1 minute',
  retry: { maximumInterval: '1 minute' },
});

/**
 * Keeps every peer's `healthy` and `lastSeenAt` current: one sweep per interval, for ever,
 * continuing as new before its history grows large. The interval is the worker's setting
 * of the moment, which each sweep reports (the input holds the one the worker started it
 * with), so a changed Federation:HealthCheckSeconds takes effect without restarting this singleton.
 */
export async function peerHealthWorkflow(_input: PeerHealthInput): Promise<void> {
  for (let sweep = 0; ; sweep++) {
    const { intervalSeconds } = await pingAllPeers();
    if (workflowInfo().continueAsNewSuggested || sweep >= 500)
      await continueAsNew<typeof peerHealthWorkflow>({ intervalSeconds });
    await sleep(intervalSeconds * 1000);
  }
}
