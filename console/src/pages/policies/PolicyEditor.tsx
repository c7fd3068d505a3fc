/**
 * Writing a policy (new, or a custom one changed): name, description, scope, enabled, and
 * the CEL expression in the code editor. "Check" type-checks the expression without saving
 * (`POST /api/policies/check`); a refusal, of the check or the save, shows the API's problem
 * and puts the cursor at the offset the checker named. Saving a change sends If-Match: the
 * ETag the policy was read with, so someone else's change meanwhile is 412, not overwritten.
 */
import {
  Alert,
  Anchor,
  Button,
  Checkbox,
  Code,
  Group,
  Skeleton,
  Stack,
  Text,
  Textarea,
  TextInput,
} from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { useMemo, useRef, useState, type FormEvent } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { api, ApiProblem, ifMatch, ok } from '../../api/client';
import { may, useSession } from '../../api/session';
import { PageTitle } from '../../components/PageTitle';
import { ProblemAlert } from '../../components/ProblemAlert';
import { isStale, reapply, StaleEdit, type Reapplied } from '../../components/StaleEdit';
import { GroupsField } from '../groups/SearchSelect';
import { LazyCodeEditor } from '../configurations/LazyCodeEditor';
import { expressionOffsetIn, positionAt } from './offset';
import { usePolicy, useRefreshPolicies, type Policy } from './shared';

/** The editor's name, shown above it too (a contenteditable cannot be a <label>'s control). */
const EXPRESSION = 'Expression (CEL)';

type PolicyWrite = { name: string; description: string; expression: string; scope: string[]; enabled: boolean };

const EMPTY: PolicyWrite = { name: '', description: '', expression: '', scope: [], enabled: true };

/** What a save sends back of a policy (the API's body takes these members and no others). */
const writtenOf = ({ name, description, expression, scope, enabled }: Policy): PolicyWrite => ({
  name,
  description,
  expression,
  scope,
  enabled,
});

/** Where the problem of a call sending `expression` puts the cursor, if it names an offset. */
function cursorFor(error: Error | null, expression: string | undefined) {
  if (!(error instanceof ApiProblem) || expression === undefined) return undefined;
  const offset = expressionOffsetIn(error.detail);
  return offset === undefined ? undefined : positionAt(expression, offset);
}

