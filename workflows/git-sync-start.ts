import { TypedSearchAttributes } from '@temporalio/common';
import { gitSyncWorkflowId, type GitSyncWorkflowInput } from './definitions';
import { gitSourceIdKey, tenantIdKey } from './search-attributes';

/**
 * How a source's loop is started, the same from the api (signal-with-start on every change,
 * webhook and forced sync) and from a worker (which starts the loops that are missing).
 */
export function gitSyncStartOptions(source: { id: string; tenant_id: string }, taskQueue: string) {
  const args: [GitSyncWorkflowInput] = [{ sourceId: source.id, tenantId: source.tenant_id }];
  return {
    workflowId: gitSyncWorkflowId(source.id),
    taskQueue,
    args,
    typedSearchAttributes: new TypedSearchAttributes([
      { key: tenantIdKey, value: source.tenant_id },
      { key: gitSourceIdKey, value: source.id },
    ]),
  };
}
