import { Alert, type AlertProps } from '@mantine/core';
import { ApiProblem } from '../api/client';

/** What went wrong, as the API said it: the problem's title and detail. */
export function ProblemAlert({ error, ...props }: { error: Error } & Omit<AlertProps, 'title'>) {
  const title = error instanceof ApiProblem ? error.title : 'Something went wrong';
  const detail = error instanceof ApiProblem ? error.detail : error.message;
  return (
    <Alert color="red" variant="light" title={title} role="alert" {...props}>
      {detail}
    </Alert>
  );
}
