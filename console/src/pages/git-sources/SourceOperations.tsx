/**
 * What an operator may do to a source: sync now (a forced sweep, its run appears live in the
 * runs below), pause or resume (after a confirmation), edit, and delete (after a
 * confirmation, with `If-Match` = the ETag of the source as shown: a source changed since is
 * refused with 412, shown in the dialog).
 */
import { Button, Group } from '@mantine/core';
import { useMutation } from '@tanstack/react-query';
import { Link, useNavigate } from 'react-router';
import { api, ifMatch, noContent, ok } from '../../api/client';
import { ConfirmButton } from '../../components/ConfirmButton';
import { ProblemAlert } from '../../components/ProblemAlert';
import { type GitSource } from './shared';

const path = (id: string) => ({ params: { path: { id } } });

function SyncNow({ source, onDone }: { source: GitSource; onDone: () => void }) {
  const sync = useMutation({
    mutationFn: () => ok(api.POST('/api/git-sources/{id}/sync', path(source.id))),
    onSuccess: onDone,
  });
  return (
    <>
      <Button loading={sync.isPending} disabled={source.paused} onClick={() => sync.mutate()}>
        Sync now
      </Button>
      {sync.isError && <ProblemAlert error={sync.error} w="100%" />}
    </>
  );
}

function PauseOrResume({ source, onDone }: { source: GitSource; onDone: () => void }) {
  if (source.paused) {
    return (
      <ConfirmButton
        label="Resume"
        question={`Resume ${source.name}? Its poll timer and webhook sync it again, starting with the branch's tip now.`}
        action={() => ok(api.POST('/api/git-sources/{id}/resume', path(source.id)))}
        onDone={onDone}
      />
    );
  }
  return (
    <ConfirmButton
      label="Pause"
      variant="default"
      question={`Pause ${source.name}? No poll, webhook or forced sync makes a run until it is resumed; its configurations stay as they are.`}
      action={() => ok(api.POST('/api/git-sources/{id}/pause', path(source.id)))}
      onDone={onDone}
    />
  );
}

export function SourceOperations({
  source,
  etag,
  onDone,
}: {
  source: GitSource;
  etag: string | null;
  onDone: () => void;
}) {
  const navigate = useNavigate();
  const remove = () =>
    noContent(api.DELETE('/api/git-sources/{id}', { params: { path: { id: source.id }, header: ifMatch(etag) } }));
  return (
    <Group mb="md" role="group" aria-label="Operations">
      <SyncNow source={source} onDone={onDone} />
      <PauseOrResume source={source} onDone={onDone} />
      <Button component={Link} to={`/git-sources/${source.id}/edit`} variant="default">
        Edit
      </Button>
      <ConfirmButton
        label="Delete"
        color="red.9"
        question={`Delete ${source.name} and its sync runs? The configurations it manages stay, with their versions, and can be edited through the API again.`}
        action={remove}
        onDone={() => {
          onDone();
          void navigate('/git-sources');
        }}
      />
    </Group>
  );
}
