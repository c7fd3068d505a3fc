/**
 * Replacing a source's settings (operators, admins), sent with `If-Match` = the ETag of the
 * source the form was filled from: a source changed meanwhile is refused (412), not overwritten.
 */
import { Anchor, Skeleton, Stack } from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useNavigate, useParams } from 'react-router';
import { api, ifMatch, ok } from '../../api/client';
import { PageTitle } from '../../components/PageTitle';
import { ProblemAlert } from '../../components/ProblemAlert';
import { SourceForm, type SourceBody } from './SourceForm';
import { useGitSource, useRefreshGitSources, type GitSource } from './shared';

function EditForm({ source, etag }: { source: GitSource; etag: string | null }) {
  const navigate = useNavigate();
  const refresh = useRefreshGitSources();
  // The ETag of what the form was filled from, kept even if the source is read again meanwhile.
  const [filledFrom] = useState(etag);
  const save = useMutation({
    mutationFn: (body: SourceBody) =>
      ok(
        api.PUT('/api/git-sources/{id}', {
          params: { path: { id: source.id }, header: ifMatch(filledFrom) },
          body,
        }),
      ),
    gcTime: 0, // the request may hold credentials
    onSuccess: () => {
      refresh();
      void navigate(`/git-sources/${source.id}`);
    },
  });
  return (
    <SourceForm
      source={source}
      submitLabel="Save settings"
      pending={save.isPending}
      error={save.error}
      onSubmit={(body) => save.mutate(body)}
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
