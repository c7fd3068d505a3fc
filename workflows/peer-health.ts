import {
  continueAsNew,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import { peerHealthStatusQuery, type PeerHealthInput, type PeerHealthStatus } from './definitions';

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
export async function peerHealthWorkflow(input: PeerHealthInput): Promise<void> {
  const status: PeerHealthStatus = { sweepsThisRun: 0, intervalSeconds: input.intervalSeconds, last: null };
  setHandler(peerHealthStatusQuery, () => status);
  for (let sweep = 0; ; sweep++) {
    const { intervalSeconds, pinged, healthy, changed } = await pingAllPeers();
    status.sweepsThisRun = sweep + 1;
    status.intervalSeconds = intervalSeconds;
    status.last = { pinged, healthy, changed, at: new Date().toISOString() };
    setCurrentDetails(
      [
        `Pings every federation peer every ${intervalSeconds} s`,
        '',
        `**Last sweep** ${status.last.at}: ${healthy} of ${pinged} peers healthy, ${changed} changed (GET /api/federation/peers)`,
      ].join('\n'),
    );
    if (workflowInfo().continueAsNewSuggested || sweep >= 500)
      await continueAsNew<typeof peerHealthWorkflow>({ intervalSeconds });
    await sleep(intervalSeconds * 1000);
  }
}
