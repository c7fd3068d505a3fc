import { Title } from '@mantine/core';
import { useEffect } from 'react';

/** The page's heading, also the document title (what screen readers and tabs announce). */
export function PageTitle({ children }: { children: string }) {
  useEffect(() => {
    document.title = `${children} · Fleet console`;
  }, [children]);
  return (
    <Title order={2} mb="md">
      {children}
    </Title>
  );
}
