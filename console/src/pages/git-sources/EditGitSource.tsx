/**
 * Replacing a source's settings (operators, admins), sent with `If-Match` = the ETag of the
 * source the form was filled from: a source changed meanwhile is refused (412), not
 * overwritten. The refusal offers to load the source as it is now and put the form's changes
 * on top (the fields it changed keep its values, the others take the latest; credentials
 * typed stay), saying what changed meanwhile; the next save sends the latest ETag.
 */
import { Anchor, Skeleton, Stack } from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { api, ifMatch, ok } from '../../api/client';
import { PageTitle } from '../../components/PageTitle';
import { ProblemAlert } from '../../components/ProblemAlert';
import { isStale, reapply, StaleEdit, type Reapplied } from '../../components/StaleEdit';
import { settingsOf, SourceForm, type SourceBody } from './SourceForm';
import { readGitSource, useGitSource, useRefreshGitSources, type GitSource } from './shared';

type Settings = Omit<SourceBody, 'credentials'>;

function EditForm({ source, etag }: { source: GitSource; etag: string | null }) {
  const navigate = useNavigate();
  const refresh = useRefreshGitSources();
  // What the form was filled from (and its ETag), kept even if the source is read again meanwhile.
  const [filled, setFilled] = useState<{ source: GitSource; etag: string | null; draft?: SourceBody; form: number }>({
    source,
    etag,
    form: 0,
  });
  const [sent, setSent] = useState<SourceBody | null>(null);
  const [reapplied, setReapplied] = useState<Reapplied<Settings> | null>(null);
  const save = useMutation({
    mutationFn: (body: SourceBody) =>
      ok(
        api.PUT('/api/git-sources/{id}', {
          params: { path: { id: source.id }, header: ifMatch(filled.etag) },
          body,
        }),
      ),
    gcTime: 0, // the request may hold credentials
    onSuccess: () => {
      refresh();
      void navigate(`/git-sources/${source.id}`);
    },
  });
  const latest = useMutation({
    mutationFn: () => readGitSource(source.id),
    onSuccess: (now) => {
      const { credentials, ...mine } = sent!;
      const result = reapply<Settings>(settingsOf(filled.source), mine, settingsOf(now.source));
      // A new form from the merged settings (and the credentials typed, if any).
      setFilled({
        source: now.source,
        etag: now.etag,
        draft: { ...result.merged, ...(credentials !== undefined && { credentials }) },
        form: filled.form + 1,
      });
      setReapplied(result);
      save.reset();
    },
  });
  return (
    <SourceForm
      key={filled.form}
      source={filled.source}
      draft={filled.draft}
      submitLabel="Save settings"
      pending={save.isPending}
      error={save.error}
      notice={<StaleEdit what="this source" stale={isStale(save.error)} reload={latest} reapplied={reapplied} />}
      onSubmit={(body) => {
        setSent(body);
        save.mutate(body);
      }}
      onCancel={() => void navigate(`/git-sources/${source.id}`)}
    />
  );
}

export function EditGitSourcePage() {
  const { id = '' } = useParams();
  // Read once: a refetch must not start the form afresh and lose what is being typed.
  const found = useGitSource(id, { staleTime: Infinity });
  const source = found.data?.source;
  return (
    <Stack gap={0}>
      <Anchor component={Link} to={`/git-sources/${id}`} mb="md">
        ← {source?.name ?? 'The Git source'}
      </Anchor>
      <PageTitle>{source ? `Edit ${source.name}` : 'Edit Git source'}</PageTitle>
      {found.isError && <ProblemAlert error={found.error} />}
      <Skeleton visible={found.isPending}>
        {source && <EditForm source={source} etag={found.data?.etag ?? null} />}
      </Skeleton>
    </Stack>
  );
}
