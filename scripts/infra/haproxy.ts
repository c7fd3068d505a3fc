/**
 * HAProxy in front of api processes on this machine, as deploy/haproxy.cfg puts it in front
 * of replicas in compose: HTTP (REST, hub) to the replicas' HTTP ports, TCP passthrough to
 * their agent ports (or, as deploy/haproxy-agents-tls.cfg, the agents' TLS ended here), each
 * replica in service while its `/readyz` says ready. Here the
 * replicas are loopback ports, named in the configuration rather than found by DNS. Debian's
 * `haproxy` is installed when missing (as the browser tests install Chromium).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { issueServerCertificate, type AgentCa } from '../../domain/certificates';

const HAPROXY = '/usr/sbin/haproxy';

export function ensureHaproxy(log: (line: string) => void = () => {}): void {
  if (existsSync(HAPROXY)) return;
  if (process.getuid?.() !== 0)
    throw new Error(`${HAPROXY} is missing and only root can install it: run \`apt-get install -y haproxy\` as root`);
  log("installing Debian's haproxy (first run on this machine)...");
  for (const args of [
    ['update', '-qq'],
    ['install', '-y', '-qq', '--no-install-recommends', 'haproxy'],
  ]) {
    const result = spawnSync('apt-get', args, {
      encoding: 'utf8',
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
    if (result.status !== 0) throw new Error(`apt-get ${args.join(' ')} failed: ${result.stderr}`);
  }
  if (!existsSync(HAPROXY)) throw new Error(`apt-get installed haproxy but ${HAPROXY} is not there`);
}

/**
 * How many HAProxy processes `connections` proxied connections need: each holds two file
 * descriptors, and HAProxy may raise its limit only to this machine's hard limit (`hardLimit`).
 */
export function haproxyProcessesFor(connections: number, hardLimit: number): number {
  const perProcess = Math.floor((hardLimit - 1_000) / 2);
  return Math.ceil(connections / perProcess);
}

export interface Replica {
  /** Its REST and hub port; its `/readyz` is the health check of both. Undefined: a gateway alone (a TCP check). */
  http?: number;
  /** Its agent listener's port. */
  agents: number;
}

/**
 * HAProxy ends the agents' TLS (deploy/haproxy-agents-tls.cfg): its certificate and key, the
 * agents' CA it verifies client certificates with, and the address it connects to the
 * replicas from (the one their Agents:Tls:TerminatedBy names).
 */
export interface AgentTls {
  certificateFile: string;
  caFile: string;
  source: string;
}

/**
 * Writes into `dir` the files HAProxy ends the agents' TLS with: a certificate the agents' CA
 * issues for `hostnames`, with its chain and key in one file (as `fleet issue-proxy-certificate`
 * prints it), and the CA that client certificates are verified against.
 */
export async function writeAgentTlsFiles(
  ca: AgentCa,
  dir: string,
  hostnames = ['127.0.0.1'],
): Promise<Pick<AgentTls, 'certificateFile' | 'caFile'>> {
  const issued = await issueServerCertificate(ca, hostnames);
  const files = { certificateFile: path.join(dir, 'agents-proxy.pem'), caFile: path.join(dir, 'agents-ca.pem') };
  writeFileSync(files.certificateFile, issued.certificatePem + issued.keyPem);
  writeFileSync(files.caFile, ca.certificatePem);
  return files;
}

export interface HaproxyOptions {
  /** HAProxy asks for twice as many file descriptors (mind `ulimit -n`). Default 4,000. */
  maxConnections?: number;
  /** End the agents' TLS here; else TCP passthrough (deploy/haproxy.cfg). */
  agentTls?: AgentTls;
}

/**
 * The configuration: deploy/haproxy.cfg's frontends and backends, with these replicas (no
 * HTTP frontend without `ports.http`), or with deploy/haproxy-agents-tls.cfg's agents
 * frontend and backend when `agentTls` is given.
 */
export function haproxyConfig(
  ports: { http?: number; agents: number },
  replicas: Replica[],
  { maxConnections = 4_000, agentTls }: HaproxyOptions = {},
): string {
  const check = 'check inter 500ms fall 3 rise 2';
  const readyCheck = (replica: Replica) => (replica.http === undefined ? check : `${check} port ${replica.http}`);
  const http =
    ports.http === undefined
      ? []
      : [
          'frontend http',
          `  bind 127.0.0.1:${ports.http}`,
          '  mode http',
          '  option forwardfor',
          '  default_backend api',
          'backend api',
          '  mode http',
          '  balance leastconn',
          '  option httpchk GET /readyz',
          '  http-check expect status 200',
          ...replicas.map((replica, i) => `  server api${i + 1} 127.0.0.1:${replica.http} ${check}`),
        ];
  const httpChecks = replicas.some((replica) => replica.http !== undefined)
    ? ['  option httpchk GET /readyz', '  http-check expect status 200']
    : [];
  const agents = agentTls
    ? [
        'frontend agents',
        `  bind 127.0.0.1:${ports.agents} ssl crt ${agentTls.certificateFile} ca-file ${agentTls.caFile} verify optional alpn http/1.1 ssl-min-ver TLSv1.2`,
        '  mode http',
        // Only HAProxy says which certificate the agent presented: whatever the agent sent is dropped.
        '  http-request del-header X-Agent-Certificate',
        '  http-request set-header X-Agent-Certificate %[ssl_c_der,base64] if { ssl_c_used }',
        '  default_backend agents',
        'backend agents',
        '  mode http',
        '  balance leastconn',
        ...httpChecks,
        ...replicas.map(
          (replica, i) =>
            `  server agent${i + 1} 127.0.0.1:${replica.agents} source ${agentTls.source} ${readyCheck(replica)}`,
        ),
      ]
    : [
        'frontend agents',
        `  bind 127.0.0.1:${ports.agents}`,
        '  mode tcp',
        '  default_backend agents',
        'backend agents',
        '  mode tcp',
        '  balance leastconn',
        ...httpChecks,
        ...replicas.map((replica, i) => `  server agent${i + 1} 127.0.0.1:${replica.agents} ${readyCheck(replica)}`),
      ];
  return [
    'global',
    `  maxconn ${maxConnections}`,
    'defaults',
    '  timeout connect 2s',
    '  timeout client 60s',
    '  timeout server 60s',
    '  timeout tunnel 1h',
    // A health check slow on a busy machine is not a replica down.
    '  timeout check 5s',
    // A replica that refuses a connection before its health check has caught up: try another.
    '  retries 3',
    '  option redispatch',
    ...http,
    ...agents,
    '',
  ].join('\n');
}

/** Starts HAProxy in the foreground (its own process), on `ports`, for `replicas`. */
export function startHaproxy(
  ports: { http?: number; agents: number },
  replicas: Replica[],
  options: HaproxyOptions = {},
): { process: ChildProcess; stop: () => Promise<void> } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'fleet-haproxy-'));
  const config = path.join(dir, 'haproxy.cfg');
  writeFileSync(config, haproxyConfig(ports, replicas, options));
  const child = spawn(HAPROXY, ['-db', '-f', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  // HAProxy that stops by itself (a configuration or a limit it cannot have) says why.
  let said = '';
  let stopping = false;
  child.stderr.setEncoding('utf8').on('data', (d: string) => (said = (said + d).slice(-4000)));
  child.once('exit', (code) => {
    if (!stopping) process.stderr.write(`haproxy exited (${code}): ${said}\n`);
  });
  return {
    process: child,
    stop: async () => {
      stopping = true;
      if (child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
