import type { PeerHealthInput } from './definitions';

/** Pings every peer each interval and records what it answered (docs/federation.md). */
export async function peerHealthWorkflow(input: PeerHealthInput): Promise<void> {
  void input;
  throw new Error('not built yet');
}
