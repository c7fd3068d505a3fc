/**
 * What a TLS connection alone costs a Node process: the floor under the gateway's memory per
 * agent. A bare `tls` server (no gateway, no database) on the image's runtime
 * (bench/image-runtime.ts) takes N mutual-TLS connections that each exchange a small
 * message, then four more 5 s apart (heartbeats), as agents do; the bench then prints the
 * server's resident memory per connection above idle, and its V8 heap per connection. Then
 * a reconnect storm: every agent closes and connects again at once (200 handshakes at a
 * time), resuming its TLS session; the bench prints the time and the server's CPU a handshake,
 * to hold against bench:gateway's storm (docs/performance.md).
 *
 *   npm run bench:tls-floor -- [--count 4000] [--groups <OpenSSL group list>]
 *
 * `--groups` is what `Agents:Tls:Groups` sets on the gateway (default: OpenSSL's). Compare
 * with bench:gateway's "each agent's share above idle": the difference is what the gateway
 * itself keeps per agent (docs/performance.md, "A connected agent").
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { connect, createServer, type TLSSocket } from 'node:tls';
import { parseArgs } from 'node:util';
import { createSelfSignedCa, type AgentCa } from '../domain/certificates/ca';
import { issueServerCertificate } from '../domain/certificates/server-certificate';
import { imageRuntime } from './image-runtime';
import { cpuSecondsOf, runBench } from './support';

interface Pems {
  ca: string;
  server: { certificatePem: string; keyPem: string };
  client: { certificatePem: string; keyPem: string };
}

interface Measured {
  rssMiB: number;
  heapUsedMiB: number;
}

/** Heartbeats after every connection is up, and between them (ms), before the measurement. */
const HEARTBEATS = 4;
const HEARTBEAT_MS = 5_000;

/** Handshakes at a time, as bench:gateway's simulator (its --concurrency). */
const CONCURRENCY = 200;

/** What an agent sends in a message and gets back, about (bytes). */
const AGENT_SAYS = 160;
const GATEWAY_SAYS = 120;

/** The server side, in a child process with the image's runtime. */
function serve(pems: Pems, groups: string | undefined): void {
  const sockets: TLSSocket[] = [];
  const server = createServer(
    {
      key: pems.server.keyPem,
      cert: pems.server.certificatePem,
      ca: pems.ca,
      requestCert: true,
      // The client's certificate is received, parsed and kept, as an agent's is; the bench's
      // leaf is a server certificate, so its purpose is not checked.
      rejectUnauthorized: false,
      ...(groups ? { ecdhCurve: groups } : {}),
    },
    (socket) => {
      sockets.push(socket);
      socket.on('error', () => {});
      socket.on('data', () => socket.write(Buffer.alloc(GATEWAY_SAYS, 'g')));
    },
  );
  const measure = (): Measured => {
    (globalThis as { gc?: () => void }).gc?.(); // the heap that is kept, not the garbage of start-up
    const { rss, heapUsed } = process.memoryUsage();
    return { rssMiB: rss / 1048576, heapUsedMiB: heapUsed / 1048576 };
  };
  server.listen(0, '127.0.0.1', () => {
    process.send!({ port: (server.address() as { port: number }).port, idle: measure() });
  });
  process.on('message', (message: string) => {
    if (message === 'measure') process.send!({ connected: sockets.length, loaded: measure() });
    if (message === 'exit') process.exit(0);
  });
}

async function pemsForBench(): Promise<Pems> {
  const notBefore = new Date(Date.now() - 60_000);
  const { keys, certificate } = await createSelfSignedCa('CN=tls-floor bench', {
    notBefore,
    notAfter: new Date(Date.now() + 86_400_000),
  });
  const ca: AgentCa = {
    id: null,
    certificate,
    certificatePem: certificate.toString('pem'),
    privateKey: keys.privateKey,
  };
  return {
    ca: ca.certificatePem,
    server: await issueServerCertificate(ca, ['127.0.0.1']),
    client: await issueServerCertificate(ca, ['agent']),
  };
}

