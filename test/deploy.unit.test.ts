/**
 * The compose file's example identity provider (deploy/keycloak-realm.json) fits the
 * service as compose configures it: the console's client is where the api's sign-in looks
 * for it, sends people back to the api's callback, and puts the roles where the api reads
 * them. Keycloak itself cannot run here (no container engine); this checks the contract.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { IMAGE_MALLOC_CONF, IMAGE_NODE_MAJOR, IMAGE_NODE_OPTIONS } from '../bench/image-runtime';
import { loadSettings } from '../platform/settings';
import { haproxyConfig } from '../scripts/infra/haproxy';

const root = path.resolve(__dirname, '..');
const realm = JSON.parse(readFileSync(path.join(root, 'deploy/keycloak-realm.json'), 'utf8'));
const compose = readFileSync(path.join(root, 'docker-compose.yml'), 'utf8');

/** A setting of the compose file's shared environment (`Name__Part: value`). */
function composeSetting(name: string): string {
  const match = new RegExp(`^\\s+${name}: (\\S+)$`, 'm').exec(compose);
  if (!match) throw new Error(`docker-compose.yml sets no ${name}`);
  return match[1]!;
}

test('the realm has the console client the api signs people in with, public, code flow with PKCE only', () => {
  const publicBaseUrl = composeSetting('Http__PublicBaseUrl');
  const defaults = loadSettings({ Environment: 'Development', Database__Url: 'postgres://x@localhost/x' });
  const client = realm.clients.find((c: { clientId: string }) => c.clientId === defaults.console.clientId);
  expect(client).toMatchObject({
    enabled: true,
    publicClient: true,
    standardFlowEnabled: true,
    implicitFlowEnabled: false,
    directAccessGrantsEnabled: false,
    redirectUris: [`${publicBaseUrl}/api/auth/callback`],
    attributes: { 'pkce.code.challenge.method': 'S256', 'post.logout.redirect.uris': publicBaseUrl },
  });
  const roles = client.protocolMappers.find(
    (mapper: { protocolMapper: string }) => mapper.protocolMapper === 'oidc-usermodel-realm-role-mapper',
  );
  expect(roles.config).toMatchObject({
    'claim.name': composeSetting('Authentication__Oidc__RoleClaim'),
    'id.token.claim': 'true',
  });
});

test('two people can approve each other’s policies: the realm has two admins', () => {
  const admins = realm.users.filter(
    (user: { realmRoles?: string[]; serviceAccountClientId?: string }) =>
      user.realmRoles?.includes('admin') && !user.serviceAccountClientId,
  );
  expect(admins.length).toBeGreaterThanOrEqual(2);
});

/** The compose file as data (its merge keys resolved), and HAProxy's template as its lines. */
const services = (parse(compose, { merge: true }) as { services: Record<string, Record<string, unknown>> }).services;
const haproxy = readFileSync(path.join(root, 'deploy/haproxy.cfg'), 'utf8')
  .split('\n')
  .map((line) => line.trim());
const section = (name: string) => {
  const start = haproxy.indexOf(name);
  const end = haproxy.findIndex((line, i) => i > start && /^(frontend|backend|defaults|global|resolvers) /.test(line));
  return haproxy.slice(start, end === -1 ? undefined : end);
};

test('replicas: the load balancer is the one entry, HTTP and the agents’ port, to api replicas that are ready', () => {
  // `lb` publishes both ports and reads its configuration from deploy/; the api publishes none,
  // so it can be scaled, and trusts the forwarded address.
  expect(services.lb).toMatchObject({
    ports: ['8080:8080', '4320:4320'],
    volumes: ['./deploy/haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro'],
  });
  expect(services.api!.ports).toBeUndefined();
  expect(services.api!.environment).toMatchObject({ Http__TrustProxy: 'true', Database__Url: expect.any(String) });
  // HTTP to the replicas' 8080, TCP passthrough to their 4320 (TLS ends on the replica), both
  // checked by /readyz and found by the service's DNS name.
  expect(section('backend api')).toEqual(
    expect.arrayContaining(['mode http', 'option httpchk GET /readyz', 'server-template api 10 api:8080']),
  );
  expect(section('backend agents')).toEqual(
    expect.arrayContaining(['mode tcp', 'option httpchk GET /readyz', 'server-template agent 10 api:4320']),
  );
  expect(section('frontend agents')).toEqual(expect.arrayContaining(['bind :4320', 'mode tcp']));
  expect(section('frontend http')).toEqual(expect.arrayContaining(['bind :8080', 'option forwardfor']));
  // WebSockets (the hub, OpAMP) outlive a request's timeouts.
  expect(section('defaults')).toContain('timeout tunnel 1h');
});

test('agents’ TLS ended at the load balancer: deploy/haproxy-agents-tls.cfg forwards what the tested configuration does', () => {
  const lines = (text: string) => text.split('\n').map((line) => line.trim());
  const shipped = lines(readFileSync(path.join(root, 'deploy/haproxy-agents-tls.cfg'), 'utf8'));
  const tested = lines(
    haproxyConfig({ agents: 4320 }, [{ http: 8080, agents: 4320 }], {
      agentTls: { certificateFile: '/c.pem', caFile: '/ca.pem', source: '10.0.0.2' },
    }),
  );
  // The agent's own header dropped, then the verified certificate set; both verify optionally.
  const header = (all: string[]) => all.filter((line) => line.startsWith('http-request'));
  expect(header(shipped)).toEqual(header(tested));
  expect(header(shipped)).toEqual([
    'http-request del-header X-Agent-Certificate',
    'http-request set-header X-Agent-Certificate %[ssl_c_der,base64] if { ssl_c_used }',
  ]);
  const bindOptions = (all: string[]) =>
    all
      .find((line) => line.startsWith('bind '))!
      .split(/\s+/)
      .slice(2);
  const options = (all: string[]) =>
    bindOptions(all).filter((word, i, words) => !words[i - 1]?.match(/^(crt|ca-file)$/));
  expect(options(shipped)).toEqual(options(tested));
  expect(options(shipped)).toEqual(expect.arrayContaining(['ssl', 'verify', 'optional']));
  expect(shipped.filter((line) => line === 'mode http')).toHaveLength(2);
});

test('the benches measure with the runtime the image runs', () => {
  const dockerfile = readFileSync(path.join(root, 'Dockerfile'), 'utf8');
  const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
  expect(runtime.match(/^FROM node:(\d+)-/m)?.[1]).toBe(String(IMAGE_NODE_MAJOR));
  const env =
    /^ENV LD_PRELOAD=\/usr\/local\/lib\/libjemalloc\.so\.2 \\\n {4}MALLOC_CONF=(\S+) \\\n {4}NODE_OPTIONS=(\S+) \\$/m;
  expect(runtime.match(env)?.slice(1)).toEqual([IMAGE_MALLOC_CONF, IMAGE_NODE_OPTIONS]);
});
