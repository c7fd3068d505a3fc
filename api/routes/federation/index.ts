/**
 * Every federation route (docs/federation.md): peers and ping, federated agents, handovers
 * (the sender's and the receiver's endpoints) and federated rollouts, each in its own module.
 */
import type { Client } from '@temporalio/client';
import type { Outbound } from '../../../platform/outbound';
import type { RouteDef } from '../../http/route';
import type { ResourceRouteOptions } from '../options';
import { federatedAgentRoutes } from './agents';
import { handoverRoutes } from './handovers';
import { incomingHandoverRoutes } from './incoming';
import { peerGroupRoutes } from './peer-groups';
import { peerRoutes } from './peers';
import { federatedRolloutRoutes } from './rollouts';

export interface FederationRouteOptions extends ResourceRouteOptions {
  temporal?: Client;
  /** Where peers may be reached (Outbound:*). */
  outbound: Outbound;
}

export function federationRoutes(options: FederationRouteOptions): RouteDef[] {
  return [
    ...peerRoutes(options),
    ...peerGroupRoutes(options),
    ...federatedAgentRoutes(options),
    ...handoverRoutes(options),
    ...incomingHandoverRoutes(options),
    ...federatedRolloutRoutes(options),
  ];
}
