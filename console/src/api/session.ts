import { useQuery } from '@tanstack/react-query';
import { api, ok, rememberCsrfToken, type Schemas } from './client';

export type Session = Schemas['ConsoleSession'];

/**
 * The roles holding each permission a button needs (docs/architecture.md, roles): the
 * console shows a write button (or the audit chain's verification) only to whom the API
 * would allow it; the API decides in any case.
 */
const ROLES_THAT_MAY = {
  operate: ['admin', 'operator'],
  audit: ['admin', 'auditor'],
  admin: ['admin'],
} as const;

/** Who is signed in (a 401 sends the browser to sign in first). */
export function useSession() {
  return useQuery({
    queryKey: ['session'],
    queryFn: async () => {
      const session = await ok(api.GET('/api/auth/session'));
      rememberCsrfToken(session.csrfToken);
      return session;
    },
    staleTime: 60_000,
  });
}

export function may(session: Session, permission: keyof typeof ROLES_THAT_MAY): boolean {
  return session.roles.some((role) => (ROLES_THAT_MAY[permission] as readonly string[]).includes(role));
}