function PolicyForm({ policy, etag: readWith }: { policy?: Policy; etag: string | null }) {
  const navigate = useNavigate();
  const refresh = useRefreshPolicies();
  const initial: PolicyWrite = policy ? writtenOf(policy) : EMPTY;
  const { expression: _, ...rest } = initial;
  const [fields, setFields] = useState<Omit<PolicyWrite, 'expression'>>(rest);
  const expression = useRef(initial.expression);
  /** The policy the form is a change of, and its ETag: the one read, or the latest once re-applied. */
  const [base, setBase] = useState<{ policy: PolicyWrite; etag: string | null }>({ policy: initial, etag: readWith });
  const etag = base.etag;
  /** The editor starts from `initial`: a re-applied expression starts a new one. */
  const [editor, setEditor] = useState({ key: 0, initial: initial.expression });
  const [reapplied, setReapplied] = useState<Reapplied<PolicyWrite> | null>(null);
  const check = useMutation({
    mutationFn: (sent: string) => ok(api.POST('/api/policies/check', { body: { expression: sent } })),
  });
  const save = useMutation({
    mutationFn: (sent: string) => {
      const body = { ...fields, expression: sent };
      return policy
        ? ok(api.PUT('/api/policies/{id}', { params: { path: { id: policy.id }, header: ifMatch(etag) }, body }))
        : ok(api.POST('/api/policies', { body }));
    },
    onSuccess: (saved) => {
      refresh();
      void navigate(`/policies/${saved.id}`);
    },
  });
  const send = (mutation: typeof check | typeof save, other: typeof check | typeof save) => {
    other.reset(); // the problem shown is the latest call's
    mutation.mutate(expression.current);
  };
  const failed = save.error ?? check.error;
  const stale = isStale(save.error);
  const latest = useMutation({
    mutationFn: async () => {
      const call = api.GET('/api/policies/{id}', { params: { path: { id: policy!.id } } });
      return { policy: writtenOf(await ok(call)), etag: (await call).response.headers.get('ETag') };
    },
    onSuccess: (now) => {
      const result = reapply(base.policy, { ...fields, expression: expression.current }, now.policy);
      const { expression: merged, ...others } = result.merged;
      setFields(others);
      expression.current = merged;
      setEditor((current) => ({ key: current.key + 1, initial: merged }));
      setBase(now);
      setReapplied(result);
      save.reset();
    },
  });
  const cursorAt = useMemo(
    () => cursorFor(failed, save.error ? save.variables : check.variables),
    [failed, save.error, save.variables, check.variables],
  );
  const submit = (event: FormEvent) => {
    event.preventDefault();
    send(save, check);
  };
  const set = (change: Partial<typeof fields>) => setFields((current) => ({ ...current, ...change }));
  return (
    <form onSubmit={submit} aria-label={policy ? `Edit ${policy.name}` : 'New policy'}>
      <Stack maw={800}>
        <TextInput label="Name" required value={fields.name} onChange={(e) => set({ name: e.currentTarget.value })} />
        <Textarea
          label="Description"
          value={fields.description}
          onChange={(e) => set({ description: e.currentTarget.value })}
        />
        <div>
          <Text size="sm" fw={500}>
            {EXPRESSION}
          </Text>
          <Text size="sm" mb={4}>
            Over <Code>agent</Code>, <Code>configuration</Code>, <Code>version</Code> and <Code>rollout</Code>; true
            allows the push, false denies it.
          </Text>
          <LazyCodeEditor
            key={editor.key}
            initial={editor.initial}
            format="text"
            label={EXPRESSION}
            onChange={(next) => {
              expression.current = next;
            }}
            cursorAt={cursorAt}
          />
        </div>
        {failed && <ProblemAlert error={failed} />}
        <StaleEdit what="this policy" stale={stale && policy !== undefined} reload={latest} reapplied={reapplied} />
        {check.isSuccess && (
          <Alert color="teal.9" variant="filled" title="The expression type-checks" role="status">
            It is a bool over agent, configuration, version and rollout.
          </Alert>
        )}
        <GroupsField
          label="Scope: the groups it applies to (none: every group)"
          value={fields.scope}
          onChange={(scope) => set({ scope })}
        />
        <Checkbox
          label="Enabled (enforced once approved)"
          checked={fields.enabled}
          onChange={(e) => set({ enabled: e.currentTarget.checked })}
        />
        {policy?.state === 'approved' && (
          <Alert color="violet" variant="light" title="Approved">
            Changing its name, description, expression or scope makes it a draft again, to be approved again.
          </Alert>
        )}
        <Group>
          <Button variant="default" loading={check.isPending} onClick={() => send(check, save)}>
            Check
          </Button>
          <Button type="submit" loading={save.isPending}>
            {policy ? 'Save' : 'Create policy'}
          </Button>
          <Button variant="default" component={Link} to={policy ? `/policies/${policy.id}` : '/policies'}>
            Cancel
          </Button>
        </Group>
      </Stack>
    </form>
  );
}

function ReadOnlyNotice() {
  return (
    <Alert color="gray" variant="light" title="Read only">
      Writing policies needs the operator or admin role.
    </Alert>
  );
}

export function NewPolicyPage() {
  const session = useSession();
  return (
    <Stack gap={0}>
      <Anchor component={Link} to="/policies" mb="md">
        ← Policies
      </Anchor>
      <PageTitle>New policy</PageTitle>
      {session.data && (may(session.data, 'operate') ? <PolicyForm etag={null} /> : <ReadOnlyNotice />)}
    </Stack>
  );
}

export function EditPolicyPage() {
  const { id = '' } = useParams();
  const session = useSession();
  // Read once: a refetch (someone else's change) would start the form afresh and lose what is typed;
  // the ETag it was read with makes the save of a stale form a 412 instead.
  const policy = usePolicy(id, { staleTime: Infinity });
  const data = policy.data?.policy;
  return (
    <Stack gap={0}>
      <Anchor component={Link} to={`/policies/${id}`} mb="md">
        ← {data?.name ?? 'The policy'}
      </Anchor>
      <PageTitle>{data ? `Edit ${data.name}` : 'Edit policy'}</PageTitle>
      {policy.isError && <ProblemAlert error={policy.error} mb="md" />}
      <Skeleton visible={policy.isPending}>
        {data?.builtin && (
          <Alert color="violet" variant="light" title="Built-in">
            A built-in policy can be enabled and disabled, not edited.
          </Alert>
        )}
        {data &&
          !data.builtin &&
          session.data &&
          (may(session.data, 'operate') ? (
            <PolicyForm policy={data} etag={policy.data?.etag ?? null} />
          ) : (
            <ReadOnlyNotice />
          ))}
      </Skeleton>
    </Stack>
  );
}
