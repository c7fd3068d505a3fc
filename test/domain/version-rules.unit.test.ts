/**
 * The rules every version is held to, whoever writes it (REST, a Git sweep, a federated
 * copy): the content is checked once, before the transaction, and only a checked content
 * can be saved; a configuration managed by Git takes versions from its source alone.
 */
import type { ConfigurationRow } from '../../db/repos/configurations';
import { CONTENT_LIMIT_BYTES } from '../../domain/configurations/content';
import { checkVersionContent, refuseManagedByGit, refuseOtherFormat } from '../../domain/configurations/versions';
import { ContentTooLargeError, DomainError, InvalidContentError, ManagedByGitError } from '../../domain/errors';

const configuration = (fields: Partial<ConfigurationRow>) =>
  ({ id: 'c1', name: 'app', format: 'yaml', managed_by: null, ...fields }) as ConfigurationRow;

describe('checking a version content', () => {
  test('a content that fits and parses comes back checked, with its format', async () => {
    await expect(checkVersionContent('yaml', 'a: 1\n')).resolves.toMatchObject({ format: 'yaml', text: 'a: 1\n' });
  });

  test('exactly the limit in UTF-8 bytes is taken; one byte more is refused before any parse, with both sizes', async () => {
    await expect(checkVersionContent('text', 'a'.repeat(CONTENT_LIMIT_BYTES))).resolves.toBeDefined();
    const over = checkVersionContent('yaml', 'é'.repeat(CONTENT_LIMIT_BYTES / 2 + 1));
    await expect(over).rejects.toBeInstanceOf(ContentTooLargeError);
    await expect(over).rejects.toMatchObject({ size: CONTENT_LIMIT_BYTES + 2, limit: CONTENT_LIMIT_BYTES });
  });

  test('a content that does not parse in its format is refused saying where', async () => {
    const bad = checkVersionContent('json', '{"a": }');
    await expect(bad).rejects.toBeInstanceOf(InvalidContentError);
    await expect(bad).rejects.toThrow(/line 1/);
  });
});

describe('who may add a version', () => {
  test('a configuration managed by Git refuses everyone but its own source', () => {
    const managed = configuration({ managed_by: 'source-1' });
    expect(() => refuseManagedByGit(managed)).toThrow(ManagedByGitError);
    expect(() => refuseManagedByGit(managed, 'source-2')).toThrow(/managed by Git source 'source-1'/);
    expect(() => refuseManagedByGit(managed, 'source-1')).not.toThrow();
    expect(() => refuseManagedByGit(configuration({}))).not.toThrow();
  });

  test("a version in another format than the configuration's is refused", () => {
    expect(() => refuseOtherFormat(configuration({}), 'json')).toThrow(DomainError);
    expect(() => refuseOtherFormat(configuration({}), 'yaml')).not.toThrow();
  });
});
