import { randomUUID } from 'node:crypto';
import type { TestApp } from './app';

export interface PublishedVersion {
  configurationId: string;
  name: string;
  version: number;
  contentHash: string;
}

/** A configuration with one published version per `contents` entry, through the API. */
export async function publishConfiguration(
  t: TestApp,
  token: string,
  contents: string[],
  options: { name?: string; format?: 'yaml' | 'json' | 'text'; tenantToken?: string } = {},
): Promise<PublishedVersion[]> {
  const name = options.name ?? `collector-${randomUUID().slice(0, 8)}`;
  const created = await t.call('POST', '/api/configurations', {
    token,
    body: { name, format: options.format ?? 'yaml' },
  });
  if (created.status !== 201)
    throw new Error(`create configuration: ${created.status} ${JSON.stringify(created.body)}`);
  const id = created.body.id as string;
  const versions: PublishedVersion[] = [];
  for (const content of contents) {
    const draft = await t.call('POST', `/api/configurations/${id}/versions`, { token, body: { content } });
    if (draft.status !== 201) throw new Error(`save draft: ${draft.status} ${JSON.stringify(draft.body)}`);
    const published = await t.call('POST', `/api/configurations/${id}/versions/${draft.body.version}/publish`, {
      token,
    });
    if (published.status !== 200) throw new Error(`publish: ${published.status} ${JSON.stringify(published.body)}`);
    versions.push({ configurationId: id, name, version: draft.body.version, contentHash: draft.body.contentHash });
  }
  return versions;
}
