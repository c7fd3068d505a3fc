/**
 * The tenant's audit log, newest first as the API lists it: every filter the API takes and
 * its cursor pages in the URL, each event's whole record on demand, and the chain's
 * verification for the roles the API allows it. A role the API refuses sees its problem.
 */
import { Anchor, Button, Skeleton, Text } from '@mantine/core';
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { Link, useSearchParams } from 'react-router';
import { api, ApiProblem, ok } from '../../api/client';
import { may, useSession } from '../../api/session';
import { CursorPager } from '../../components/CursorPager';
import { PageTitle } from '../../components/PageTitle';
import { ProblemAlert } from '../../components/ProblemAlert';
import { searchOf } from '../agentFilters';
import { AuditEventsTable } from './AuditEventsTable';
import { AuditFilterForm } from './AuditFilterForm';
import { ChainVerification, useChainVerification } from './ChainVerification';
import { auditFiltersFrom, auditQueryOf, PAGE_SIZE, type AuditFilters } from './filters';

function useAuditEvents(filters: AuditFilters) {
  return useQuery({
    queryKey: ['audit', 'events', filters],
    queryFn: () =>
      ok(api.GET('/api/audit/events', { params: { query: { ...auditQueryOf(filters), limit: PAGE_SIZE } } })),
    placeholderData: keepPreviousData,
  });
}

const isForbidden = (error: Error | null): error is ApiProblem => error instanceof ApiProblem && error.status === 403;

export function AuditLogPage() {
  const [params, setParams] = useSearchParams();
  const session = useSession();
  const filters = auditFiltersFrom(params);
  const events = useAuditEvents(filters);
  const verification = useChainVerification();
  const { cursor: _cursor, ...withoutCursor } = filters;
  if (isForbidden(events.error)) {
    return (
      <>
        <PageTitle>Audit log</PageTitle>
        <ProblemAlert error={events.error} />
      </>
    );
  }
  return (
    <>
      <PageTitle>Audit log</PageTitle>
      {session.data && may(session.data, 'audit') && <ChainVerification verification={verification} />}
      {/* Drawn anew when the filters in the URL change (back, forward, a link), not when only the page does. */}
      <AuditFilterForm
        key={searchOf(withoutCursor).toString()}
        filters={filters}
        apply={(next) => setParams(searchOf(next))}
      />
      {filters.seq !== undefined && (
        <Text size="sm" mb="md">
          Only event #{filters.seq} is shown.{' '}
          <Anchor component={Link} to="/audit">
            Show every event
          </Anchor>
        </Text>
      )}
      {events.isError && <ProblemAlert error={events.error} mb="md" />}
      <Skeleton visible={events.isPending}>
        <AuditEventsTable events={events.data?.items ?? []} brokenSeq={verification.data?.firstBrokenSeq} />
      </Skeleton>
      <CursorPager filters={filters} nextCursor={events.data?.nextCursor} setParams={setParams}>
        {' '}
        <Button variant="default" loading={events.isFetching} onClick={() => void events.refetch()}>
          Refresh
        </Button>
      </CursorPager>
    </>
  );
}
