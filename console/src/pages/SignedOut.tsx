import { Button, Container, Text, Title } from '@mantine/core';
import { signIn } from '../api/client';

export function SignedOutPage() {
  return (
    <Container size="xs" py="xl" component="main">
      <Title order={1} size="h3" mb="sm">
        Signed out
      </Title>
      <Text mb="md">Your console session has ended.</Text>
      <Button onClick={() => signIn('/')}>Sign in again</Button>
    </Container>
  );
}
