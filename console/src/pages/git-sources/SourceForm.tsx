/**
 * A source's settings as a form, for registering one and for replacing its settings. The
 * credentials are write-only inputs: the API never shows them back, so editing offers to keep
 * what is stored (the request then leaves `credentials` out), remove it (`null`) or replace it.
 * The rollout template (a rollout for each version a sync publishes) takes target groups and
 * a strategy; agents and a label selector a template got through the API are kept as they are.
 */
import {
  Button,
  Checkbox,
  Fieldset,
  Group,
  NumberInput,
  PasswordInput,
  Select,
  Stack,
  Text,
  TextInput,
  Textarea,
} from '@mantine/core';
import { useState, type FormEvent, type ReactNode } from 'react';
import type { Schemas } from '../../api/client';
import { ProblemAlert } from '../../components/ProblemAlert';
import { GroupsField } from '../groups/SearchSelect';
import { DEFAULT_STRATEGY, StrategyFields, type Strategy } from '../rollouts/StrategyFields';
import { selectorText } from '../rollouts/Target';
import type { GitSource } from './shared';

export type SourceBody = Schemas['GitSourceUpdate'];
type Credentials = SourceBody['credentials'];
type Template = NonNullable<GitSource['rolloutTemplate']>;

type CredentialsChoice = 'keep' | 'none' | 'https' | 'ssh';

const CHOICES: { value: CredentialsChoice; label: string }[] = [
  { value: 'none', label: 'None (file:// or a public repository)' },
  { value: 'https', label: 'HTTPS: an access token' },
  { value: 'ssh', label: 'SSH: a deploy key' },
];

function choicesFor(stored: GitSource['credentials'] | undefined) {
  if (!stored) return CHOICES;
  return [{ value: 'keep' as const, label: `Keep the stored ${stored.kind} credentials` }, ...CHOICES];
}

/** The secret inputs, kept only while the form is open. */
interface Secrets {
  username: string;
  token: string;
  privateKey: string;
  knownHosts: string;
}

const NO_SECRETS: Secrets = { username: '', token: '', privateKey: '', knownHosts: '' };

/** What the request says about credentials: left out (keep), null (none), or the new ones. */
function credentialsOf(choice: CredentialsChoice, secrets: Secrets): Credentials {
  switch (choice) {
    case 'keep':
      return undefined;
    case 'none':
      return null;
    case 'https':
      return { kind: 'https', token: secrets.token, ...(secrets.username && { username: secrets.username }) };
    case 'ssh':
      return { kind: 'ssh', privateKey: secrets.privateKey, knownHosts: secrets.knownHosts };
  }
}

/** What the form starts with for credentials: a re-applied edit's, else keep the stored ones (or none). */
function choiceOf(credentials: Credentials, source: GitSource | undefined): CredentialsChoice {
  if (credentials === undefined) return source?.credentials ? 'keep' : 'none';
  if (credentials === null) return 'none';
  return credentials.kind === 'https' ? 'https' : 'ssh';
}

function secretsOf(credentials: Credentials): Secrets {
  if (!credentials) return NO_SECRETS;
  return credentials.kind === 'https'
    ? { ...NO_SECRETS, token: credentials.token, username: credentials.username ?? '' }
    : { ...NO_SECRETS, privateKey: credentials.privateKey, knownHosts: credentials.knownHosts };
}

/**
 * A source's settings as the form sends them (credentials left out: kept), in the very shape
 * the form builds, so that comparing the two shows only what was changed.
 */
export function settingsOf(source: GitSource): SourceBody {
  const stored = source.rolloutTemplate;
  return {
    name: source.name,
    repoUrl: source.repoUrl,
    branch: source.branch,
    path: source.path,
    ...(source.pollIntervalSeconds !== null && { pollIntervalSeconds: source.pollIntervalSeconds }),
    autoPublish: source.autoPublish,
    rolloutTemplate: stored
      ? {
          target: {
            agentIds: stored.target.agentIds,
            labelSelector: stored.target.labelSelector,
            groupIds: stored.target.groupIds,
          },
          strategy: stored.strategy,
        }
      : null,
    caCertificate: source.caCertificate ?? null,
  };
}

