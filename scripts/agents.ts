/**
 * Agent simulator CLI: `npm run agents -- --count 1000 --token svc-bt.…`. Runs N OpAMP
 * agents in this process until Ctrl-C, printing a one-line summary every 5 s.
 * The simulator itself: scripts/agents/ (agent.ts, fleet.ts), docs/agent-simulator.md.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { startFleet, type Fleet, type FleetOptions, type FleetStats } from './agents/fleet';
import type { Refusal, UnhealthyAfterApply } from './agents/agent-state';
import type { SimulatedAgent } from './agents/agent';
import { classifyFailure, classifyRefusal, describeError, ErrorTally, type RunContext } from './agents/errors';

/** Where `npm run dev` keeps its data, and so the agents' CA (FLEET_DEV_DATA: another checkout's). */
const DEV_DATA = process.env.FLEET_DEV_DATA ?? path.resolve(__dirname, '..', '.dev-data');

const USAGE = `usage: npm run agents -- --token svc-bt.… [options]
  --count N              agents to run (default 1)
  --token T              bootstrap token (svc-bt.…), required
  --endpoint URL         ws:// wss:// http:// https:// …/v1/opamp (default wss://localhost:4320/v1/opamp)
  --transport ws|http    default: from the endpoint's scheme
  --ca FILE              PEM of the CA that signed the server's certificate (TLS endpoints);
                         default: npm run dev's .dev-data/agent-ca.pem when it exists
  --mtls-endpoint URL    TLS endpoint to reconnect to with the client certificate
                         (default: the server's offer, else --endpoint when it is TLS)
  --token-in-url         send the token as ?token= instead of an Authorization header
  --fail-rate R          probability 0..1 that a configuration fails (default 0)
  --unhealthy-after-apply HASH|FRACTION
                         apply cleanly, then report unhealthy (component receiver/otlp):
                         after the configuration with that sha256 (hex), or with that probability 0..1
  --offers-applied all|ca-only
                         ca-only: apply only an offer's TLS CA, ignoring its endpoint and headers
                         (as opamp-go's example agent does); default all
  --heartbeat S          heartbeat / poll interval in seconds (default: the server's, 30)
  --no-csr               do not ask for a client certificate
  --concurrency N        connection attempts in flight at once (default 200)
  --service-name NAME    service.name of the agents (default otelcol-sim)
  --help                 this text
Ctrl-C: every agent says goodbye (agent_disconnect), sockets close; a second Ctrl-C exits at once.`;

class UsageError extends Error {}

interface Parsed {
  fleet: FleetOptions;
  /** The CA file the agents trust and why, for the first line and the hints. */
  ca?: { file: string; fromDevStack: boolean };
}

function parse(argv: string[]): Parsed | 'help' {
  const { values } = parseArgs({
    args: argv,
    options: {
      count: { type: 'string', default: '1' },
      token: { type: 'string' },
      endpoint: { type: 'string', default: 'wss://localhost:4320/v1/opamp' },
      transport: { type: 'string' },
      ca: { type: 'string' },
      'mtls-endpoint': { type: 'string' },
      'token-in-url': { type: 'boolean', default: false },
      'fail-rate': { type: 'string', default: '0' },
      'unhealthy-after-apply': { type: 'string' },
      'offers-applied': { type: 'string', default: 'all' },
      heartbeat: { type: 'string' },
      'no-csr': { type: 'boolean', default: false },
      concurrency: { type: 'string', default: '200' },
      'service-name': { type: 'string', default: 'otelcol-sim' },
      help: { type: 'boolean', default: false },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.help) return 'help';
  const count = integer(values.count, '--count', 1, 100_000);
  const concurrency = integer(values.concurrency, '--concurrency', 1, 100_000);
  if (!values.token) throw new UsageError('--token is required (a bootstrap token, svc-bt.…)');
  if (!values.token.startsWith('svc-bt.')) throw new UsageError('--token must be a bootstrap token (svc-bt.…)');
  const endpoint = endpointUrl(values.endpoint, '--endpoint');
  const mtlsEndpoint =
    values['mtls-endpoint'] === undefined ? undefined : endpointUrl(values['mtls-endpoint'], '--mtls-endpoint');
  if (mtlsEndpoint && !/^(wss|https):/.test(mtlsEndpoint))
    throw new UsageError('--mtls-endpoint must be wss:// or https://');
  const transport = values.transport;
  if (transport !== undefined && transport !== 'ws' && transport !== 'http')
    throw new UsageError('--transport must be ws or http');
  const failRate = Number(values['fail-rate']);
  if (!(failRate >= 0 && failRate <= 1)) throw new UsageError('--fail-rate must be a number from 0 to 1');
  const unhealthyAfterApply = unhealthyOption(values['unhealthy-after-apply']);
  const offersApplied = values['offers-applied'];
  if (offersApplied !== 'all' && offersApplied !== 'ca-only')
    throw new UsageError('--offers-applied must be all or ca-only');
  let heartbeatSeconds: number | undefined;
  if (values.heartbeat !== undefined) {
    heartbeatSeconds = Number(values.heartbeat);
    if (!(heartbeatSeconds > 0 && heartbeatSeconds <= 86_400))
      throw new UsageError('--heartbeat must be seconds, more than 0 and at most 86400');
  }
  const ca = values.ca !== undefined ? { file: values.ca, fromDevStack: false } : devStackCa();
  return {
    fleet: {
      count,
      connectConcurrency: concurrency,
      endpoint,
      transport,
      token: values.token,
      tokenInUrl: values['token-in-url'],
      ca: ca && readCa(ca.file),
      mtlsEndpoint,
      failRate,
      unhealthyAfterApply,
      offersApplied,
      heartbeatSeconds,
      csr: !values['no-csr'],
      serviceName: values['service-name'],
    },
    ca,
  };
}

/** `--unhealthy-after-apply`: a configuration's hash (64 hex digits) or a probability. */
function unhealthyOption(value: string | undefined): UnhealthyAfterApply | undefined {
  if (value === undefined) return undefined;
  if (/^[0-9a-f]{64}$/i.test(value)) return { hash: value.toLowerCase(), message: 'simulated failure after apply' };
  const fraction = Number(value);
  if (value.trim() !== '' && fraction >= 0 && fraction <= 1)
    return { fraction, message: 'simulated failure after apply' };
  throw new UsageError('--unhealthy-after-apply must be a configuration hash (64 hex digits) or a number from 0 to 1');
}

/** npm run dev writes its agents' CA here; an empty file (no CA yet) does not count. */
function devStackCa(): Parsed['ca'] {
  const file = path.join(DEV_DATA, 'agent-ca.pem');
  if (!existsSync(file) || !readFileSync(file, 'utf8').includes('-----BEGIN CERTIFICATE-----')) return undefined;
  const relative = path.relative(process.cwd(), file);
  return { file: relative.startsWith('..') ? file : relative, fromDevStack: true };
}

function readCa(file: string): Buffer {
  let ca: Buffer;
  try {
    ca = readFileSync(file);
  } catch (error) {
    throw new UsageError(`--ca ${file}: ${(error as Error).message}`);
  }
  if (!ca.includes('-----BEGIN CERTIFICATE-----')) throw new UsageError(`--ca ${file} holds no PEM certificate`);
  return ca;
}

function integer(text: string, name: string, min: number, max: number): number {
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < min || value > max)
    throw new UsageError(`${name} must be a whole number from ${min} to ${max}`);
  return value;
}

function endpointUrl(text: string, name: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(`${name} '${text}' is not a URL`);
  }
  if (!['ws:', 'wss:', 'http:', 'https:'].includes(url.protocol))
    throw new UsageError(`${name} must be ws://, wss://, http:// or https://`);
  return url.toString();
}

