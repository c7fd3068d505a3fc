/**
 * Who may import whom (docs/architecture.md, Who may import whom), checked on every run: a forbidden
 * import fails the suite with the file and the line that made it. Type-only imports are
 * erased at compile time, so they may cross where a value import may not (a workflow
 * names its activities' types, never their code).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const root = path.resolve(__dirname, '..');
const LAYERS = ['api', 'gateway', 'domain', 'platform', 'db', 'workflows', 'activities', 'worker'] as const;
type Layer = (typeof LAYERS)[number];

interface Import {
  file: string;
  line: number;
  specifier: string;
  /** Our top-level folder it reaches, or undefined for a package. */
  layer?: string;
  target: string;
  typeOnly: boolean;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : sourceFiles(full);
    return /\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts') ? [full] : [];
  });
}

function isTypeOnly(statement: ts.ImportDeclaration | ts.ExportDeclaration): boolean {
  if (ts.isExportDeclaration(statement)) return statement.isTypeOnly;
  const clause = statement.importClause;
  if (!clause) return false; // a side-effect import runs the module
  if (clause.isTypeOnly) return true;
  const named = clause.namedBindings;
  return (
    !clause.name &&
    !!named &&
    ts.isNamedImports(named) &&
    named.elements.length > 0 &&
    named.elements.every((e) => e.isTypeOnly)
  );
}

