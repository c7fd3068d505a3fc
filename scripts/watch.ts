/**
 * `npm run watch -- --types 'rollout.*' [--subject <id>] [--rollout <id>] [--since <event id>]`:
 * prints the service's events as they happen, one line each, what an operator runs in a
 * terminal during a rollout (`--rollout`: that rollout's events and its agents'; an agent's
 * line names its rollout, batch, direction and error). Reconnects (with `since`, so nothing
 * is missed) when the connection drops.
 *
 * The address and token: --url (default $FLEET_URL or http://localhost:8080) and $FLEET_TOKEN
 * (or --token, which npm echoes with the command line), a PAT or an OIDC access token with at
 * least the viewer role.
 */
import { parseArgs } from 'node:util';
import { HubRefusedError, LiveUpdatesClient, type CloudEvent } from './live-updates/client';

const { values } = parseArgs({
  options: {
    url: { type: 'string', default: process.env.FLEET_URL ?? 'http://localhost:8080' },
    token: { type: 'string', default: process.env.FLEET_TOKEN },
    types: { type: 'string', default: '*' },
    subject: { type: 'string' },
    rollout: { type: 'string' },
    since: { type: 'string' },
    json: { type: 'boolean', default: false },
  },
});

/** "state succeeded, reason …": the fields of `data` that say what happened, those present. */
function fields(data: Record<string, unknown>, keys: readonly string[]): string {
  return keys
    .filter((key) => data[key] !== undefined && data[key] !== null)
    .map((key) => `${key} ${text(data[key])}`)
    .join(', ');
}

/** A value of an event's data as a line shows it: scalars as they are, anything else as JSON. */
function text(value: unknown): string {
  return typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value);
}

/** An agent's result in a rollout: which rollout, which batch, forward or rollback, and its error. */
function agentUpdate(data: Record<string, unknown>): string {
  const rollout = `rollout ${text(data.rolloutName ?? data.rolloutId)}`;
  const batch = data.batch !== undefined ? ` batch ${text(data.batch)}` : '';
  const direction = data.rollback ? 'rollback' : 'forward';
  const gate = data.healthGate ? ' (health gate)' : '';
  const error = data.error ? `: ${text(data.error)}` : '';
  return `${rollout}${batch} ${direction}: ${text(data.state)}${gate}${error}`;
}

function line(event: CloudEvent): string {
  if (values.json) return JSON.stringify(event);
  const data = event.data;
  const progress = data.progress as Record<string, number> | undefined;
  let detail;
  if (event.type === 'rollout.agent-updated') detail = agentUpdate(data);
  else if (progress)
    detail = `${data.name ? `${text(data.name)}: ` : ''}${Object.entries(progress)
      .map(([state, count]) => `${state} ${count}`)
      .join(', ')}`;
  else detail = fields(data, ['name', 'state', 'reason', 'status', 'startAt', 'opensAt', 'batch']);
  return `${event.time}  ${event.type.padEnd(32)} ${event.subject ?? ''}  ${detail}`;
}

async function watch(since: string | undefined): Promise<never> {
  const types = values.types.split(',').map((type) => type.trim());
  for (let delay = 1000; ; delay = Math.min(delay * 2, 30_000)) {
    try {
      // It may run for days: events are printed, not kept.
      const client = await LiveUpdatesClient.connect(values.url, values.token!, { keepEvents: false });
      client.onEvent((event) => process.stdout.write(`${line(event)}\n`));
      await client.subscribe(types, { subject: values.subject, rollout: values.rollout, since });
      const of = [values.subject && ` of ${values.subject}`, values.rollout && ` in rollout ${values.rollout}`];
      process.stderr.write(`watching ${types.join(', ')}${of.filter(Boolean).join('')} on ${values.url}\n`);
      delay = 1000;
      const { code, reason } = await client.closed;
      since = client.lastEventId ?? since;
      process.stderr.write(`connection closed (${code}${reason ? `: ${reason}` : ''}); reconnecting\n`);
    } catch (error) {
      if (error instanceof HubRefusedError && error.status < 500) {
        const problem = error.problem as { title?: string; detail?: string } | undefined;
        process.stderr.write(`refused: ${error.status} ${problem?.title ?? ''}: ${problem?.detail ?? ''}\n`);
        process.exit(1);
      }
      process.stderr.write(`cannot watch: ${(error as Error).message}; retrying in ${delay / 1000} s\n`);
    }
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
}

if (!values.token) {
  process.stderr.write('a token is needed: FLEET_TOKEN=<PAT or access token> in the environment (or --token)\n');
  process.exit(2);
}
void watch(values.since);