function CredentialInputs({
  choice,
  secrets,
  change,
}: {
  choice: CredentialsChoice;
  secrets: Secrets;
  change: (next: Partial<Secrets>) => void;
}) {
  if (choice === 'https') {
    return (
      <>
        <TextInput
          label="User name"
          description="Optional: Bitbucket wants the account name, GitLab any name; GitHub and Gitea none."
          autoComplete="off"
          value={secrets.username}
          onChange={(e) => change({ username: e.currentTarget.value })}
        />
        <PasswordInput
          label="Access token"
          description="A read-only token for this repository. It is stored encrypted and never shown again."
          required
          autoComplete="new-password"
          value={secrets.token}
          onChange={(e) => change({ token: e.currentTarget.value })}
        />
      </>
    );
  }
  if (choice === 'ssh') {
    return (
      <>
        <Textarea
          label="Private key"
          description="An unencrypted deploy key with read access. It is stored encrypted and never shown again."
          required
          autosize
          minRows={4}
          spellCheck={false}
          autoComplete="off"
          ff="monospace"
          value={secrets.privateKey}
          onChange={(e) => change({ privateKey: e.currentTarget.value })}
        />
        <Textarea
          label="Known hosts"
          description="The server's host key as known_hosts lines (ssh-keyscan -t ed25519 host): git refuses any other."
          required
          autosize
          minRows={2}
          spellCheck={false}
          ff="monospace"
          value={secrets.knownHosts}
          onChange={(e) => change({ knownHosts: e.currentTarget.value })}
        />
      </>
    );
  }
  return null;
}

/** What a template's target names besides groups, which this form does not edit. */
function keptTarget(target: Template['target'] | undefined): string | undefined {
  const kept = [
    target?.agentIds.length ? `${target.agentIds.length} agent(s)` : '',
    target?.labelSelector ? `the label selector ${selectorText(target.labelSelector)}` : '',
  ].filter(Boolean);
  return kept.length > 0 ? kept.join(' and ') : undefined;
}

function TemplateFields({
  stored,
  groupIds,
  setGroupIds,
  strategy,
  setStrategy,
}: {
  stored: Template | null | undefined;
  groupIds: string[];
  setGroupIds: (next: string[]) => void;
  strategy: Strategy;
  setStrategy: (next: Strategy) => void;
}) {
  const kept = keptTarget(stored?.target);
  return (
    <>
      <GroupsField label="Target groups" value={groupIds} onChange={setGroupIds} />
      {kept && <Text size="sm">Its target also names {kept}, set through the API; they are kept.</Text>}
      <StrategyFields strategy={strategy} onChange={setStrategy} />
    </>
  );
}

interface SourceFormProps {
  /** The source as it is (editing), or nothing (registering one). */
  source?: GitSource;
  /** Settings to start from instead of the source's (an edit re-applied on the latest source). */
  draft?: SourceBody;
  /** Shown above the buttons (a stale save's way out). */
  notice?: ReactNode;
  submitLabel: string;
  pending: boolean;
  error: Error | null;
  onSubmit: (body: SourceBody) => void;
  onCancel: () => void;
}

