/**
 * The audit log's filters and page live in the URL
 * (`/audit?actor=ci-bot&actorType=pat&status=201&from=2026-11-24T10:00:00.000Z&cursor=…`),
 * named as the API's own query parameters and holding its values, so a filtered view is a
 * link. A value the API would refuse (`status=abc`, a `from` that is no time) is passed on
 * as it is: the page shows the API's problem rather than quietly dropping the filter.
 */
import type { Schemas } from '../../api/client';

export type AuditEvent = Schemas['AuditEvent'];
export type ActorType = AuditEvent['actorType'];

export const ACTOR_TYPES: readonly ActorType[] = ['session', 'oidc', 'pat', 'webhook', 'anonymous'];

export const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
export type Method = (typeof METHODS)[number];

export const PAGE_SIZE = 25;

export interface AuditFilters {
  actor?: string;
  actorType?: ActorType;
  method?: Method;
  /** As typed: the API checks it is a status code. */
  status?: string;
  resourceType?: string;
  resourceId?: string;
  requestId?: string;
  /** One event by its sequence number (the verification's broken one), as typed. */
  seq?: string;
  /** ISO 8601 with an offset, as the API takes it: events at or after. */
  from?: string;
  /** ISO 8601 with an offset: events before. */
  to?: string;
  cursor?: string;
}

const isOneOf = <T extends string>(values: readonly T[], value: string | null): value is T =>
  (values as readonly (string | null)[]).includes(value);

export function auditFiltersFrom(params: URLSearchParams): AuditFilters {
  const text = (name: string) => params.get(name) || undefined;
  const actorType = params.get('actorType');
  const method = params.get('method');
  return {
    actor: text('actor'),
    actorType: isOneOf(ACTOR_TYPES, actorType) ? actorType : undefined,
    method: isOneOf(METHODS, method) ? method : undefined,
    status: text('status'),
    resourceType: text('resourceType'),
    resourceId: text('resourceId'),
    requestId: text('requestId'),
    seq: text('seq'),
    from: text('from'),
    to: text('to'),
    cursor: text('cursor'),
  };
}

/** A number the URL holds as typed: anything but plain digits goes as NaN, which the API refuses (400). */
const decimal = (value: string | undefined) =>
  value === undefined ? undefined : /^[0-9]+$/.test(value) ? Number(value) : NaN;

/** The filters as the API's query; the schema types `status` and `seq` as numbers. */
export function auditQueryOf({ status, seq, ...filters }: AuditFilters) {
  return { ...filters, status: decimal(status), seq: decimal(seq) };
}

const pad = (n: number) => String(n).padStart(2, '0');

/** An ISO time as a datetime-local input's value in this browser's zone ('' if it is none). */
export function localInputOf(iso: string | undefined): string {
  const time = iso ? new Date(iso) : undefined;
  if (!time || Number.isNaN(time.getTime())) return '';
  const date = `${time.getFullYear()}-${pad(time.getMonth() + 1)}-${pad(time.getDate())}`;
  return `${date}T${pad(time.getHours())}:${pad(time.getMinutes())}:${pad(time.getSeconds())}`;
}

/** A datetime-local input's value (this browser's zone) as the ISO time the API takes. */
export function isoOf(localInput: string): string | undefined {
  const time = localInput ? new Date(localInput) : undefined;
  return time && !Number.isNaN(time.getTime()) ? time.toISOString() : undefined;
}
