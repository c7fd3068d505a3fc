/** A TCP relay on loopback, for tests that take a dependency away under a running process. */
import { connect, createServer, type Socket } from 'node:net';

/** A TCP relay to `port` that can be cut (every connection dropped, none taken) and restored. */
export async function relayTo(port: number) {
  const open = new Set<Socket>();
  const relay = createServer((client) => {
    const upstream = connect(port, '127.0.0.1');
    for (const socket of [client, upstream]) {
      open.add(socket);
      socket.on('close', () => open.delete(socket));
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  const relayPort = (relay.address() as { port: number }).port;
  return {
    port: relayPort,
    cut: async () => {
      const closed = new Promise<void>((resolve) => relay.close(() => resolve()));
      for (const socket of open) socket.destroy();
      await closed;
    },
    restore: () => new Promise<void>((resolve) => relay.listen(relayPort, '127.0.0.1', resolve)),
    close: async () => {
      for (const socket of open) socket.destroy();
      if (relay.listening) await new Promise<void>((resolve) => relay.close(() => resolve()));
    },
  };
}