export function SourceForm({
  source,
  draft,
  notice,
  submitLabel,
  pending,
  error,
  onSubmit,
  onCancel,
}: SourceFormProps) {
  const from = draft ?? (source && settingsOf(source));
  const [name, setName] = useState(from?.name ?? '');
  const [repoUrl, setRepoUrl] = useState(from?.repoUrl ?? '');
  const [branch, setBranch] = useState(from?.branch ?? 'main');
  const [path, setPath] = useState(from?.path ?? '');
  const [poll, setPoll] = useState<string | number>(from?.pollIntervalSeconds ?? '');
  const [autoPublish, setAutoPublish] = useState(from?.autoPublish ?? false);
  const [choice, setChoice] = useState<CredentialsChoice>(() => choiceOf(draft?.credentials, source));
  const [caCertificate, setCaCertificate] = useState(from?.caCertificate ?? '');
  const [secrets, setSecrets] = useState<Secrets>(() => secretsOf(draft?.credentials));
  const stored = source?.rolloutTemplate;
  const template = from?.rolloutTemplate;
  const [rollOut, setRollOut] = useState(Boolean(template));
  const [groupIds, setGroupIds] = useState<string[]>(template?.target.groupIds ?? []);
  const [strategy, setStrategy] = useState<Strategy>(template?.strategy ?? DEFAULT_STRATEGY);
  // Only published versions are rolled out: without autoPublish there is no template.
  const templated = rollOut && autoPublish;

  const submit = (event: FormEvent) => {
    event.preventDefault();
    onSubmit({
      name,
      repoUrl,
      branch,
      path,
      ...(poll !== '' && { pollIntervalSeconds: Number(poll) }),
      autoPublish,
      rolloutTemplate: templated
        ? {
            target: {
              agentIds: stored?.target.agentIds ?? [],
              labelSelector: stored?.target.labelSelector ?? null,
              groupIds,
            },
            strategy,
          }
        : null,
      ...(choice !== 'keep' && { credentials: credentialsOf(choice, secrets) }),
      // A PUT replaces every setting: the stored CA is sent back unless the operator cleared it.
      caCertificate: caCertificate.trim() === '' ? null : caCertificate,
    });
  };

  return (
    <form onSubmit={submit} aria-label={submitLabel}>
      <Stack gap="sm" maw={640}>
        <TextInput label="Name" required value={name} onChange={(e) => setName(e.currentTarget.value)} />
        <TextInput
          label="Repository URL"
          description="https://, ssh:// or file:// (a path on the worker's disk), without credentials in it."
          required
          spellCheck={false}
          value={repoUrl}
          onChange={(e) => setRepoUrl(e.currentTarget.value)}
        />
        <TextInput label="Branch" required value={branch} onChange={(e) => setBranch(e.currentTarget.value)} />
        <TextInput
          label="Path"
          description="The directory whose .yaml, .yml and .json files become configurations; empty for the root."
          value={path}
          onChange={(e) => setPath(e.currentTarget.value)}
        />
        <NumberInput
          label="Poll interval (seconds)"
          description="5 to 86,400; empty for the default (60)."
          min={5}
          max={86_400}
          // Said at the field, never changed behind the operator's back (1 is not silently 5).
          clampBehavior="none"
          error={
            poll !== '' && !(Number(poll) >= 5 && Number(poll) <= 86_400) ? 'Must be 5 to 86,400 seconds' : undefined
          }
          allowDecimal={false}
          value={poll}
          onChange={setPoll}
        />
        <Checkbox
          label="Publish synced versions at once (otherwise they are drafts)"
          checked={autoPublish}
          onChange={(e) => setAutoPublish(e.currentTarget.checked)}
        />
        <Fieldset legend="Rollout template">
          <Stack gap="sm">
            <Checkbox
              label="Roll out each published version"
              description={
                autoPublish
                  ? 'A rollout with this target and strategy is created and started for each version a sync publishes.'
                  : 'Needs synced versions published at once.'
              }
              disabled={!autoPublish}
              checked={templated}
              onChange={(e) => setRollOut(e.currentTarget.checked)}
            />
            {templated && (
              <TemplateFields
                stored={stored}
                groupIds={groupIds}
                setGroupIds={setGroupIds}
                strategy={strategy}
                setStrategy={setStrategy}
              />
            )}
          </Stack>
        </Fieldset>
        <Select
          label="Credentials"
          allowDeselect={false}
          data={choicesFor(source?.credentials)}
          value={choice}
          onChange={(value) => setChoice(value ?? 'none')}
        />
        <CredentialInputs choice={choice} secrets={secrets} change={(next) => setSecrets({ ...secrets, ...next })} />
        <Textarea
          label="CA certificate (PEM)"
          description="For an https:// server whose certificate an internal CA issued: that CA's certificate(s), trusted for this source alone. Empty: the system's trusted CAs."
          autosize
          minRows={2}
          maxRows={10}
          spellCheck={false}
          styles={{ input: { fontFamily: 'monospace' } }}
          value={caCertificate}
          onChange={(e) => setCaCertificate(e.currentTarget.value)}
        />
        {error && <ProblemAlert error={error} />}
        {notice}
        <Group>
          <Button type="submit" loading={pending}>
            {submitLabel}
          </Button>
          <Button variant="default" onClick={onCancel}>
            Cancel
          </Button>
        </Group>
      </Stack>
    </form>
  );
}
