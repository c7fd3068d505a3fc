/**
 * A proxy of one use, on loopback, through which a child process (git, through curl's
 * `http.proxy`) reaches HTTPS and HTTP hosts under the outbound policy: the proxy resolves
 * the name, checks the address and connects to that address, for every connection the
 * child opens, redirects included. TLS stays end to end (CONNECT), so the child still
 * checks the host's certificate against the name. Only the holder of its one-time password
 * can use it, and it closes when the work is done.
 */
import { randomBytes } from 'node:crypto';
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { CONNECT_TIMEOUT_MS, OutboundRefused, type Outbound, type ResolvedAddress } from './outbound';

export interface ProxyRun {
  /** `http://user:password@127.0.0.1:port`, for `http.proxy`. */
  url: string;
  /** The first connection the proxy refused or could not open, if any (its detail is logged). */
  failure(): OutboundRefused | undefined;
}

/** `host:port` of a CONNECT request (`[::1]:443` for IPv6). */
function authorityOf(target: string): { host: string; port: number } | undefined {
  const match = /^(\[[0-9a-f:.]+\]|[^:[\]]+):(\d{1,5})$/i.exec(target);
  if (!match) return undefined;
  return { host: match[1]!.replace(/^\[|\]$/g, ''), port: Number(match[2]) };
}

/** Runs `work` with a proxy of its own; the proxy and every connection through it close after. */
export async function withOutboundProxy<T>(outbound: Outbound, work: (run: ProxyRun) => Promise<T>): Promise<T> {
  const password = randomBytes(18).toString('base64url');
  const expected = `Basic ${Buffer.from(`fleet:${password}`).toString('base64')}`;
  const sockets = new Set<Duplex>();
  let failure: OutboundRefused | undefined;

  const fail = (error: unknown, destination: string): OutboundRefused => {
    const refused =
      error instanceof OutboundRefused
        ? error
        : outbound.unreachable(destination, (error as NodeJS.ErrnoException).code ?? (error as Error).message);
    failure ??= refused;
    return refused;
  };

  /** Opens a TCP connection to a checked address of `host`. */
  async function open(host: string, port: number): Promise<Socket> {
    const [address] = await outbound.resolve(host);
    return new Promise<Socket>((resolve, reject) => {
      const socket = connect({ host: address!.address, port, family: address!.family });
      socket.setTimeout(CONNECT_TIMEOUT_MS, () => socket.destroy(new Error('ETIMEDOUT')));
      socket.once('connect', () => {
        socket.setTimeout(0);
        socket.off('error', reject);
        resolve(socket);
      });
      socket.once('error', reject);
    });
  }

  const authorized = (req: IncomingMessage) => req.headers['proxy-authorization'] === expected;
  const track = (socket: Duplex) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const answer = (client: Duplex, status: string) => client.end(`HTTP/1.1 ${status}\r\nContent-Length: 0\r\n\r\n`);

  const server = createServer((req, res) => void forward(req, res));

  // HTTPS: a tunnel to the checked address.
  server.on('connect', (req: IncomingMessage, client: Duplex, head: Buffer) => {
    track(client);
    if (!authorized(req)) return answer(client, '407 Proxy Authentication Required');
    const target = authorityOf(req.url ?? '');
    if (!target) return answer(client, '400 Bad Request');
    open(target.host, target.port).then(
      (upstream) => {
        track(upstream);
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        if (head.length > 0) upstream.write(head);
        upstream.pipe(client).pipe(upstream);
      },
      (error: unknown) => {
        fail(error, `${target.host}:${target.port}`);
        answer(client, '502 Bad Gateway');
      },
    );
  });

  // Plain HTTP: the request forwarded as it came, to the checked address.
  async function forward(req: IncomingMessage, res: ServerResponse): Promise<void> {
    track(req.socket);
    if (!authorized(req)) {
      res.writeHead(407, { 'Proxy-Authenticate': 'Basic realm="fleet"' }).end();
      return;
    }
    const url = URL.canParse(req.url ?? '') ? new URL(req.url!) : undefined;
    if (url?.protocol !== 'http:') {
      res.writeHead(400).end();
      return;
    }
    const headers = { ...req.headers };
    delete headers['proxy-authorization'];
    delete headers['proxy-connection'];
    let address: ResolvedAddress;
    try {
      [address] = (await outbound.resolve(url.hostname.replace(/^\[|\]$/g, ''))) as [ResolvedAddress];
    } catch (error) {
      fail(error, url.host);
      res.writeHead(502).end();
      return;
    }
    const upstream = request({
      host: address.address,
      family: address.family,
      port: url.port || 80,
      path: `${url.pathname}${url.search}`,
      method: req.method,
      headers,
    });
    upstream.setTimeout(CONNECT_TIMEOUT_MS, () => upstream.destroy(new Error('ETIMEDOUT')));
    upstream.on('response', (answer) => {
      upstream.setTimeout(0);
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', (error) => {
      fail(error, url.host);
      if (!res.headersSent) res.writeHead(502).end();
      else res.destroy();
    });
    req.pipe(upstream);
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  try {
    return await work({ url: `http://fleet:${password}@127.0.0.1:${port}`, failure: () => failure });
  } finally {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  }
}
