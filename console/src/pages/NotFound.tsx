import { Anchor, Text } from '@mantine/core';
import { Link } from 'react-router';
import { PageTitle } from '../components/PageTitle';

export function NotFoundPage() {
  return (
    <>
      <PageTitle>Page not found</PageTitle>
      <Text>
        No console page has this address.{' '}
        <Anchor component={Link} to="/">
          Back to the overview
        </Anchor>
      </Text>
    </>
  );
}
