/**
 * "Add agents" on a group (operators): a bootstrap token for this group (how many agents, how
 * long), then what to configure agents with, ready to paste: the OpenTelemetry Collector's
 * OpAMP supervisor, any OpAMP client, and the simulator. The token is in the snippets, so
 * they are shown once, as the token is, and forgotten when the dialog closes.
 */
import { Anchor, Button, Code, Modal, NumberInput, Stack, Tabs, Text } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { useQuery } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, ok } from '../../api/client';
import { FormFooter } from '../../components/FormFooter';
import { SecretDialog, useIssueToken } from '../tokens/SecretOnce';
import { inSeconds, LifetimeInput, useRefreshTokens, type Lifetime } from '../tokens/shared';

interface Enrolment {
  endpoint: string;
  caUrl: string;
}

/** What each kind of agent is configured with; `ca-file` is where the CA was saved. */
export function enrolmentSnippets({ endpoint }: Enrolment, token: string) {
  return {
    supervisor: [
      '# supervisor.yaml (opampsupervisor): save the CA as fleet-ca.pem beside it',
      'server:',
      `  endpoint: ${endpoint}`,
      '  headers:',
      `    Authorization: "Bearer ${token}"`,
      '  tls:',
      '    ca_file: fleet-ca.pem',
      'capabilities:',
      '  accepts_remote_config: true',
      '  reports_effective_config: true',
      '  reports_remote_config: true',
      '  reports_health: true',
      'agent:',
      '  executable: /usr/local/bin/otelcol-contrib',
      'storage:',
      '  directory: /var/lib/otelcol/supervisor',
    ].join('\n'),
    opamp: [
      `OpAMP server URL:  ${endpoint}`,
      `HTTP header:       Authorization: Bearer ${token}`,
      'TLS CA to trust:   fleet-ca.pem (the certificate linked above)',
      'Then:              send a CSR (AcceptsOpAMPConnectionSettings) to get a client certificate;',
      '                   the token is needed only until then.',
    ].join('\n'),
    simulator: `npm run agents -- --count 1 --endpoint ${endpoint} --token ${token} --ca fleet-ca.pem`,
  };
}

function Snippets({ enrolment, token }: { enrolment: Enrolment; token: string }) {
  const snippets = enrolmentSnippets(enrolment, token);
  return (
    <Stack gap="xs">
      <Text size="sm">
        Agents connect to <Code>{enrolment.endpoint}</Code> and trust it by the installation&apos;s CA:{' '}
        <Anchor href={enrolment.caUrl} download="fleet-ca.pem">
          download fleet-ca.pem
        </Anchor>
        .
      </Text>
      <Tabs defaultValue="supervisor">
        <Tabs.List aria-label="Kinds of agent">
          <Tabs.Tab value="supervisor">Collector (OpAMP supervisor)</Tabs.Tab>
          <Tabs.Tab value="opamp">Any OpAMP agent</Tabs.Tab>
          <Tabs.Tab value="simulator">Simulator</Tabs.Tab>
        </Tabs.List>
        {(['supervisor', 'opamp', 'simulator'] as const).map((kind) => (
          <Tabs.Panel key={kind} value={kind} pt="xs">
            <Code block data-testid={`snippet-${kind}`}>
              {snippets[kind]}
            </Code>
          </Tabs.Panel>
        ))}
      </Tabs>
    </Stack>
  );
}

export function AddAgents({ groupId, groupName }: { groupId: string; groupName: string }) {
  const refresh = useRefreshTokens();
  const [opened, { open, close }] = useDisclosure(false);
  const [lifetime, setLifetime] = useState<Lifetime>({ amount: 24, unit: '3600' });
  const [count, setCount] = useState<number | string>(10);
  const enrolment = useQuery({
    queryKey: ['agents', 'enrolment'],
    queryFn: () => ok(api.GET('/api/agents/enrolment')),
    enabled: opened,
    staleTime: Infinity,
  });
  const issue = useIssueToken(
    () => ({
      name: `add agents to ${groupName}`.slice(0, 100),
      groupId,
      expiresInSeconds: inSeconds(lifetime),
      maxUses: Number(count),
    }),
    () => {
      close();
      refresh();
    },
  );
  const submit = (event: FormEvent) => {
    event.preventDefault();
    issue.mutate();
  };
  return (
    <>
      <Button variant="default" onClick={open}>
        Add agents
      </Button>
      <Modal
        opened={opened}
        onClose={close}
        title={`Add agents to ${groupName}`}
        closeButtonProps={{ 'aria-label': 'Close' }}
      >
        <form onSubmit={submit} aria-label="Add agents">
          <Text size="sm" mb="sm">
            A bootstrap token lets that many agents enrol into this group; each then gets a client certificate and needs
            it no more.
          </Text>
          <NumberInput
            label="How many agents"
            description="1 to 1,000,000"
            min={1}
            max={1_000_000}
            allowDecimal={false}
            value={count}
            onChange={setCount}
            mb="sm"
          />
          <LifetimeInput label="The token expires in" value={lifetime} onChange={setLifetime} />
          <FormFooter write={issue} submitLabel="Issue the token" onCancel={close} />
        </form>
      </Modal>
      <SecretDialog
        title={`Add agents to ${groupName}`}
        label="Bootstrap token"
        secret={issue.data?.secret}
        onClose={issue.forget}
        size="xl"
        extra={(token) => (enrolment.data ? <Snippets enrolment={enrolment.data} token={token} /> : null)}
      />
    </>
  );
}
