import { execFileSync } from 'node:child_process';
import { BRANCH_PATTERN, TREE_PATH_PATTERN } from '../../api/routes/git-sources/schema';
import { branchProblem, fileRepositoryProblem, repoUrlProblem, treePathProblem } from '../../domain/git/source-fields';

/** What the real git says of a branch name (exit status of `git check-ref-format --branch`). */
function gitAccepts(name: string): boolean {
  try {
    execFileSync('git', ['check-ref-format', '--branch', name], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

describe('branch names follow git check-ref-format --branch', () => {
  const names = [
    'main',
    'release/1.0',
    'ü-branch',
    'foo.lock.x',
    'a@b',
    'x/-y',
    'a..b',
    '-x',
    'x.lock',
    'a b',
    'a\tb',
    'a~1',
    'a/',
    '.hidden',
    'feature/.x',
    'a@{1}',
    'a//b',
    'a.',
    'a\\b',
    'a*b',
    'a:b',
    'a?b',
    'a[b',
    'a^b',
    '/a',
    'a/b.lock/c',
    'HEAD',
    'a\u007fb',
  ];
  test.each(names)('%j: accepted exactly when git accepts it', (name) => {
    expect(branchProblem(name) === undefined).toBe(gitAccepts(name));
  });

  test.each([...names, '@', 'refs/heads/main', 'x'.repeat(255), 'x'.repeat(256), '', 'a\u00a0b', 'a\u0085b', 'a/b/c'])(
    '%j: the document says of it what branchProblem says (BRANCH_PATTERN)',
    (name) => expect(BRANCH_PATTERN.test(name)).toBe(branchProblem(name) === undefined),
  );

  test('stricter than git where git would take a name that misleads: @ and a full ref', () => {
    expect(gitAccepts('@')).toBe(true);
    expect(branchProblem('@')).toMatch(/current commit/);
    expect(gitAccepts('refs/heads/main')).toBe(true);
    expect(branchProblem('refs/heads/main')).toMatch(/not the ref/);
  });
});

describe('repository URLs', () => {
  test.each([
    'https://github.com/acme/fleet.git',
    'https://git.example.com:8443/acme/fleet',
    'ssh://git@github.com/acme/fleet.git',
    'ssh://git.example.com:2222/srv/fleet.git',
    'file:///srv/git/fleet.git',
  ])('%s is accepted', (url) => expect(repoUrlProblem(url)).toBeUndefined());

  test.each([
    ['http://github.com/a.git', /scheme http:/],
    ['https://user:ghp_x@github.com/a.git', /credentials/],
    ['ssh://git:secret@github.com/a.git', /credentials/],
    ['https://token@github.com/a.git', /credentials.username/],
    ['https:///a.git', /host/],
    ['https:a.git', /host/],
    ['https:\\\\evil.example\\a.git', /\\/],
    ['file://host/srv/a.git', /no host/],
    ['file:/srv/a.git', /no host/],
    ['https://github.com/a.git#main', /fragment/],
    ['git@github.com:acme/fleet.git', /scheme|absolute/],
    ['--upload-pack=touch /tmp/x', /spaces/],
    ['-uhttps://x', /absolute|scheme/],
    ['ssh://-oProxyCommand=touch%20x/a.git', /plain host name/],
    ['ssh://-oProxyCommand=x@git.example.com/a.git', /user name must be plain/],
    ['ssh://%2doProxyCommand=x@git.example.com/a.git', /user name must be plain/],
    ['ssh://git@-host.example.com/a.git', /plain host name/],
    ['ssh://git@host%2eexample.com/a.git', /plain host name/],
    ['-oProxyCommand=x:a.git', /absolute/],
    ['git@-oProxyCommand=x:a.git', /absolute/],
    ['file:///srv/git/a%20b.git', /%-escapes/],
  ])('%s is refused', (url, why) => expect(repoUrlProblem(url)).toMatch(why));

  test('an ssh:// URL with an IPv6 host and a port is accepted', () =>
    expect(repoUrlProblem('ssh://git@[2001:db8::1]:2222/fleet.git')).toBeUndefined());

  test('the refusal of an embedded secret never quotes it', () => {
    expect(repoUrlProblem('https://bot:ghp_VERYSECRET@github.com/a.git')).not.toContain('VERYSECRET');
  });
});

describe('file:// repositories and Git:FileRoots', () => {
  test.each([
    ['file:///srv/git/fleet.git', [], /not allowed on this installation/],
    ['file:///srv/git/fleet.git', ['/tmp'], /only under/],
    ['file:///tmpfoo/fleet.git', ['/tmp'], /only under/],
    ['file:///tmp/../etc/fleet.git', ['/tmp'], /only under/],
  ])('%s with roots %j is refused', (url, roots, why) => expect(fileRepositoryProblem(url, roots)).toMatch(why));

  test.each([
    ['file:///tmp/fleet.git', ['/tmp']],
    ['file:///srv/git/a/fleet.git', ['/tmp', '/srv/git']],
    ['https://git.example.com/a.git', []],
  ])('%s with roots %j is accepted', (url, roots) => expect(fileRepositoryProblem(url, roots)).toBeUndefined());
});

describe('tree paths', () => {
  test.each(['', 'collectors', 'prod/edge', 'prod/edge/', 'with space'])('%j is accepted', (path) =>
    expect(treePathProblem(path)).toBeUndefined(),
  );
  test.each(['/etc', '..', 'a/../b', 'a/./b', './a', 'a//b', 'a\\b', 'a\nb'])('%j is refused', (path) =>
    expect(treePathProblem(path)).toEqual(expect.any(String)),
  );
  test.each([
    '',
    'a',
    'a/',
    'a b',
    '.a',
    'a..b',
    '/',
    '/a',
    '..',
    'a/..',
    'a/./b',
    'a//b',
    'a\\b',
    'a\tb',
    'x'.repeat(1025),
  ])('%j: the document says of it what treePathProblem says (TREE_PATH_PATTERN)', (path) =>
    expect(TREE_PATH_PATTERN.test(path)).toBe(treePathProblem(path) === undefined),
  );
});
