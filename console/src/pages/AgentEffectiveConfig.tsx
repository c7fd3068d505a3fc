/**
 * What an agent reports running against what it should run (`GET
 * /api/agents/{id}/effective-configuration`): whether it matches its desired version, and
 * where not, the difference side by side; the reported files below. Secrets are redacted by
 * the API, in both, by one rule.
 */
import { Badge, Code, Group, Skeleton, Stack, Text } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { api, ApiProblem, ok, type Schemas } from '../api/client';
import { ProblemAlert } from '../components/ProblemAlert';
import { Section } from './AgentDetail';
import { ConfigurationLink } from './configurations/shared';
import { SideBySide } from './configurations/CompareVersions';

type Effective = Schemas['AgentEffectiveConfiguration'];

function Drift({ desired }: { desired: NonNullable<Effective['desired']> }) {
  if (desired.matches)
    return (
      <Group gap="xs" mb="sm">
        <Badge variant="filled" color="teal.9">
          matches
        </Badge>
        <Text size="sm">
          It runs exactly its desired <ConfigurationLink id={desired.configurationId} version={desired.version} />.
        </Text>
      </Group>
    );
  return (
    <Stack gap="xs" mb="sm">
      <Group gap="xs">
        <Badge variant="filled" color="orange.9">
          differs
        </Badge>
        <Text size="sm">
          It does not run its desired <ConfigurationLink id={desired.configurationId} version={desired.version} />
          {desired.diff === '' && ' byte for byte; with secrets redacted the two read the same'}.
        </Text>
      </Group>
      {desired.diff === null && (
        <Text size="sm">
          {desired.file === null
            ? 'None of the reported files is named as the configuration, so there is nothing to compare.'
            : 'The two cannot be compared (the reported configuration was too large to keep, or the version is gone).'}
        </Text>
      )}
      {desired.diff && (
        <SideBySide
          left={`Desired: ${desired.name} v${desired.version}`}
          right={`Reported: ${desired.file ?? ''}`}
          unifiedDiff={desired.diff}
        />
      )}
    </Stack>
  );
}

export function EffectiveConfiguration({ agentId }: { agentId: string }) {
  const effective = useQuery({
    queryKey: ['agents', 'one', agentId, 'effective'],
    queryFn: () =>
      ok(api.GET('/api/agents/{id}/effective-configuration', { params: { path: { id: agentId } } })).catch(
        (error: unknown) => {
          if (error instanceof ApiProblem && error.status === 404) return null; // not reported yet
          throw error;
        },
      ),
  });
  return (
    <Section title="Effective configuration">
      {effective.isError && <ProblemAlert error={effective.error} />}
      <Skeleton visible={effective.isPending}>
        {effective.data === null && <Text size="sm">The agent has not reported the configuration it runs.</Text>}
        {effective.data && (
          <>
            {effective.data.desired ? (
              <Drift desired={effective.data.desired} />
            ) : (
              <Text size="sm" mb="sm">
                It has no desired configuration to compare with.
              </Text>
            )}
            <Text size="xs" mb="xs">
              Reported {new Date(effective.data.reportedAt).toLocaleString()}
              {effective.data.redactedValues > 0 && `; ${effective.data.redactedValues} secret values redacted`}.
            </Text>
            {effective.data.files.map((file) => (
              <Stack key={file.name} gap={2} mb="xs">
                <Text size="sm" fw={600}>
                  {file.name || '(unnamed)'} {file.contentType && `(${file.contentType})`}, {file.bytes} bytes
                </Text>
                {file.content === null ? (
                  <Text size="sm">Too large to keep: only its size is known.</Text>
                ) : (
                  <Code block>{file.content}</Code>
                )}
              </Stack>
            ))}
          </>
        )}
      </Skeleton>
    </Section>
  );
}
