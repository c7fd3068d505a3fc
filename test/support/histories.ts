/**
 * Workflow histories recorded from real runs, for the replay test (test/workflows/replay.unit.test.ts).
 * Tests that run a rollout call `recordHistories`; it writes only when
 * `RECORD_WORKFLOW_HISTORIES=1` (`npm run record:histories`), one JSON file per run of the
 * workflow (a rollout that continued as new has several).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

export const HISTORIES_DIR = path.resolve(__dirname, '../workflows/histories');

const { History } = temporal.api.history.v1;
/**
 * JSON through the proto classes' own toObject/fromObject: @temporalio/common's
 * historyToJSON fails here ("type must be a Type"), as it carries a second copy of
 * protobufjs next to the one that decoded the history.
 */
const JSON_FORM = { longs: String, enums: String, bytes: String } as const;
export const historyFromFile = (json: string) => History.fromObject(JSON.parse(json) as Record<string, unknown>);

export async function recordHistories(client: Client, workflowId: string, name: string): Promise<void> {
  if (process.env.RECORD_WORKFLOW_HISTORIES !== '1') return;
  mkdirSync(HISTORIES_DIR, { recursive: true });
  const runs: string[] = [];
  let runId: string | undefined = (await client.workflow.getHandle(workflowId).describe()).runId;
  while (runId) {
    const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    runs.unshift(JSON.stringify(History.toObject(History.fromObject(history), JSON_FORM), null, 1));
    runId = history.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || undefined;
  }
  runs.forEach((json, i) =>
    writeFileSync(
      path.join(HISTORIES_DIR, runs.length === 1 ? `${name}.json` : `${name}.run${i + 1}.json`),
      `${json}\n`,
    ),
  );
}
