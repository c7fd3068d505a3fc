/**
 * The compose file's example identity provider (deploy/keycloak-realm.json) fits the
 * service as compose configures it: the console's client is where the api's sign-in looks
 * for it, sends people back to the api's callback, and puts the roles where the api reads
 * them. Keycloak itself cannot run here (no container engine); this checks the contract.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { loadSettings } from '../platform/settings';

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
