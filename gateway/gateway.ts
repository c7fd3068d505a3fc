/**
 * Everything the agent port needs before it listens: the agents' CA (from files, or the
 * installation's own, created on first start), the listener's TLS certificate (from files,
 * or issued by that CA for Agents:Tls:Hostnames; none behind proxies that end agents' TLS),
 * and the listener itself.
 */
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import {
  issueServerCertificate,
  loadAgentCa,
  readServerCertificate,
  type AgentCa,
  type ServerCertificate,
} from '../domain/certificates';
import type { Settings } from '../platform/settings';
import { createAgentListener, type AgentListener } from './listener';

export interface AgentGateway {
  listener: AgentListener;
  ca: AgentCa;
  tls?: ServerCertificate;
}

export async function createAgentGateway(deps: {
  db: Knex;
  logger: Logger;
  settings: Readonly<Settings>;
}): Promise<AgentGateway> {
  const { db, settings } = deps;
  const ca = await loadAgentCa(db, settings);
  const serverFiles = settings.agents.tls;
  // Behind proxies that end agents' TLS they hold the certificate (docs/deployment.md).
  const tls =
    settings.agents.plaintext || settings.agents.tls.terminatedBy.length > 0
      ? undefined
      : serverFiles.certificateFile && serverFiles.keyFile
        ? await readServerCertificate({ certificateFile: serverFiles.certificateFile, keyFile: serverFiles.keyFile })
        : await issueServerCertificate(ca, serverFiles.hostnames);
  const listener = createAgentListener({ ...deps, ca, tls });
  await listener.start();
  return { listener, ca, tls };
}

/** `host:port` of Agents:Listen (an IPv6 host may be bracketed). */
export function listenAddress(listen: string): { host: string; port: number } {
  const at = listen.lastIndexOf(':');
  return { host: listen.slice(0, at).replace(/^\[(.*)\]$/, '$1') || '0.0.0.0', port: Number(listen.slice(at + 1)) };
}