function importsOf(file: string): Import[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const found: Import[] = [];
  const add = (node: ts.Node, specifier: string, typeOnly: boolean) => {
    const target = specifier.startsWith('.')
      ? path.relative(root, path.resolve(path.dirname(file), specifier))
      : specifier;
    const layer = specifier.startsWith('.') ? target.split(path.sep)[0] : undefined;
    const line = source.getLineAndCharacterOfPosition(node.getStart()).line + 1;
    found.push({ file: path.relative(root, file), line, specifier, layer, target, typeOnly });
  };
  const visit = (node: ts.Node) => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      add(node, node.moduleSpecifier.text, isTypeOnly(node));
    } else if (ts.isCallExpression(node) && node.arguments.length === 1 && ts.isStringLiteral(node.arguments[0]!)) {
      const callee = node.expression;
      const dynamic = callee.kind === ts.SyntaxKind.ImportKeyword;
      const required = ts.isIdentifier(callee) && callee.text === 'require';
      const resolved = ts.isPropertyAccessExpression(callee) && callee.getText() === 'require.resolve';
      if (dynamic || required || resolved) add(node, node.arguments[0].text, false);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

const imports = LAYERS.flatMap((layer) =>
  sourceFiles(path.join(root, layer)).map((file) => ({ layer, imports: importsOf(file) })),
);
const from = (layer: Layer) => imports.filter((entry) => entry.layer === layer).flatMap((entry) => entry.imports);
const show = (found: Import[]) =>
  found.map((i) => `${i.file}:${i.line} imports '${i.specifier}'${i.typeOnly ? ' (type)' : ''}`);
const ours = (i: Import) => i.layer !== undefined;

test('the check sees the imports it judges (it would pass vacuously otherwise)', () => {
  expect(from('activities').some((i) => i.layer === 'domain')).toBe(true);
  expect(from('workflows').some((i) => i.layer === 'activities' && i.typeOnly)).toBe(true);
  expect(from('worker').some((i) => i.target === 'workflows' && !i.typeOnly)).toBe(true); // require.resolve('../workflows')
});

test('db/ imports nothing of ours above it, but the domain vocabulary it stores, by type', () => {
  const found = from('db').filter((i) => ours(i) && i.layer !== 'db' && !(i.layer === 'domain' && i.typeOnly));
  expect(show(found)).toEqual([]);
});

test('platform/ is plumbing: it imports nothing of ours', () => {
  expect(show(from('platform').filter((i) => ours(i) && i.layer !== 'platform'))).toEqual([]);
});

test('domain/ imports only db/ and platform/: no api, gateway, process or Temporal, no Koa', () => {
  const allowed = new Set(['domain', 'db', 'platform']);
  const forbiddenPackage = /^(@temporalio\/|koa$|@koa\/|ws$)/;
  expect(
    show(from('domain').filter((i) => (ours(i) ? !allowed.has(i.layer!) : forbiddenPackage.test(i.specifier)))),
  ).toEqual([]);
});

/**
 * What reaches the network: a domain rule that needs an answer from elsewhere gets it as an
 * argument. (node:net is allowed for isIP, a pure check; what opens a socket is not.)
 */
const NETWORK = /^(node:)?(http|https|http2|tls|dgram|dns)$|^(undici|ws|simple-git)$/;
const NETWORK_MODULES = new Set(['platform/peer-client', 'platform/outbound', 'platform/outbound-proxy']);

test('domain/ makes no network call: no network module, no peer client or outbound policy but by type, no fetch', () => {
  const found = from('domain').filter(
    (i) => NETWORK.test(i.specifier) || (NETWORK_MODULES.has(i.target) && !i.typeOnly),
  );
  expect(show(found)).toEqual([]);
  expect(linesIn('domain', /\b(fetch|connect|createConnection|createServer)\(|\bnew Socket\b/)).toEqual([]);
});

/**
 * String literals in domain/ that name an API path. The one kind allowed is an event's
 * CloudEvents `source` (docs/events.md): the event contract names the resource by its path.
 */
function apiPathsIn(layer: string): string[] {
  return sourceFiles(path.join(root, layer)).flatMap((file) => {
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const found: string[] = [];
    const isEventSource = (node: ts.Node): boolean => {
      const parent = node.parent;
      if (ts.isPropertyAssignment(parent)) return parent.name.getText() === 'source';
      if (ts.isVariableDeclaration(parent)) return parent.name.getText() === 'SOURCE';
      return false;
    };
    const visit = (node: ts.Node) => {
      if (
        (ts.isStringLiteral(node) || ts.isTemplateExpression(node) || ts.isNoSubstitutionTemplateLiteral(node)) &&
        /\/api\//.test(node.getText()) &&
        !isEventSource(node)
      ) {
        const line = source.getLineAndCharacterOfPosition(node.getStart()).line + 1;
        found.push(`${path.relative(root, file)}:${line}: ${node.getText()}`);
        return;
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
    return found;
  });
}

test('domain/ knows no URL path (an event names its source, nothing else does)', () => {
  expect(apiPathsIn('api').length).toBeGreaterThan(0); // the check sees paths where there are some
  expect(apiPathsIn('domain')).toEqual([]);
});

test('workflows/ import nothing from db/, not even a type: they speak the domain vocabulary', () => {
  expect(show(from('workflows').filter((i) => i.layer === 'db'))).toEqual([]);
});

test('worker/, activities/ and workflows/ never load api/ or gateway/ (another process)', () => {
  const processes = ['worker', 'activities', 'workflows'] as const;
  const found = processes.flatMap((layer) => from(layer).filter((i) => i.layer === 'api' || i.layer === 'gateway'));
  expect(show(found)).toEqual([]);
});

/** The contract with Temporal an activity may load to start or operate another workflow (as the api does). */
const WORKFLOW_CONTRACT = new Set([
  'workflows/definitions',
  'workflows/rollout-start',
  'workflows/rollout-client',
  'workflows/search-attributes',
]);

/** The workflows' callers' side (a Temporal client the api and activities share), never loaded into the sandbox. */
const CALLERS_SIDE = new Set([path.join('workflows', 'rollout-client.ts')]);

test('activities/ use domain, db and platform; workflows only by type, but for the contract with Temporal', () => {
  const allowed = new Set(['activities', 'domain', 'db', 'platform']);
  const found = from('activities').filter(
    (i) =>
      ours(i) &&
      !allowed.has(i.layer!) &&
      !(i.layer === 'workflows' && (i.typeOnly || WORKFLOW_CONTRACT.has(i.target))),
  );
  expect(show(found)).toEqual([]);
});

test('workflows/ load only workflow code and pure rollout rules (and their windows) into the sandbox; anything else by type only', () => {
  const runtime = from('workflows').filter((i) => !i.typeOnly && !CALLERS_SIDE.has(i.file));
  const allowedTargets = new Set(['domain/rollouts', 'domain/rollout-windows']);
  const found = runtime.filter((i) =>
    ours(i)
      ? i.layer !== 'workflows' && !allowedTargets.has(i.target)
      : !/^@temporalio\/(workflow|common)$/.test(i.specifier),
  );
  expect(show(found)).toEqual([]);
});

test("the workflows' callers' side is loaded by no workflow, and loads only the contract, domain errors and the Temporal client", () => {
  const callers = [...CALLERS_SIDE].map((file) => file.replace(/\.ts$/, ''));
  expect(show(from('workflows').filter((i) => callers.includes(i.target)))).toEqual([]);
  const allowed = new Set(['domain/errors', 'platform/temporal']);
  const found = from('workflows').filter(
    (i) =>
      CALLERS_SIDE.has(i.file) &&
      !i.typeOnly &&
      (ours(i)
        ? i.layer !== 'workflows' && !allowed.has(i.target)
        : !/^@temporalio\/(client|common)$/.test(i.specifier)),
  );
  expect(show(found)).toEqual([]);
});

test('gateway/ does not import api/, activities/, worker/ or workflow code', () => {
  const found = from('gateway').filter(
    (i) => ['api', 'activities', 'worker'].includes(i.layer!) || (i.layer === 'workflows' && !i.typeOnly),
  );
  expect(show(found)).toEqual([]);
});

/** The values a file imports by name from the modules `specifier` matches, with their lines. */
function namedValueImports(file: string, specifier: RegExp): Array<{ name: string; line: number }> {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  return source.statements.flatMap((statement) => {
    if (!ts.isImportDeclaration(statement) || !ts.isStringLiteral(statement.moduleSpecifier)) return [];
    const clause = statement.importClause;
    const named = clause?.namedBindings;
    if (!specifier.test(statement.moduleSpecifier.text) || clause?.isTypeOnly || !named || !ts.isNamedImports(named))
      return [];
    const line = source.getLineAndCharacterOfPosition(statement.getStart()).line + 1;
    return named.elements.filter((e) => !e.isTypeOnly).map((e) => ({ name: (e.propertyName ?? e.name).text, line }));
  });
}

/** What writes, by its name: a route that needs one of these calls a domain operation instead. */
const WRITES =
  /^(insert|update|delete|set|revoke|finish|skip|release|lock|mark|touch|upsert|emit|notify|redeem|reissue|restart|unlist|publish|save|append)/;
/** The api's own state, not the fleet's: signing out of the console, telling replicas to drop a cached PAT. */
const API_OWN_WRITES = new Set(['deleteConsoleSession', 'notify']);

test('routes write nothing themselves: every change goes through a domain operation (reads may use repos)', () => {
  const found = sourceFiles(path.join(root, 'api', 'routes')).flatMap((file) =>
    namedValueImports(file, /\/db\/(repos\/|notify$)/)
      .filter(({ name }) => WRITES.test(name) && !API_OWN_WRITES.has(name))
      .map(({ name, line }) => `${path.relative(root, file)}:${line} imports ${name}`),
  );
  expect(found).toEqual([]);
});

test('api/ never imports activities/ or worker/; only its main.ts hosts the gateway', () => {
  const found = from('api').filter(
    (i) =>
      ['activities', 'worker'].includes(i.layer!) || (i.layer === 'gateway' && i.file !== path.join('api', 'main.ts')),
  );
  expect(show(found)).toEqual([]);
});

test('console/ is a client of the public API only: it loads no server code (its API types are generated)', () => {
  const found = sourceFiles(path.join(root, 'console', 'src')).flatMap(importsOf);
  expect(found.some((i) => i.target === path.join('console', 'src', 'api', 'client'))).toBe(true);
  expect(show(found.filter((i) => ours(i) && i.layer !== 'console'))).toEqual([]);
});

/** The lines of a layer's files that match `pattern`, as `file:line: text`. */
function linesIn(layer: string, pattern: RegExp): string[] {
  return sourceFiles(path.join(root, layer)).flatMap((file) =>
    readFileSync(file, 'utf8')
      .split('\n')
      .flatMap((text, index) =>
        pattern.test(text) ? [`${path.relative(root, file)}:${index + 1}: ${text.trim()}`] : [],
      ),
  );
}

/** Lines that query the database with knex themselves: `db('agents')`, `trx('events')`, `db.raw(…)`. */
const queriesIn = (layer: string) => linesIn(layer, /\b(db|trx|knex|database)(\(\s*['"`]|\.raw\()/);

test('scripts/ and bench/ are product code: they import what they run from the product, never from test/', () => {
  const tools = ['scripts', 'bench'].flatMap((folder) => sourceFiles(path.join(root, folder)).flatMap(importsOf));
  expect(tools.some((i) => i.target === path.join('scripts', 'agents', 'fleet'))).toBe(true); // the check sees them
  expect(show(tools.filter((i) => i.layer === 'test'))).toEqual([]);
});

test('SQL lives in db/: api, gateway, domain and activities call repos, never knex on a table or raw SQL', () => {
  expect(queriesIn('db').length).toBeGreaterThan(0); // the repos' own, so the check sees what it judges
  // The pagination helper adds its keyset clause through the query's own client: the one exception, by design.
  expect(['api', 'gateway', 'domain', 'activities'].flatMap(queriesIn)).toEqual([]);
});
