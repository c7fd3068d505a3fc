/** What a hub client may send (docs/events.md, Live updates). Anything else gets an `error`. */
import { z } from 'zod';
import { TYPE_PATTERN, unknownPattern } from './event-types';

const eventPattern = z
  .string()
  .max(100)
  .regex(TYPE_PATTERN, 'must be an event type, a family such as rollout.*, or *')
  .superRefine((pattern, ctx) => {
    const why = unknownPattern(pattern);
    if (why) ctx.addIssue({ code: 'custom', message: why });
  });

const subscribe = z
  .object({
    type: z.literal('subscribe'),
    events: z.array(eventPattern).min(1).max(50),
    /** One object's events (a rollout's, an agent's): the event's `subject`. */
    subject: z.string().min(1).max(200).optional(),
    /** One rollout's events, its agents' too: the event's `rollout` attribute. */
    rollout: z.uuid().optional(),
    /** The id of the last event the client got: the missed ones are replayed first. */
    since: z.uuid().optional(),
  })
  .strict();

const unsubscribe = z
  .object({
    type: z.literal('unsubscribe'),
    events: z.array(eventPattern).min(1).max(50).optional(),
    subject: z.string().min(1).max(200).optional(),
    rollout: z.uuid().optional(),
  })
  .strict();

const ping = z.object({ type: z.literal('ping') }).strict();

const message = z.discriminatedUnion('type', [subscribe, unsubscribe, ping]);

export type Subscribe = z.infer<typeof subscribe>;
export type ClientMessage = z.infer<typeof message>;

/** Parses one text frame; the error says what was wrong, never echoes the frame. */
export function clientMessage(
  text: string | undefined,
): { ok: true; message: ClientMessage } | { ok: false; error: string } {
  if (text === undefined) return { ok: false, error: 'messages are JSON text frames' };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { ok: false, error: 'not JSON' };
  }
  const parsed = message.safeParse(json);
  if (parsed.success) return { ok: true, message: parsed.data };
  const issue = parsed.error.issues[0]!;
  const where = issue.path.length ? `${issue.path.join('.')}: ` : '';
  return { ok: false, error: `${where}${issue.message}` };
}
