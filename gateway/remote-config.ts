/**
 * The `remote_config` message for an agent's desired configuration (see domain/pushes.ts
 * for how a push writes it): built once per published version and kept.
 */
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { Db } from '../db/connection';
import { findVersionWithContent } from '../db/repos/configuration-versions';
import { findConfigurationNameAndFormat } from '../db/repos/configurations';
import type { AgentRemoteConfigSchema } from './gen/opamp_pb';

export interface Desired {
  configurationId: string;
  version: number;
  hash: string;
}

const CONTENT_TYPES = { yaml: 'text/yaml', json: 'application/json', text: 'text/plain' } as const;

type RemoteConfig = MessageInitShape<typeof AgentRemoteConfigSchema>;

/**
 * Published versions never change, so their remote_config messages are kept (the most
 * recently used CACHE_SIZE of them) instead of reading up to 1 MiB of content per agent.
 */
export class RemoteConfigCache {
  private static readonly CACHE_SIZE = 32;
  private readonly entries = new Map<string, Promise<RemoteConfig | undefined>>();

  constructor(private readonly db: Db) {}

  get(desired: Desired): Promise<RemoteConfig | undefined> {
    const key = `${desired.configurationId}:${desired.version}`;
    let entry = this.entries.get(key);
    if (entry) {
      this.entries.delete(key); // re-insert: most recently used last
    } else {
      entry = this.load(desired).catch((error: unknown) => {
        this.entries.delete(key);
        throw error;
      });
    }
    this.entries.set(key, entry);
    while (this.entries.size > RemoteConfigCache.CACHE_SIZE) this.entries.delete(this.entries.keys().next().value!);
    return entry;
  }

  private async load(desired: Desired): Promise<RemoteConfig | undefined> {
    const [configuration, version] = await Promise.all([
      findConfigurationNameAndFormat(this.db, desired.configurationId),
      findVersionWithContent(this.db, desired.configurationId, desired.version),
    ]);
    if (!configuration || !version || version.state !== 'published') return undefined;
    return {
      config: {
        configMap: {
          [configuration.name]: {
            body: Buffer.from(version.content, 'utf8'),
            contentType: CONTENT_TYPES[configuration.format],
          },
        },
      },
      configHash: Buffer.from(version.content_hash, 'hex'),
    };
  }
}
