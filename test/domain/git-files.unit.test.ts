import { collidingNames, linkTarget } from '../../domain/git/files';
import { caBundleProblem } from '../../domain/git/source-fields';

describe('a symbolic link is followed only inside the source', () => {
  test.each([
    ['', 'a-link.yaml', 'a.yaml', 'a.yaml'],
    ['', 'dir/a-link.yaml', '../a.yaml', 'a.yaml'],
    ['prod', 'prod/x.yaml', 'sub/../y.yaml', 'prod/y.yaml'],
    ['prod', 'prod/deep/x.yaml', '../y.yaml', 'prod/y.yaml'],
  ])('source %p: %s → %s is %s', (source, link, target, resolved) => {
    expect(linkTarget(source, link, target)).toBe(resolved);
  });

  test.each([
    ['', 'a.yaml', '../outside.yaml', "a symbolic link to '../outside.yaml', outside the repository"],
    ['', 'a.yaml', '/etc/passwd', "a symbolic link to '/etc/passwd', outside the repository"],
    [
      'prod',
      'prod/a.yaml',
      '../shared/b.yaml',
      "a symbolic link to '../shared/b.yaml', outside the source's path 'prod'",
    ],
    ['prod', 'prod/a.yaml', '..', "a symbolic link to '..', outside the source's path 'prod'"],
    [
      'prod',
      'prod/a.yaml',
      '../prod-other/b.yaml',
      "a symbolic link to '../prod-other/b.yaml', outside the source's path 'prod'",
    ],
  ])('source %p: %s → %s is refused', (source, link, target, error) => {
    expect(linkTarget(source, link, target)).toEqual({ error });
  });
});

test('files whose names collide are each an error naming the others; the rest are not', () => {
  const errors = collidingNames([
    { path: 'a.yaml', name: 'a' },
    { path: 'a.yml', name: 'a' },
    { path: 'a.json', name: 'a' },
    { path: 'b.yaml', name: 'b' },
  ]);
  expect([...errors.keys()]).toEqual(['a.yaml', 'a.yml', 'a.json']);
  expect(errors.get('a.yml')).toBe(
    "'a.yml' and 'a.yaml' and 'a.json' both name the configuration 'a'; rename or remove all but one",
  );
});

describe("a source's CA bundle", () => {
  test.each([
    ['', /one or more PEM certificates/],
    [
      '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----',
      /certificate 1 is not a readable X.509 certificate/,
    ],
    ['-----BEGIN CERTIFICATE-----\n' + 'A'.repeat(80), /one or more PEM certificates/],
  ])('%p is refused', (pem, message) => {
    expect(caBundleProblem(pem)).toMatch(message);
  });
});
