/**
 * Real Git repositories for tests and benches: a bare repository on disk (served as file:// or over
 * smart HTTP), a working clone to commit and push from, and a loopback smart-HTTP server
 * that runs git's own `git http-backend` as CGI behind basic auth with a fixed token.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, mkdir, rm, symlink, writeFile, unlink } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { simpleGit, type SimpleGit } from 'simple-git';

const HTTP_BACKEND = '/usr/lib/git-core/git-http-backend';

export interface TestRepository {
  /** The bare repository's directory. */
  bare: string;
  /** file:// URL of the bare repository. */
  url: string;
  /**
   * Writes files in the clone (`{ link }`: a symbolic link to that path; `null`: deletes),
   * commits them as `author` and pushes. Returns the new SHA.
   */
  commit(
    files: Record<string, string | { link: string } | null>,
    options?: { message?: string; author?: string },
  ): Promise<string>;
  /** The SHA at the tip of `main`. */
  tip(): Promise<string>;
  remove(): Promise<void>;
}

/** A bare repository with branch `main` and a working clone to push to it, in a new directory under `parent`. */
export async function createTestRepository(parent: string = tmpdir()): Promise<TestRepository> {
  const root = await mkdtemp(join(parent, 'fleet-git-test-'));
  const bare = join(root, 'repo.git');
  const work = join(root, 'work');
  await mkdir(bare);
  await mkdir(work);
  await simpleGit(bare).raw(['init', '--bare', '--initial-branch=main']);
  const clone: SimpleGit = simpleGit(work);
  await clone.raw(['init', '--initial-branch=main']);
  await clone.raw(['remote', 'add', 'origin', bare]);
  return {
    bare,
    url: `file://${bare}`,
    async commit(files, options = {}) {
      for (const [path, content] of Object.entries(files)) {
        const file = join(work, path);
        if (content === null) await unlink(file);
        else {
          await mkdir(dirname(file), { recursive: true });
          if (typeof content === 'string') await writeFile(file, content);
          else await symlink(content.link, file);
        }
      }
      const author = options.author ?? 'Alice Example';
      await clone.raw(['add', '-A']);
      await clone.raw([
        '-c',
        `user.name=${author}`,
        '-c',
        'user.email=alice@example.com',
        'commit',
        '--allow-empty',
        '-m',
        options.message ?? 'change configurations',
      ]);
      await clone.raw(['push', 'origin', 'main']);
      return (await clone.revparse(['HEAD'])).trim();
    },
    tip: async () => (await simpleGit(bare).revparse(['main'])).trim(),
    remove: () => rm(root, { recursive: true, force: true }),
  };
}

export interface SmartHttpServer {
  /** http(s)://127.0.0.1:<port>/ ; a repository `<root>/x.git` is at `<baseUrl>x.git`. */
  baseUrl: string;
  /** Requests refused for want of the right credentials. */
  refused: number;
  close(): Promise<void>;
}

/**
 * Serves every repository under `projectRoot` over smart HTTP (HTTPS with `tls`: a server
 * certificate of the test's own CA, as a self-hosted server behind an internal CA), asking
 * basic auth whose password is `token` (any user name), as hosting services do for tokens.
 */
export async function startSmartHttpServer(
  projectRoot: string,
  token: string,
  options: { tls?: { certificatePem: string; keyPem: string } } = {},
): Promise<SmartHttpServer> {
  const state = { refused: 0 };
  const expected = (header: string | undefined) => {
    const match = /^Basic (.+)$/.exec(header ?? '');
    if (!match) return false;
    const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
    return decoded.slice(decoded.indexOf(':') + 1) === token;
  };
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    if (!expected(req.headers.authorization)) {
      state.refused++;
      res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="test"' }).end('unauthorized');
      return;
    }
    runBackend(projectRoot, req, res);
  };
  const tls = options.tls;
  const server: Server = tls
    ? createHttpsServer({ cert: tls.certificatePem, key: tls.keyPem }, handle)
    : createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseUrl: `${tls ? 'https' : 'http'}://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    get refused() {
      return state.refused;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** One CGI request to git http-backend: the request body on stdin, CGI headers then body on stdout. */
function runBackend(projectRoot: string, req: IncomingMessage, res: ServerResponse): void {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const backend = spawn(HTTP_BACKEND, [], {
    env: {
      PATH: process.env.PATH,
      GIT_PROJECT_ROOT: projectRoot,
      GIT_HTTP_EXPORT_ALL: '1',
      REMOTE_USER: 'test',
      REMOTE_ADDR: '127.0.0.1',
      PATH_INFO: decodeURIComponent(url.pathname),
      QUERY_STRING: url.search.slice(1),
      REQUEST_METHOD: req.method ?? 'GET',
      CONTENT_TYPE: req.headers['content-type'] ?? '',
      ...(req.headers['content-encoding'] ? { HTTP_CONTENT_ENCODING: req.headers['content-encoding'] } : {}),
      ...(req.headers['git-protocol'] ? { GIT_PROTOCOL: String(req.headers['git-protocol']) } : {}),
    },
  });
  req.pipe(backend.stdin);
  let head = Buffer.alloc(0);
  let headersSent = false;
  backend.stdout.on('data', (chunk: Buffer) => {
    if (headersSent) {
      res.write(chunk);
      return;
    }
    head = Buffer.concat([head, chunk]);
    const end = head.indexOf('\r\n\r\n');
    if (end < 0) return;
    let status = 200;
    for (const line of head.subarray(0, end).toString('latin1').split('\r\n')) {
      const colon = line.indexOf(':');
      const [name, value] = [line.slice(0, colon).trim(), line.slice(colon + 1).trim()];
      if (name.toLowerCase() === 'status') status = Number(value.split(' ')[0]);
      else res.setHeader(name, value);
    }
    res.writeHead(status);
    headersSent = true;
    res.write(head.subarray(end + 4));
  });
  backend.on('close', () => {
    if (!headersSent) res.writeHead(502);
    res.end();
  });
  backend.on('error', () => {
    if (!headersSent) res.writeHead(502);
    res.end();
  });
}
