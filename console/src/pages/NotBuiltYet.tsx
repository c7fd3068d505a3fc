import { Code, Text } from '@mantine/core';
import { PageTitle } from '../components/PageTitle';
import type { Area } from '../navigation';

/** An area whose page comes in a later slice: the API already serves it. */
export function NotBuiltYetPage({ area }: { area: Area }) {
  return (
    <>
      <PageTitle>{area.label}</PageTitle>
      <Text>
        This page is not built yet. Everything it will show is in the REST API: <Code>{area.api}</Code> (see
        /api/openapi.json).
      </Text>
    </>
  );
}
