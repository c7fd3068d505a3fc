/** What the loopback OIDC issuer (oidc-issuer.ts) and the apps the tests and benches build agree on. */

/** Where the console's sign-in sends people back in tests (test apps' Http:PublicBaseUrl). */
export const TEST_CONSOLE_REDIRECT = 'http://fleet.test/api/auth/callback';

/** The audience the issuer puts in its tokens, and the one the app expects. */
export const TEST_AUDIENCE = 'https://fleet.test/api';

/** Gets an access token for `<tenant>.<role>` from a running issuer. */
export async function fetchToken(issuer: string, clientId: string, resource?: string): Promise<string> {
  const body = new URLSearchParams({ grant_type: 'client_credentials', scope: 'api' });
  if (resource) body.set('resource', resource);
  const response = await fetch(`${issuer}/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${clientId}:secret`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body,
  });
  const json = (await response.json()) as { access_token?: string; error?: string; error_description?: string };
  if (!json.access_token)
    throw new Error(`token request for ${clientId} failed: ${json.error} ${json.error_description}`);
  return json.access_token;
}
