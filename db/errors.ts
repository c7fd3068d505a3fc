/** Postgres' unique_violation: an INSERT or UPDATE hit a unique index (a taken name). */
export function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: string } | null)?.code === '23505';
}
