/**
 * Keeping what an agent reports running (docs/agent-gateway.md, "Effective configuration"):
 * only when its hash differs from the one kept, which a WebSocket session remembers, so an
 * agent repeating itself costs a hash and a comparison, and a new session one indexed read.
 * The files are redacted before they are written (large ones on the parsing threads). A
 * failure costs the agent nothing: it is logged, and the next report tries again.
 */
import { keepEffectiveConfig } from '../db/repos/agent-effective-configs';
import { keepReportedConfig } from '../domain/configurations/content-check';
import type { AgentConfigMap } from './gen/opamp_pb';
import type { ListenerContext } from './listener-context';
import { configMapHash } from './status';

export async function keepEffectiveConfigOf(
  ctx: ListenerContext,
  agent: { tenantId: string; agentId: string },
  map: AgentConfigMap,
  known: { get(): string | undefined; set(hash: string): void } | undefined,
): Promise<void> {
  const hash = configMapHash(map);
  if (known?.get() === hash) return;
  try {
    if ((await ctx.lookups.effectiveHash(agent.agentId)) !== hash) {
      const files = Object.entries(map.configMap).map(([name, file]) => ({
        name,
        contentType: file.contentType,
        body: file.body,
      }));
      await keepEffectiveConfig(ctx.db, { ...agent, hash }, await keepReportedConfig(files));
    }
    known?.set(hash);
  } catch (error) {
    ctx.logger.warn(
      { err: error, agentId: agent.agentId },
      'the effective configuration the agent reported could not be kept; its next report tries again',
    );
  }
}
