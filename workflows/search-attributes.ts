import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/**
 * The search attributes our workflows set, so an operator finds them in the Temporal UI
 * (`RolloutState = "paused"`). The dev server and docker-compose register them
 * (scripts/infra/temporal.ts SEARCH_ATTRIBUTES); the names must match.
 */
export const tenantIdKey = defineSearchAttributeKey('TenantId', SearchAttributeType.KEYWORD);
export const rolloutIdKey = defineSearchAttributeKey('RolloutId', SearchAttributeType.KEYWORD);
export const configurationIdKey = defineSearchAttributeKey('ConfigurationId', SearchAttributeType.KEYWORD);
export const rolloutStateKey = defineSearchAttributeKey('RolloutState', SearchAttributeType.KEYWORD);
export const gitSourceIdKey = defineSearchAttributeKey('GitSourceId', SearchAttributeType.KEYWORD);
export const federatedRolloutStateKey = defineSearchAttributeKey('FederatedRolloutState', SearchAttributeType.KEYWORD);