function summary(stats: FleetStats, tally: ErrorTally): string {
  const time = new Date().toISOString().slice(11, 19);
  const kinds = tally.summary();
  return (
    `${time} agents=${stats.agents} connected=${stats.connected} enrolled=${stats.enrolled} mtls=${stats.mtls} ` +
    `certificates=${stats.certificates} applied=${stats.configsApplied} failed=${stats.configsFailed} ` +
    `refused=${stats.refused} errors=${stats.errors}${kinds && ` (${kinds})`}`
  );
}

function trusting(ca: Parsed['ca']): string {
  if (!ca) return '';
  return ca.fromDevStack ? `; trusting ${ca.file} (npm run dev's CA; --ca for another)` : `; trusting ${ca.file}`;
}

/** Each agent's errors and refusals go into the tally; the first of a kind is printed. */
function reportErrors(agents: SimulatedAgent[], context: RunContext, tally: ErrorTally): void {
  const print = (line: string | undefined) => line && process.stderr.write(`${line}\n`);
  for (const agent of agents) {
    agent.on('failure', (error: Error) => print(tally.record(classifyFailure(error, context), describeError(error))));
    agent.on('refused', (refusal: Refusal) => print(tally.record(classifyRefusal(refusal), refusal.reason)));
  }
}

async function main(argv: string[]): Promise<number> {
  const parsed = parse(argv);
  if (parsed === 'help') {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const { fleet: options, ca } = parsed;
  process.stderr.write(
    `starting ${options.count} agent(s) against ${options.endpoint}${trusting(ca)}; Ctrl-C to stop\n`,
  );
  const fleet: Fleet = startFleet(options);
  const tally = new ErrorTally();
  reportErrors(fleet.agents, { endpoint: options.endpoint, caFile: ca?.file }, tally);
  const ticker = setInterval(() => process.stdout.write(`${summary(fleet.stats(), tally)}\n`), 5_000);
  let stopping = false;
  void fleet.ready.then(() => !stopping && process.stdout.write(`${summary(fleet.stats(), tally)} (all started)\n`));
  const code = await new Promise<number>((resolve) => {
    const stop = () => {
      if (stopping) {
        process.stderr.write('stopping again: exiting at once\n');
        process.exit(130);
      }
      stopping = true;
      process.stderr.write('stopping: agent_disconnect to every agent, closing sockets…\n');
      clearInterval(ticker);
      fleet.stop().then(
        () => resolve(0),
        () => resolve(1),
      );
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  process.stdout.write(`${summary(fleet.stats(), tally)}\n`);
  return code;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    const usage = error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS');
    process.stderr.write(`agents: ${(error as Error).message}${usage ? ' (--help for usage)' : ''}\n`);
    process.exit(usage ? 2 : 1);
  },
);
