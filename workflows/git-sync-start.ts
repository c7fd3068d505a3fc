import { TypedSearchAttributes } from '@temporalio/common';
import { gitSyncWorkflowId, type GitSyncWorkflowInput } from './definitions';
import { gitSourceIdKey, tenantIdKey } from './search-attributes';

/**
 * How a source's loop is started, the same from the api (signal-with-start on every change,
 * webhook and forced sync) and from a worker (which starts the loops that are missing).
 */
export function gitSyncStartOptions(source: { id: string; tenant_id: string; name?: string }, taskQueue: string) {
  const args: [GitSyncWorkflowInput] = [{ sourceId: source.id, tenantId: source.tenant_id }];
  return {
    staticSummary: `Git sync of ${source.name ? `'${source.name}'` : `source ${source.id}`}`,
    staticDetails: `Git source ${source.id}: polls its branch, and syncs on webhooks and forced syncs (GET /api/git-sources/${source.id}).`,
    workflowId: gitSyncWorkflowId(source.id),
    taskQueue,
    args,
    typedSearchAttributes: new TypedSearchAttributes([
      { key: tenantIdKey, value: source.tenant_id },
      { key: gitSourceIdKey, value: source.id },
    ]),
  };
}
