/**
 * The verdict of a dry run (`POST /api/policies/evaluate`): allowed, or each denied agent with
 * the policy that denied it and why (its run-time error, or the expression being false).
 */
import { Alert, Anchor, Stack, Table } from '@mantine/core';
import { Link } from 'react-router';
import type { Schemas } from '../../api/client';

type Evaluation = Schemas['PolicyEvaluation'];

/** `policyId`: the policy the person came from, pointed out in the verdict. */
export function Verdict({ evaluation, policyId }: { evaluation: Evaluation; policyId?: string }) {
  const denied = evaluation.verdicts.filter((verdict) => !verdict.allowed);
  if (denied.length === 0) {
    return (
      <Alert color="teal.9" variant="filled" title="The policies allow this push" role="status">
        {evaluation.verdicts.length} agents judged, none denied.
      </Alert>
    );
  }
  const deniedByPolicy = policyId && denied.some((v) => v.deniedBy.some((policy) => policy.policyId === policyId));
  return (
    <Stack gap="sm">
      <Alert color="red" variant="light" title="The policies deny this push" role="status">
        {denied.length} of {evaluation.verdicts.length} agents denied
        {policyId &&
          (deniedByPolicy ? ', some by the policy you came from.' : '; the policy you came from denies none.')}
      </Alert>
      <Table aria-label="Denied agents">
        <Table.Thead>
          <Table.Tr>
            <Table.Th scope="col">Agent</Table.Th>
            <Table.Th scope="col">Policy</Table.Th>
            <Table.Th scope="col">Why</Table.Th>
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {denied.flatMap((verdict) =>
            verdict.deniedBy.map((policy) => (
              <Table.Tr key={`${verdict.agentId} ${policy.policyId}`}>
                <Table.Td>
                  <Anchor component={Link} to={`/agents/${verdict.agentId}`}>
                    {verdict.agentId}
                  </Anchor>
                </Table.Td>
                <Table.Td>
                  <Anchor
                    component={Link}
                    to={`/policies/${policy.policyId}`}
                    fw={policy.policyId === policyId ? 700 : undefined}
                  >
                    {policy.name}
                  </Anchor>
                </Table.Td>
                <Table.Td>{policy.error ?? 'the expression is false'}</Table.Td>
              </Table.Tr>
            )),
          )}
        </Table.Tbody>
      </Table>
    </Stack>
  );
}
