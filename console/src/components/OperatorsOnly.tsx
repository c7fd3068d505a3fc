/**
 * A page that makes something (a new rollout, a new Git source): a person whose role may not
 * is told so, with the role it takes, instead of a whole form the API would refuse.
 */
import { Alert } from '@mantine/core';
import type { ReactNode } from 'react';
import { may, useSession } from '../api/session';
import { PageTitle } from './PageTitle';

/** `title`: the page's title, for a page whose form holds it (shown with the notice instead). */
export function OperatorsOnly({ what, title, children }: { what: string; title?: string; children: ReactNode }) {
  const session = useSession();
  if (!session.data) return null;
  if (may(session.data, 'operate')) return children;
  return (
    <>
      {title && <PageTitle>{title}</PageTitle>}
      <Alert color="blue.9" variant="filled" title={`Only operators and admins ${what}`} role="status">
        Your role ({session.data.roles.join(', ')}) may read everything here but change nothing. Ask an admin for the
        operator role.
      </Alert>
    </>
  );
}
