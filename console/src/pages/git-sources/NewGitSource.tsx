/** Registering a Git source (operators, admins): its loop starts at once and syncs. */
import { Anchor, Stack } from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { Link, useNavigate } from 'react-router';
import { api, ok } from '../../api/client';
import { OperatorsOnly } from '../../components/OperatorsOnly';
import { PageTitle } from '../../components/PageTitle';
import { SourceForm, type SourceBody } from './SourceForm';

export function NewGitSourcePage() {
  const navigate = useNavigate();
  const create = useMutation({
    mutationFn: (body: SourceBody) => ok(api.POST('/api/git-sources', { body })),
    // The request held the credentials: nothing of it stays in the mutation cache.
    gcTime: 0,
    onSuccess: (created) => void navigate(`/git-sources/${created.id}`),
  });
  return (
    <Stack gap={0}>
      <Anchor component={Link} to="/git-sources" mb="md">
        ← All Git sources
      </Anchor>
      <PageTitle>New Git source</PageTitle>
      <OperatorsOnly what="register Git sources">
        <SourceForm
          submitLabel="Create Git source"
          pending={create.isPending}
          error={create.error}
          onSubmit={(body) => create.mutate(body)}
          onCancel={() => void navigate('/git-sources')}
        />
      </OperatorsOnly>
    </Stack>
  );
}