async function main() {
  if (process.env.TLS_FLOOR_SERVER) {
    const { pems, groups } = JSON.parse(process.env.TLS_FLOOR_SERVER) as { pems: Pems; groups?: string };
    serve(pems, groups);
    return new Promise<void>(() => {}); // until the parent says exit
  }
  const { values: args } = parseArgs({
    options: { count: { type: 'string', default: '4000' }, groups: { type: 'string' } },
  });
  const count = Number(args.count);
  const runtime = imageRuntime();
  const pems = await pemsForBench();
  const child = fork(__filename, [], {
    execArgv: ['--expose-gc', '--import', 'tsx'],
    env: { ...process.env, ...runtime.env, TLS_FLOOR_SERVER: JSON.stringify({ pems, groups: args.groups }) },
  });
  const [{ port, idle }] = (await once(child, 'message')) as [{ port: number; idle: Measured }];
  const agentSays = Buffer.alloc(AGENT_SAYS, 'a');
  const sessions = new Map<number, Buffer>();
  /** Agent `i` connects (resuming its last session when it has one) and exchanges a message. */
  const connectAgent = async (i: number): Promise<TLSSocket> => {
    const socket = connect({
      host: '127.0.0.1',
      port,
      ca: pems.ca,
      cert: pems.client.certificatePem,
      key: pems.client.keyPem,
      servername: 'localhost',
      checkServerIdentity: () => undefined,
      session: sessions.get(i),
    });
    socket.on('session', (session: Buffer) => sessions.set(i, session));
    await once(socket, 'secureConnect');
    socket.write(agentSays);
    await once(socket, 'data');
    return socket;
  };
  /** Every agent connected, CONCURRENCY handshakes at a time. */
  const connectAll = async (): Promise<TLSSocket[]> => {
    const connected: TLSSocket[] = new Array(count);
    let next = 0;
    const lane = async () => {
      for (let i = next++; i < count; i = next++) connected[i] = await connectAgent(i);
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, lane));
    return connected;
  };
  let clients = await connectAll();
  // Heartbeats for a while: the allocator gives back what the handshakes freed as it works
  // (jemalloc purges on activity), as on a gateway whose agents are all connected.
  for (let beat = 0; beat < HEARTBEATS; beat += 1) {
    await new Promise((resolve) => setTimeout(resolve, HEARTBEAT_MS));
    await Promise.all(
      clients.map((socket) => {
        socket.write(agentSays);
        return once(socket, 'data');
      }),
    );
  }
  child.send('measure');
  const [{ connected, loaded }] = (await once(child, 'message')) as [{ connected: number; loaded: Measured }];
  const perConnectionKiB = (mib: number) => ((mib * 1024) / connected).toFixed(1);
  console.log(`TLS floor on Node ${process.versions.node} (${process.versions.openssl}), ${runtime.description}`);
  console.log(
    `groups: ${args.groups ?? "OpenSSL's default"}; ${connected} mutual-TLS connections, ${HEARTBEATS + 1} exchanges each`,
  );
  console.log(
    `server RSS: idle ${idle.rssMiB.toFixed(0)} MiB, connected ${loaded.rssMiB.toFixed(0)} MiB: ` +
      `${perConnectionKiB(loaded.rssMiB - idle.rssMiB)} KiB a connection ` +
      `(V8 heap ${perConnectionKiB(loaded.heapUsedMiB - idle.heapUsedMiB)} KiB of it)`,
  );

  // A reconnect storm: every agent closes and connects again at once, resuming its session.
  await Promise.all(clients.map((socket) => new Promise((resolve) => socket.once('close', resolve).end())));
  const cpuBefore = cpuSecondsOf({ pid: child.pid! });
  const started = process.hrtime.bigint();
  clients = await connectAll();
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const serverSeconds = cpuSecondsOf({ pid: child.pid! }) - cpuBefore;
  const resumed = clients.filter((socket) => socket.isSessionReused()).length;
  console.log(
    `reconnect storm: ${count} agents in ${seconds.toFixed(1)} s (${resumed} resumed), server CPU ` +
      `${serverSeconds.toFixed(1)} s: ${((serverSeconds * 1000) / count).toFixed(2)} ms a handshake ` +
      `(the clients share the machine's cores)`,
  );
  console.log(`reproduce: npm run bench:tls-floor -- --count ${count}${args.groups ? ` --groups ${args.groups}` : ''}`);
  child.send('exit');
  await once(child, 'exit');
  for (const socket of clients) socket.destroy();
}

runBench(main);
