/**
 * The api's side of a handover's workflow (`handover:<id>`): it only starts it. The workflow
 * reads the handover from the database and decides; workflow, id and input come from
 * workflows/definitions.ts.
 */
import { sendToTemporal } from '../../../platform/temporal';
import { TypedSearchAttributes } from '@temporalio/common';
import type { Client } from '@temporalio/client';
import type { HandoverRow } from '../../../db/repos/handovers';
import type { Settings } from '../../../platform/settings';
import {
  handoverWorkflowId,
  handoverWorkflowType,
  type HandoverWorkflow,
  type HandoverWorkflowInput,
} from '../../../workflows/definitions';
import { tenantIdKey } from '../../../workflows/search-attributes';

/** How long the start may wait for Temporal before the handover is given up. */
const START_DEADLINE_MS = 10_000;

export class HandoverWorkflows {
  constructor(
    private readonly client: Client | undefined,
    private readonly settings: Pick<Settings, 'temporal'>,
  ) {}

  /** Starts the handover's workflow; throws when Temporal is away or not configured. */
  async start(handover: HandoverRow, agentCount: number): Promise<void> {
    const client = this.client;
    if (!client) throw new Error('this api has no Temporal client configured');
    const args: [HandoverWorkflowInput] = [{ handoverId: handover.id, tenantId: handover.tenant_id }];
    // Temporal down or hung: given up within about 2 s, not after the deadline.
    await sendToTemporal(client, () =>
      client.withDeadline(Date.now() + START_DEADLINE_MS, () =>
        client.workflow.start<HandoverWorkflow>(handoverWorkflowType, {
          workflowId: handoverWorkflowId(handover.id),
          taskQueue: this.settings.temporal.taskQueue,
          args,
          staticSummary: `Hand ${agentCount} agent${agentCount === 1 ? '' : 's'} over to peer '${handover.peer_name}'`,
          typedSearchAttributes: new TypedSearchAttributes([{ key: tenantIdKey, value: handover.tenant_id }]),
        }),
      ),
    );
  }
}
