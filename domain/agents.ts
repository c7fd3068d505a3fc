/**
 * What operators do to an agent: move it to another group, revoke its credentials, approve
 * or reject it when enrolment waits for approval. One function each, for every way of
 * asking (`POST /api/agents/{id}/move` and `POST /api/groups/{id}/members` move alike), each
 * with its event, written in the caller's transaction.
 */
import type { Db } from '../db/connection';
import { notifyAgentCutoff } from '../db/notify';
import { decidePendingAgent, moveAgent, revokeAgent, type AgentRow } from '../db/repos/agents';
import { emitEvents } from '../db/repos/events';
import type { GroupRow } from '../db/repos/groups';
import { DomainError, InvalidTransitionError, NotFoundError, StaleVersionError } from './errors';

const SOURCE = '/api/agents';

/**
 * Moves an agent to a group: an agent or group the tenant does not have is NotFoundError
 * naming it, a soft-deleted group a DomainError, a group version other than `groupVersions`
 * (If-Match on the group) a StaleVersionError. A move into the agent's own group changes
 * nothing and emits nothing.
 */
export async function moveAgentToGroup(
  db: Db,
  tenantId: string,
  ids: { agentId: string; groupId: string },
  groupVersions?: number[],
): Promise<{ agent: AgentRow; group: GroupRow }> {
  const outcome = await moveAgent(db, tenantId, ids.agentId, ids.groupId, groupVersions);
  switch (outcome.kind) {
    case 'no-agent':
      throw new NotFoundError('agent', ids.agentId);
    case 'no-group':
      throw new NotFoundError('group', ids.groupId);
    case 'group-deleted':
      throw new DomainError(
        `Group '${outcome.group.name}' (${ids.groupId}) is deleted; restore it before moving agents into it.`,
      );
    case 'precondition-failed':
      throw new StaleVersionError('group', ids.groupId);
    case 'unchanged':
      return outcome;
    case 'moved':
      await emitEvents(db, [
        {
          tenantId,
          type: 'agent.moved',
          source: SOURCE,
          subject: ids.agentId,
          data: { agentId: ids.agentId, fromGroupId: outcome.fromGroupId, toGroupId: ids.groupId },
        },
      ]);
      return outcome;
  }
}

/**
 * Revokes the agent's certificates and its token binding (see revokeAgent), announces it
 * and closes its live sessions on every replica at commit. A repeat changes nothing and
 * emits nothing, but still sends the cut-off.
 */
export async function revokeAgentAccess(db: Db, tenantId: string, agentId: string): Promise<AgentRow> {
  const outcome = await revokeAgent(db, tenantId, agentId);
  if (outcome.kind === 'no-agent') throw new NotFoundError('agent', agentId);
  if (outcome.kind === 'handed-over') {
    throw new InvalidTransitionError(
      `Agent '${agentId}' is handed-over to another installation; it is no longer this one's to revoke.`,
    );
  }
  if (outcome.changed) {
    await emitEvents(db, [
      {
        tenantId,
        type: 'agent.cert-revoked',
        source: SOURCE,
        subject: agentId,
        data: { agentId, serials: outcome.serials },
      },
    ]);
  }
  // Its session ends with the revocation (every replica cuts it off), and the agent is no
  // longer `online`: said as a disconnect ends any session, which the gateway no longer can.
  if (outcome.wasConnected) {
    await emitEvents(db, [
      {
        tenantId,
        type: 'agent.disconnected',
        source: '/v1/opamp',
        subject: agentId,
        data: { agentId, reason: 'revoked' },
      },
    ]);
  }
  await notifyAgentCutoff(db, { action: 'revoke', agentId });
  return outcome.agent;
}

const decisions = {
  approve: { status: 'enrolling', event: 'agent.approved', by: 'approvedBy' },
  reject: { status: 'revoked', event: 'agent.rejected', by: 'rejectedBy' },
} as const;

export type AgentDecision = keyof typeof decisions;

/**
 * Approves or rejects an agent held as `pending-approval`; any other status is an
 * InvalidTransitionError. Either way the held session is closed at commit: an approved
 * agent reconnects and is admitted, a rejected one is refused.
 */
export async function decideAgent(
  db: Db,
  tenantId: string,
  agentId: string,
  decision: AgentDecision,
  decidedBy: string,
): Promise<AgentRow> {
  const { status, event, by } = decisions[decision];
  const outcome = await decidePendingAgent(db, tenantId, agentId, status);
  if (outcome.kind === 'no-agent') throw new NotFoundError('agent', agentId);
  if (outcome.kind === 'not-pending') {
    throw new InvalidTransitionError(
      `Agent '${agentId}' is ${outcome.agent.status}; only a pending-approval agent can be ${decision}d.`,
    );
  }
  await emitEvents(db, [
    { tenantId, type: event, source: SOURCE, subject: agentId, data: { agentId, [by]: decidedBy } },
  ]);
  await notifyAgentCutoff(db, { action: decision, agentId });
  return outcome.agent;
}
