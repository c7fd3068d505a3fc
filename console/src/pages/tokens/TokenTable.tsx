/** Bootstrap tokens as a table (never their secrets: the API lists none), with revoke for operators. */
import { Table } from '@mantine/core';
import { api, ok } from '../../api/client';
import { ConfirmButton } from '../../components/ConfirmButton';
import { EmptyRow } from '../../components/EmptyRow';
import { GroupLink } from '../groups/shared';
import { ResourceName } from '../../components/ResourceName';
import { TokenStateBadge, when, type BootstrapToken } from './shared';

function RevokeButton({ token, onDone }: { token: BootstrapToken; onDone: () => void }) {
  return (
    <ConfirmButton
      label={`Revoke ${token.name}`}
      size="xs"
      color="red.9"
      question={`Revoke the bootstrap token ${token.name}? No agent can enroll with it any more; agents that already enrolled with it keep their certificates.`}
      action={() => ok(api.POST('/api/tokens/{id}/revoke', { params: { path: { id: token.id } } }))}
      onDone={onDone}
    />
  );
}

export function TokenTable({
  tokens,
  canRevoke,
  onRevoked,
}: {
  tokens: BootstrapToken[];
  canRevoke: boolean;
  onRevoked: () => void;
}) {
  const columns = canRevoke ? 8 : 7;
  return (
    <Table striped highlightOnHover aria-label="Bootstrap tokens">
      <Table.Thead>
        <Table.Tr>
          <Table.Th scope="col">Name</Table.Th>
          <Table.Th scope="col">State</Table.Th>
          <Table.Th scope="col">Uses</Table.Th>
          <Table.Th scope="col">Group</Table.Th>
          <Table.Th scope="col">Pool</Table.Th>
          <Table.Th scope="col">Expires</Table.Th>
          <Table.Th scope="col">Created</Table.Th>
          {canRevoke && <Table.Th scope="col">Actions</Table.Th>}
        </Table.Tr>
      </Table.Thead>
      <Table.Tbody>
        {tokens.length === 0 && <EmptyRow columns={columns}>No bootstrap token matches these filters.</EmptyRow>}
        {tokens.map((token) => (
          <Table.Tr key={token.id}>
            <Table.Td>{token.name}</Table.Td>
            <Table.Td>
              <TokenStateBadge state={token.state} />
            </Table.Td>
            <Table.Td>
              {token.uses} of {token.maxUses}
            </Table.Td>
            <Table.Td>
              <GroupLink id={token.groupId} />
            </Table.Td>
            <Table.Td>{token.poolId ? <ResourceName kind="token-pool" id={token.poolId} /> : '—'}</Table.Td>
            <Table.Td>{when(token.expiresAt)}</Table.Td>
            <Table.Td>
              {token.createdBy}, {when(token.createdAt)}
            </Table.Td>
            {canRevoke && (
              <Table.Td>{token.state === 'active' && <RevokeButton token={token} onDone={onRevoked} />}</Table.Td>
            )}
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  );
}
