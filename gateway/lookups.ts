/**
 * The rows a new connection reads before its first reply (its certificate at the handshake,
 * its admission, the effective configuration kept), each read for many connections in one
 * statement: in a reconnect storm these single-row reads were most of the gateway's
 * statements. At rest a read waits for nothing (a batch of one goes at once).
 */
import type { Knex } from 'knex';
import { findAgentCertificates, type AgentCertificateRow } from '../db/repos/agent-certificates';
import { keptEffectiveHashes } from '../db/repos/agent-effective-configs';
import { findCertificateAdmissions, type AgentBinding } from '../db/repos/agents';
import { Coalescer } from './coalescer';

export interface Lookups {
  /** The certificate with this serial (lowercase hex), if we issued it. */
  certificate: (serial: string) => Promise<AgentCertificateRow | undefined>;
  /** What admission by certificate reads of the agent, if it exists. */
  admission: (
    agentId: string,
  ) => Promise<Pick<AgentBinding, 'tenant_id' | 'status' | 'certificate_used_at'> | undefined>;
  /** The hash of the effective configuration kept for the agent, if any. */
  effectiveHash: (agentId: string) => Promise<string | undefined>;
}

export function createLookups(db: Knex): Lookups {
  return {
    certificate: batched((serials) => findAgentCertificates(db, serials)),
    admission: batched((ids) => findCertificateAdmissions(db, ids)),
    effectiveHash: batched((ids) => keptEffectiveHashes(db, ids)),
  };
}

/** One read by key, asked of `find` with the keys of other callers waiting meanwhile. */
function batched<V>(find: (keys: string[]) => Promise<Map<string, V>>): (key: string) => Promise<V | undefined> {
  const reads = new Coalescer<string, V | undefined>(
    async (keys) => {
      const found = await find(keys);
      return keys.map((key) => found.get(key));
    },
    // One read at a time: those asked while it runs go together in the next (two at a time
    // left most reads alone in a storm, the next starting as soon as a reply came).
    { maxBatch: 1000, maxInFlight: 1, keyOf: (key) => key },
  );
  return (key) => reads.submit(key);
}
