/**
 * One policy: its expression, description, scope, who wrote it and who approved it, and its
 * state. Another admin approves a draft (the API refuses the author: the author is told it
 * waits for another admin); operators enable and disable it and edit a custom one. Each
 * write asks first and sends the ETag the page shows the policy with as If-Match, so a
 * decision taken on a view that changed since is refused (412) rather than applied. The
 * page follows the policy's events, so that ETag stays current.
 */
import { Alert, Anchor, Button, Code, Group, Skeleton, Stack } from '@mantine/core';
import { Link, useParams } from 'react-router';
import { api, ifMatch, ok } from '../../api/client';
import { useLiveRefresh } from '../../api/live';
import { may, useSession, type Session } from '../../api/session';
import { ConfirmButton } from '../../components/ConfirmButton';
import { PageTitle } from '../../components/PageTitle';
import { ProblemAlert } from '../../components/ProblemAlert';
import { Facts, Section } from '../AgentDetail';
import { GroupLink } from '../groups/shared';
import { LazyCodeEditor } from '../configurations/LazyCodeEditor';
import { POLICIES_KEY, POLICY_EVENTS, PolicyBadges, usePolicy, useRefreshPolicies, when, type Policy } from './shared';

function PolicyFacts({ policy }: { policy: Policy }) {
  return (
    <Section title="Policy">
      <Facts
        rows={[
          ['State', <PolicyBadges key="state" policy={policy} />],
          ['Description', policy.description || 'none'],
          [
            'Scope',
            policy.scope.length > 0 ? (
              <Group key="scope" gap="xs">
                {policy.scope.map((id) => (
                  <GroupLink key={id} id={id} />
                ))}
              </Group>
            ) : (
              'every group'
            ),
          ],
          ['Written by', `${policy.author}, ${when(policy.createdAt)}`],
          ['Approved by', policy.approver ? `${policy.approver}, ${when(policy.approvedAt)}` : 'not yet'],
          ['Last change', when(policy.updatedAt)],
          ['Id', <Code key="id">{policy.id}</Code>],
        ]}
      />
    </Section>
  );
}

/** A write's parameters: the policy, and the ETag the page shows it with as If-Match. */
const target = (id: string, etag: string | null) => ({ params: { path: { id }, header: ifMatch(etag) } });

interface ActionProps {
  policy: Policy;
  etag: string | null;
  onDone: () => void;
}

/** Where a draft stands for the person looking: the author waits, another admin may approve. */
function Approval({ policy, etag, onDone, session }: ActionProps & { session: Session }) {
  if (policy.state === 'approved') return null;
  if (policy.author === session.subject) {
    return (
      <Alert color="violet" variant="light" title="Waiting for another admin's approval" mb="md">
        You wrote this policy, so another admin must approve it before it is enforced.
      </Alert>
    );
  }
  if (!may(session, 'admin')) {
    return (
      <Alert color="violet" variant="light" title="Approval pending" mb="md">
        An admin other than {policy.author} must approve it before it is enforced.
      </Alert>
    );
  }
  return (
    <Group mb="md">
      <ConfirmButton
        label="Approve"
        question={`Approve ${policy.name}? ${policy.enabled ? 'It is enabled, so it is enforced at once.' : 'It stays disabled until enabled.'}`}
        action={() => ok(api.POST('/api/policies/{id}/approve', target(policy.id, etag)))}
        onDone={onDone}
      />
    </Group>
  );
}

/** Operators' and admins': switch it (the approval stays), edit a custom one, try the dry run. */
function Operations({ policy, etag, onDone }: ActionProps) {
  return (
    <Group mb="md" role="group" aria-label="Operations">
      {policy.enabled ? (
        <ConfirmButton
          label="Disable"
          color="red.9"
          question={`Disable ${policy.name}? It is no longer enforced; its approval stays.`}
          action={() => ok(api.POST('/api/policies/{id}/disable', target(policy.id, etag)))}
          onDone={onDone}
        />
      ) : (
        <ConfirmButton
          label="Enable"
          question={`Enable ${policy.name}? ${policy.state === 'approved' ? 'It is enforced at once.' : 'It is enforced once approved.'}`}
          action={() => ok(api.POST('/api/policies/{id}/enable', target(policy.id, etag)))}
          onDone={onDone}
        />
      )}
      {!policy.builtin && (
        <Button variant="default" component={Link} to={`/policies/${policy.id}/edit`}>
          Edit
        </Button>
      )}
      <Button variant="default" component={Link} to={`/policies/dry-run?policy=${policy.id}`}>
        Dry run
      </Button>
    </Group>
  );
}

export function PolicyDetailPage() {
  const { id = '' } = useParams();
  const session = useSession();
  const policy = usePolicy(id);
  useLiveRefresh(POLICY_EVENTS, [[...POLICIES_KEY, 'one', id]], (event) => event.subject === id);
  const refresh = useRefreshPolicies();
  const data = policy.data?.policy;
  const actions = data && { policy: data, etag: policy.data?.etag ?? null, onDone: refresh };
  return (
    <Stack gap={0}>
      <Anchor component={Link} to="/policies" mb="md">
        ← Policies
      </Anchor>
      <PageTitle>{data?.name ?? 'Policy'}</PageTitle>
      {policy.isError && <ProblemAlert error={policy.error} mb="md" />}
      <Skeleton visible={policy.isPending}>
        {data && actions && session.data && (
          <Stack>
            <Approval {...actions} session={session.data} />
            {may(session.data, 'operate') && <Operations {...actions} />}
            {data.builtin && (
              <Alert color="violet" variant="light" title="Built-in">
                A built-in policy: it can be enabled and disabled, not edited.
              </Alert>
            )}
            <Section title="Expression">
              <LazyCodeEditor initial={data.expression} format="text" label="Expression (CEL)" readOnly />
            </Section>
            <PolicyFacts policy={data} />
          </Stack>
        )}
      </Skeleton>
    </Stack>
  );
}
