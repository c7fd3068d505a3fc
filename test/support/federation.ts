/**
 * Installations of the service for federation tests: each a whole one of its own (database,
 * api, agent listener over TLS, worker on its own task queue), all on the suite's one
 * Temporal dev server, paired through the API the way operators pair them.
 */
import { startRolloutEnv, type RolloutEnv, type RolloutEnvOptions } from './rollout-env';
import { freePort } from './processes';

export interface Installation extends RolloutEnv {
  name: string;
  /** An OIDC admin token of tenant `default` on this installation. */
  admin: string;
}

export async function startInstallation(name: string, options: RolloutEnvOptions = {}): Promise<Installation> {
  const port = await freePort();
  const env = await startRolloutEnv({
    ...options,
    gatewayPort: port,
    apiEnv: {
      Federation__InstallationName: name,
      Agents__PublicEndpoint: `wss://127.0.0.1:${port}/v1/opamp`,
      ...options.apiEnv,
    },
  });
  return Object.assign(env, { name, admin: await env.t.token('default.admin') });
}

/**
 * Makes `to` a peer of `from`: `to` issues a `peer` PAT (as its admin would) and `from`'s
 * admin registers it with POST /api/federation/peers. Returns the peer's id on `from`.
 */
export async function pair(from: Installation, to: Installation, name = to.name): Promise<string> {
  const credential = await to.t.pat('peer', { name: `peer-${from.name}` });
  const res = await from.t.call('POST', '/api/federation/peers', {
    token: from.admin,
    body: { name, baseUrl: to.t.baseUrl, credential },
  });
  if (res.status !== 201)
    throw new Error(`POST /api/federation/peers answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body.id as string;
}
