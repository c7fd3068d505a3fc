const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether `value` is a UUID in its text form, so a lookup of a uuid column can skip anything else (Postgres would refuse it). */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}
