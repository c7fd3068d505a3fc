import { continueAsNew, patched, proxyActivities, sleep, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { OutboxRetentionInput } from './definitions';

const { pruneOutbox, pruneAgentHistory } = proxyActivities<Activities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '1 minute',
  retry: { maximumInterval: '5 minutes' },
});

/** The patch that added the agents' history to the sweep: older histories replay without it. */
const AGENT_HISTORY = 'prune-agent-history';

/**
 * Keeps the event outbox to its retention window (the hub replays events with `since` only
 * within it), and the agents' history to `Agents:HistoryRetentionDays`. Runs for ever, one
 * sweep per interval, continuing as new before its history grows large.
 */
export async function outboxRetentionWorkflow(input: OutboxRetentionInput): Promise<void> {
  for (let sweep = 0; ; sweep++) {
    await pruneOutbox(input.retentionDays);
    if (patched(AGENT_HISTORY)) await pruneAgentHistory();
    if (workflowInfo().continueAsNewSuggested || sweep >= 500)
      await continueAsNew<typeof outboxRetentionWorkflow>(input);
    await sleep(input.intervalSeconds * 1000);
  }
}
