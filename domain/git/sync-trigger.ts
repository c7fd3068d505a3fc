/** What made a run happen: the inbound webhook, the poll timer, or a forced sweep through the API. */
export type GitSyncTrigger = 'webhook' | 'poll' | 'manual';
