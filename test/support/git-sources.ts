/**
 * The api with a real Temporal client on a task queue of its own, with no worker: a Git
 * source's loop is started and signalled for real, and its history shows every wake-up
 * the api sent (nothing runs it, so nothing consumes them).
 */
import { randomBytes } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import type { Logger } from 'pino';
import { gitSyncWorkflowId, type GitSyncWake } from '../../workflows/definitions';
import { startTestApp, type TestApp } from './app';
import { testInfra } from './infra-env';

export interface GitSourcesApp {
  t: TestApp;
  client: Client;
  close(): Promise<void>;
}

export async function startGitSourcesApp(
  env: Record<string, string> = {},
  options: { logger?: Logger } = {},
): Promise<GitSourcesApp> {
  const connection = await Connection.connect({ address: testInfra().temporalAddress });
  const client = new Client({ connection });
  const taskQueue = `git-sources-${randomBytes(4).toString('hex')}`;
  const t = await startTestApp({ Temporal__TaskQueue: taskQueue, ...env }, { temporal: client, ...options });
  return {
    t,
    client,
    close: async () => {
      await t.close();
      await connection.close();
    },
  };
}

/** The wake-ups the source's loop received, oldest first ([] when it has no loop). */
export async function wakeUps(client: Client, sourceId: string): Promise<GitSyncWake['reason'][]> {
  let history;
  try {
    history = await client.workflow.getHandle(gitSyncWorkflowId(sourceId)).fetchHistory();
  } catch (error) {
    if ((error as Error).name === 'WorkflowNotFoundError') return [];
    throw error;
  }
  const converter = client.options.loadedDataConverter.payloadConverter;
  return (history.events ?? [])
    .map((event) => event.workflowExecutionSignaledEventAttributes)
    .filter((signal) => signal?.signalName === 'gitSyncWakeSignal')
    .map((signal) => converter.fromPayload<GitSyncWake>(signal!.input!.payloads![0]!).reason);
}

/** A source's fields as an operator would send them; `overrides` replace any. */
export function sourceBody(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: `source-${randomBytes(3).toString('hex')}`,
    repoUrl: 'https://git.example.com/acme/fleet-config.git',
    branch: 'main',
    path: 'collectors',
    ...overrides,
  };
}
