/**
 * The audit chain's verification (GET /api/audit/verify, auditors and admins) on demand, its
 * verdict said plainly: intact up to which event, or the first event where the chain breaks.
 */
import { Alert, Anchor, Button, Group, Text, Title } from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { Link } from 'react-router';
import { api, ok } from '../../api/client';
import { ProblemAlert } from '../../components/ProblemAlert';
import { when } from '../configurations/shared';

/** The API's verdict, with the newest event read just before it and when it was given. */
type Verification = Awaited<ReturnType<typeof verify>>;

async function verify() {
  // Read first: the newest event then was in the verifier's snapshot, so the verdict covers it.
  const newest = await ok(api.GET('/api/audit/events', { params: { query: { limit: 1 } } }));
  const verdict = await ok(api.GET('/api/audit/verify'));
  return { ...verdict, newest: newest.items[0], verifiedAt: new Date().toISOString() };
}

export function useChainVerification() {
  return useMutation({ mutationFn: verify });
}

function Intact({ verification: { checked, newest, verifiedAt } }: { verification: Verification }) {
  return (
    <Alert color="teal.9" variant="filled" title="Chain intact" role="status">
      {checked === 0 || !newest
        ? 'The chain has no events yet.'
        : `All ${checked} events link to the one before them and match their digests, up to at least event #${newest.seq} of ${when(newest.occurredAt)} (the newest when verification started).`}{' '}
      Verified {when(verifiedAt)}.
    </Alert>
  );
}

function Broken({ verification: { checked, firstBrokenSeq, verifiedAt } }: { verification: Verification }) {
  return (
    <Alert color="red" variant="light" title={`Chain broken at event #${firstBrokenSeq}`} role="status">
      <Text size="sm" mb="xs">
        Event #{firstBrokenSeq} does not match its digest or does not link to the event before it: it, or the event
        before it, was changed, inserted or removed outside the API. The events before #{firstBrokenSeq} verify.
      </Text>
      <Text size="sm">
        {checked} events checked, {when(verifiedAt)}. The event is marked broken in the list below when it is on the
        page shown.{' '}
        <Anchor component={Link} to={`/audit?seq=${firstBrokenSeq}`} c="inherit" underline="always">
          Show event #{firstBrokenSeq}
        </Anchor>
      </Text>
    </Alert>
  );
}

export function ChainVerification({ verification }: { verification: ReturnType<typeof useChainVerification> }) {
  return (
    <section aria-labelledby="chain-verification" style={{ marginBottom: 'var(--mantine-spacing-lg)' }}>
      <Group justify="space-between" mb="xs">
        <Title order={3} size="h4" id="chain-verification">
          Chain verification
        </Title>
        <Button variant="default" loading={verification.isPending} onClick={() => verification.mutate()}>
          Verify the chain
        </Button>
      </Group>
      <Text size="sm" mb="xs">
        Every event carries a SHA-256 over its content and the event before it; verifying recomputes them all in the
        database.
      </Text>
      {verification.isError && <ProblemAlert error={verification.error} />}
      {verification.data &&
        (verification.data.valid ? (
          <Intact verification={verification.data} />
        ) : (
          <Broken verification={verification.data} />
        ))}
    </section>
  );
}
