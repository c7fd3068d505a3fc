/**
 * One agent: what it says about itself (description, capabilities, health), the
 * configuration it should run and the one it applied, and its certificate. Approve or
 * reject (operators) and revoke (admins) show only to those the API allows.
 */
import { Anchor, Card, Code, Group, SimpleGrid, Skeleton, Stack, Table, Text, Title } from '@mantine/core';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import type { ReactNode } from 'react';
import { Link, useParams } from 'react-router';
import { api, ok, type Schemas } from '../api/client';
import { useLiveRefresh } from '../api/live';
import { may, useSession, type Session } from '../api/session';
import { ConfirmButton } from '../components/ConfirmButton';
import { PageTitle } from '../components/PageTitle';
import { ProblemAlert } from '../components/ProblemAlert';
import { AGENT_EVENTS, StatusBadge } from './Agents';
import { MoveAgent } from './groups/MoveAgent';
import { ConfigurationLink } from './configurations/shared';
import { EffectiveConfiguration } from './AgentEffectiveConfig';
import { GroupLink } from './groups/shared';

type Agent = Schemas['Agent'];

export function Section({ title, children }: { title: string; children: ReactNode }) {
  return (
    <Card withBorder padding="md" component="section" aria-label={title}>
      <Title order={3} size="h5" mb="xs">
        {title}
      </Title>
      {children}
    </Card>
  );
}

export function Facts({ rows }: { rows: [string, ReactNode][] }) {
  return (
    <Table>
      <Table.Tbody>
        {rows.map(([name, value]) => (
          <Table.Tr key={name}>
            <Table.Th scope="row" w="40%">
              {name}
            </Table.Th>
            <Table.Td>{value}</Table.Td>
          </Table.Tr>
        ))}
      </Table.Tbody>
    </Table>
  );
}

const json = (value: unknown) => <Code block>{JSON.stringify(value, null, 2)}</Code>;

function Actions({ agent, session, refresh }: { agent: Agent; session: Session; refresh: () => void }) {
  const id = { params: { path: { id: agent.id } } };
  const buttons: ReactNode[] = [];
  if (agent.status === 'pending-approval' && may(session, 'operate')) {
    buttons.push(
      <ConfirmButton
        key="approve"
        label="Approve"
        question={`Admit ${agent.name}? It joins the fleet when it reconnects.`}
        action={() => ok(api.POST('/api/agents/{id}/approve', id))}
        onDone={refresh}
      />,
      <ConfirmButton
        key="reject"
        label="Reject"
        color="red.9"
        question={`Refuse ${agent.name}? It is revoked and must enroll again.`}
        action={() => ok(api.POST('/api/agents/{id}/reject', id))}
        onDone={refresh}
      />,
    );
  }
  if (agent.status !== 'revoked' && agent.status !== 'handed-over' && may(session, 'admin')) {
    buttons.push(
      <ConfirmButton
        key="revoke"
        label="Revoke certificate"
        color="red.9"
        question={`Revoke every certificate of ${agent.name}? Its connections close and it must enroll again.`}
        action={() => ok(api.POST('/api/agents/{id}/revoke-cert', id))}
        onDone={refresh}
      />,
    );
  }
  return buttons.length > 0 ? <Group mb="md">{buttons}</Group> : null;
}

function AgentSections({ agent }: { agent: Agent }) {
  return (
    <SimpleGrid cols={{ base: 1, md: 2 }}>
      <Section title="Agent">
        <Facts
          rows={[
            ['Id', <Code key="id">{agent.id}</Code>],
            ['Status', <StatusBadge key="status" status={agent.status} />],
            ['Group', <GroupLink key="group" id={agent.groupId} />],
            [
              'Labels',
              Object.entries(agent.labels)
                .map(([k, v]) => `${k}=${v}`)
                .join(', ') || 'none',
            ],
            ['Last seen', agent.lastSeenAt ? new Date(agent.lastSeenAt).toLocaleString() : 'never'],
          ]}
        />
      </Section>
      <Section title="Configuration">
        <Facts
          rows={[
            [
              'Desired',
              agent.desired ? (
                <ConfigurationLink
                  key="desired"
                  id={agent.desired.configurationId}
                  version={agent.desired.version ?? 0}
                />
              ) : (
                'none'
              ),
            ],
            [
              'Applied',
              agent.applied ? (
                <span key="applied">
                  {agent.applied.configurationId && agent.applied.version !== null ? (
                    <ConfigurationLink id={agent.applied.configurationId} version={agent.applied.version} />
                  ) : (
                    'a configuration of unknown version'
                  )}{' '}
                  ({agent.applied.status ?? 'unknown'})
                </span>
              ) : (
                'nothing reported'
              ),
            ],
            ['Apply error', agent.applied?.error ?? 'none'],
            ['Effective config hash', agent.effectiveConfigHash ?? 'not reported'],
          ]}
        />
      </Section>
      <Section title="Certificate">
        {agent.certificate ? (
          <Facts
            rows={[
              ['Serial', <Code key="serial">{agent.certificate.serial}</Code>],
              ['Expires', agent.certificate.notAfter ?? 'unknown'],
              ['Revoked', agent.certificate.revokedAt ?? 'no'],
            ]}
          />
        ) : (
          <Text>No certificate issued.</Text>
        )}
      </Section>
      <Section title="Capabilities">
        <Text>{agent.capabilityNames.join(', ') || 'none reported'}</Text>
      </Section>
      <Section title="Health">{agent.health ? json(agent.health) : <Text>Not reported yet.</Text>}</Section>
      <Section title="Description">{json(agent.description)}</Section>
    </SimpleGrid>
  );
}

export function AgentDetailPage() {
  const { id = '' } = useParams();
  const session = useSession();
  const queryClient = useQueryClient();
  const agent = useQuery({
    queryKey: ['agents', 'one', id],
    queryFn: () => ok(api.GET('/api/agents/{id}', { params: { path: { id } } })),
  });
  // Its own events (connected, disconnected, moved, its rollouts' results) read it again.
  useLiveRefresh([...AGENT_EVENTS, 'rollout.agent-updated'], [['agents', 'one', id]], (event) => event.subject === id);
  const refresh = () => void queryClient.invalidateQueries({ queryKey: ['agents'] });
  return (
    <Stack gap="md">
      <Anchor component={Link} to="/agents">
        ← All agents
      </Anchor>
      <PageTitle>{agent.data ? agent.data.name : 'Agent'}</PageTitle>
      {agent.isError && <ProblemAlert error={agent.error} />}
      <Skeleton visible={agent.isPending}>
        {agent.data && session.data && <Actions agent={agent.data} session={session.data} refresh={refresh} />}
        {agent.data && session.data && may(session.data, 'operate') && (
          <MoveAgent agent={agent.data} onDone={refresh} />
        )}
        {agent.data && <AgentSections agent={agent.data} />}
      </Skeleton>
      {agent.data && <EffectiveConfiguration agentId={agent.data.id} />}
    </Stack>
  );
}
