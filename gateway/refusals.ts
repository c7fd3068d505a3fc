/**
 * Why a message is refused, what the agent is told, and who the log names; each transport
 * maps a refusal to its own answer (an HTTP status, a WebSocket close code).
 */
import type { AgentToServer } from './codec';
import { agentIdFromUid, type Credential, type RefusalReason } from './enrollment';

export type Refusal =
  | { reason: RefusalReason | 'bad-csr'; detail?: string }
  /** The agent opens sessions in a loop: it should come back after `retryAfterSeconds`. */
  | { reason: 'flapping'; retryAfterSeconds: number }
  /** The listener is stopping: its WebSocket agents are offline and told to go elsewhere. */
  | { reason: 'stopping' };

/** A refusal the agent should retry later (503, or close code 1013). */
export const tryLater = (reason: Refusal['reason']) => reason === 'too-many-pending' || reason === 'flapping';

/** What the agent is told: a uid a handover's token does not list is answered as an unknown token is. */
export const refusalText = (refusal: Refusal) =>
  refusal.reason === 'uid-not-listed'
    ? 'refused: unknown'
    : refusal.reason === 'bad-uid'
      ? 'instance uid must be 16 bytes'
      : refusal.reason === 'bad-csr'
        ? `CSR refused: ${refusal.detail}`
        : refusal.reason === 'flapping'
          ? `flapping: retry after ${refusal.retryAfterSeconds} s`
          : `refused: ${refusal.reason}`;

/**
 * Who a refusal is about, for the log: the agent id, or the instance uid (hex) when it is not
 * one. Never the credential: a token is named by its id, not its value.
 */
export function refusedAgent(message: AgentToServer | undefined, credential?: Credential) {
  const agentId = message && agentIdFromUid(message.instanceUid);
  const instanceUid = message && !agentId ? Buffer.from(message.instanceUid).toString('hex') : undefined;
  const tokenId = credential?.kind === 'token' ? credential.row.id : undefined;
  const certificateAgent = credential?.kind === 'certificate' ? credential.identity.agentId : undefined;
  return { agentId: agentId ?? certificateAgent, instanceUid, tokenId };
}
