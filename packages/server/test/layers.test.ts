import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/**
 * Guards two rules of the code's shape (CONTRIBUTING.md, "Where things live"):
 * imports only run down the layers, and no module keeps state of its own
 * (main.ts builds every stateful object and passes it in).
 */

const SRC = fileURLToPath(new URL('../src/', import.meta.url));

/**
 * The layers, lowest first. A module may import its own layer, any lower
 * one, and the shared modules; never a higher layer, nor a sibling of the
 * same rank (storage, outbound and dev know nothing of each other).
 */
const LAYERS: ReadonlyArray<{ layer: string; rank: number; holds: string }> = [
  { layer: 'core', rank: 0, holds: 'pure functions and small objects: ids, envelope, signing headers, retry policy, outcomes, addresses' },
  { layer: 'storage', rank: 1, holds: 'the database port, both engines, migrations, one query per function' },
  { layer: 'outbound', rank: 1, holds: 'sending to receivers: the address-checked agent, the sender, transport error descriptions' },
  { layer: 'dev', rank: 1, holds: "development mode's certificate authority and the trust it adds" },
  { layer: 'metrics', rank: 2, holds: "the Prometheus metrics: what the services and the dispatcher count, the gauges read from the database" },
  { layer: 'services', rank: 3, holds: 'what the API does, independent of HTTP' },
  { layer: 'dispatcher', rank: 4, holds: 'the delivery worker: claim, send, record' },
  { layer: 'maintenance', rank: 5, holds: 'the maintainer: retention, pruning, vacuuming, the schema check' },
  { layer: 'http', rank: 6, holds: 'the HTTP API, the admin socket and the metrics port' },
  { layer: 'main.ts', rank: 7, holds: 'the composition root' },
  { layer: 'cli', rank: 8, holds: 'the herald command' },
];

/** Modules every layer may import; what each of them may import in turn. */
const SHARED: Readonly<Record<string, readonly string[]>> = {
  'errors.ts': [],
  'config.ts': ['core', 'errors.ts'],
};

/** Module-level values that look like state but are constants; each says why. */
const CONSTANTS: ReadonlyArray<{ file: string; name: string; why: string }> = [
  { file: 'dev/dev-trust.ts', name: 'LOOPBACK', why: 'the loopback ranges, filled in as the module loads and only read after' },
  { file: 'cli/index.ts', name: 'program', why: "the herald command's definition: this module is the executable's entry point, run once per process" },
];

/** Constructors whose instances are values, safe at module level. */
const VALUE_CONSTRUCTORS = new Set(['URL', 'RegExp', 'TextEncoder', 'TextDecoder']);
/** Collections a module-level const may hold as long as nothing changes them. */
const COLLECTIONS = new Set(['Map', 'Set', 'WeakMap', 'WeakSet', 'Array']);
const MUTATING_METHODS = new Set(
  ['set', 'add', 'delete', 'clear', 'push', 'pop', 'shift', 'unshift', 'splice', 'sort', 'reverse', 'fill', 'copyWithin'].concat(
    // node:net's BlockList
    ['addAddress', 'addRange', 'addSubnet'],
  ),
);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(path);
    return e.name.endsWith('.ts') ? [path] : [];
  });
}

/** `services/events.ts` → 'services'; `main.ts` → 'main.ts'. */
function layerOf(file: string): string {
  return file.split('/')[0]!;
}

const files = sourceFiles(SRC).map((path) => relative(SRC, path).split(sep).join('/'));
const program = ts.createProgram(
  files.map((f) => join(SRC, f)),
  { noLib: true, noResolve: true, types: [], allowImportingTsExtensions: true, noEmit: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext },
);
const sourceOf = (file: string) => program.getSourceFile(join(SRC, file))!;

/** Every module a file names: imports, re-exports and dynamic import() calls, type-only ones too. */
function importsOf(sf: ts.SourceFile): string[] {
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      found.push(node.moduleSpecifier.text);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0] && ts.isStringLiteralLike(node.arguments[0])) {
      found.push(node.arguments[0].text);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      found.push(node.argument.literal.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

/** Why `from` may not import `to` (both relative to src/), or undefined when it may. */
function layerViolation(from: string, to: string): string | undefined {
  const source = layerOf(from);
  const target = layerOf(to);
  if (source in SHARED) return target in SHARED || SHARED[source]!.includes(target) ? undefined : `${from} is shared by every layer; it may import ${SHARED[source]!.join(', ') || "nothing of Herald's"}`;
  if (target in SHARED || source === target) return undefined;
  const rank = (layer: string) => LAYERS.find((l) => l.layer === layer)?.rank;
  const [a, b] = [rank(source), rank(target)];
  if (a === undefined) return `${from}: src/${source} is in no layer; add it to LAYERS in test/layers.test.ts and to CONTRIBUTING.md`;
  if (b === undefined) return `${to}: src/${target} is in no layer; add it to LAYERS in test/layers.test.ts and to CONTRIBUTING.md`;
  if (b < a) return undefined;
  return b === a ? `${source} and ${target} are side by side and must not know each other` : `${source} (rank ${a}) is below ${target} (rank ${b})`;
}

/** The variable declarations at a file's top level (exported or not). */
function topLevelVariables(sf: ts.SourceFile): Array<{ decl: ts.VariableDeclaration; isConst: boolean }> {
  return sf.statements.filter(ts.isVariableStatement).flatMap((s) => {
    const isConst = (s.declarationList.flags & ts.NodeFlags.Const) !== 0;
    return s.declarationList.declarations.map((decl) => ({ decl, isConst }));
  });
}

/** `x as const`, `(x)`, `x satisfies T`, `<T>x`: the value underneath. */
function unwrap(e: ts.Expression): ts.Expression {
  while (ts.isAsExpression(e) || ts.isParenthesizedExpression(e) || ts.isSatisfiesExpression(e) || ts.isTypeAssertionExpression(e)) e = e.expression;
  return e;
}

/** The `new X(…)` a value is made from, also at the start of a chain of calls (`new X().configure()`). */
function constructed(e: ts.Expression): ts.NewExpression | undefined {
  e = unwrap(e);
  while (ts.isCallExpression(e) && (ts.isPropertyAccessExpression(e.expression) || ts.isElementAccessExpression(e.expression))) e = unwrap(e.expression.expression);
  return ts.isNewExpression(e) ? e : undefined;
}

/** The identifier an access chain starts from: `a` in `a.b[c].d`. */
function rootOf(e: ts.Expression): ts.Expression {
  e = unwrap(e);
  while (ts.isPropertyAccessExpression(e) || ts.isElementAccessExpression(e)) e = unwrap(e.expression);
  return e;
}

const ASSIGNMENTS = new Set([
  ts.SyntaxKind.EqualsToken, ts.SyntaxKind.PlusEqualsToken, ts.SyntaxKind.MinusEqualsToken, ts.SyntaxKind.AsteriskEqualsToken,
  ts.SyntaxKind.SlashEqualsToken, ts.SyntaxKind.BarBarEqualsToken, ts.SyntaxKind.AmpersandAmpersandEqualsToken, ts.SyntaxKind.QuestionQuestionEqualsToken,
]);

/** Where the file changes what `name` holds: `name.x = …`, `name.set(…)`, `delete name[k]`, `name.n++`, `Object.assign(name, …)`. */
function mutationsOf(sf: ts.SourceFile, symbol: ts.Symbol, checker: ts.TypeChecker): ts.Node[] {
  const isIt = (e: ts.Expression) => {
    const root = rootOf(e);
    return ts.isIdentifier(root) && checker.getSymbolAtLocation(root) === symbol;
  };
  const isMember = (e: ts.Expression) => (ts.isPropertyAccessExpression(e) || ts.isElementAccessExpression(e)) && isIt(e);
  const found: ts.Node[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isBinaryExpression(node) && ASSIGNMENTS.has(node.operatorToken.kind) && isMember(unwrap(node.left))) found.push(node);
    else if ((ts.isPrefixUnaryExpression(node) || ts.isPostfixUnaryExpression(node)) && [ts.SyntaxKind.PlusPlusToken, ts.SyntaxKind.MinusMinusToken].includes(node.operator) && isMember(unwrap(node.operand))) found.push(node);
    else if (ts.isDeleteExpression(node) && isMember(unwrap(node.expression))) found.push(node);
    else if (ts.isCallExpression(node)) {
      const callee = unwrap(node.expression);
      if (ts.isPropertyAccessExpression(callee) && MUTATING_METHODS.has(callee.name.text) && isIt(callee.expression)) found.push(node);
      if (ts.isPropertyAccessExpression(callee) && callee.getText(sf) === 'Object.assign' && node.arguments[0] && isIt(node.arguments[0])) found.push(node);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

/** What in a file looks like module-level mutable state, as "file:line name: why" lines. */
function moduleState(file: string, sf: ts.SourceFile, checker: ts.TypeChecker): string[] {
  const line = (n: ts.Node) => sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1;
  const found: string[] = [];
  const report = (name: string, node: ts.Node, why: string) => {
    if (!CONSTANTS.some((c) => c.file === file && c.name === name)) found.push(`${file}:${line(node)} ${name}: ${why}`);
  };
  for (const { decl, isConst } of topLevelVariables(sf)) {
    const names = ts.isIdentifier(decl.name) ? [decl.name] : [];
    if (!isConst) {
      report(decl.name.getText(sf), decl, 'a module-level let or var');
      continue;
    }
    const made = decl.initializer && constructed(decl.initializer);
    if (made) {
      const ctor = made.expression.getText(sf);
      if (!COLLECTIONS.has(ctor) && !VALUE_CONSTRUCTORS.has(ctor)) report(decl.name.getText(sf), decl, `a module-level instance of ${ctor}; build it in main.ts and pass it in`);
    }
    for (const name of names) {
      const symbol = checker.getSymbolAtLocation(name);
      if (!symbol) continue;
      for (const m of mutationsOf(sf, symbol, checker)) report(name.text, m, 'changed here: module-level state; build it in main.ts and pass it in');
    }
  }
  // Static fields are module-level too.
  const visitClasses = (node: ts.Node) => {
    if (ts.isClassLike(node)) {
      for (const member of node.members) {
        if (!ts.isPropertyDeclaration(member) || !member.modifiers?.some((m) => m.kind === ts.SyntaxKind.StaticKeyword)) continue;
        const name = `${node.name?.text ?? '(class)'}.${member.name.getText(sf)}`;
        if (!member.modifiers.some((m) => m.kind === ts.SyntaxKind.ReadonlyKeyword)) report(name, member, 'a static field that is not readonly');
        const init = member.initializer && unwrap(member.initializer);
        if (init && ts.isNewExpression(init) && COLLECTIONS.has(init.expression.getText(sf))) report(name, member, `a static ${init.expression.getText(sf)}`);
      }
    }
    ts.forEachChild(node, visitClasses);
  };
  visitClasses(sf);
  return found;
}

describe('the shape of src/', () => {
  test('imports run only down the layers', () => {
    const violations: string[] = [];
    for (const file of files) {
      for (const specifier of importsOf(sourceOf(file))) {
        if (!specifier.startsWith('.')) continue;
        const target = relative(SRC, resolve(SRC, dirname(file), specifier)).split(sep).join('/');
        // src/ stands alone: nothing of test/, bench/ or scripts/ in it.
        const why = target.startsWith('..') ? 'outside src/' : layerViolation(file, target);
        if (why) violations.push(`${file} imports ${target}: ${why}`);
      }
    }
    assert.deepEqual(violations, []);
  });

  test('no module keeps state of its own', () => {
    const checker = program.getTypeChecker();
    assert.deepEqual(files.flatMap((f) => moduleState(f, sourceOf(f), checker)), []);
  });

  test('every allowed constant names a file that exists, and every folder of src/ is in a layer', () => {
    for (const c of CONSTANTS) assert.ok(files.includes(c.file), `CONSTANTS names ${c.file}, which is gone: remove the entry`);
    const known = new Set([...LAYERS.map((l) => l.layer), ...Object.keys(SHARED)]);
    assert.deepEqual([...new Set(files.map(layerOf))].filter((l) => !known.has(l)), []);
  });

  // The checks themselves, on made-up modules, so a broken check cannot pass silently.
  test('the checks catch what they are meant to', () => {
    assert.match(layerViolation('services/x.ts', 'http/y.ts') ?? '', /below http/);
    assert.match(layerViolation('services/x.ts', 'dispatcher/y.ts') ?? '', /below dispatcher/);
    assert.match(layerViolation('storage/x.ts', 'outbound/y.ts') ?? '', /side by side/);
    assert.match(layerViolation('errors.ts', 'core/y.ts') ?? '', /may import nothing of Herald's/);
    assert.match(layerViolation('config.ts', 'storage/y.ts') ?? '', /may import core, errors\.ts/);
    assert.equal(layerViolation('http/x.ts', 'services/y.ts'), undefined);
    assert.equal(layerViolation('core/x.ts', 'errors.ts'), undefined);
    assert.equal(layerViolation('cli/x.ts', 'main.ts'), undefined);

    const text = [
      "let counter = 0;",
      "const cache = new Map<string, number>();",
      "const frozen = new Set(['a']);",
      "const list: string[] = [];",
      "const table = { a: 1 } as const;",
      "const pool = new Pool();",
      "const agent = new Agent().compose(retry);",
      "const dir = new URL('./x/', import.meta.url);",
      "export function f(k: string) { cache.set(k, 1); list.push(k); frozen.has(k); return table.a + counter; }",
      "export function g() { const cache = new Map(); cache.set('x', 1); return cache; }",
      "export class C { static n = 0; static readonly seen = new Set<string>(); static readonly LIMIT = 3; }",
    ].join('\n');
    const path = join(SRC, 'core', 'probe.ts');
    const host = ts.createCompilerHost({});
    const sf = ts.createSourceFile(path, text, ts.ScriptTarget.ES2022, true);
    const read = host.getSourceFile;
    host.getSourceFile = (name, ...rest) => (resolve(name) === path ? sf : read.call(host, name, ...rest));
    const probe = ts.createProgram([path], { noLib: true, noResolve: true, types: [] }, host);
    const reported = moduleState('core/probe.ts', probe.getSourceFile(path)!, probe.getTypeChecker()).map((r) => r.split(' ')[1]);
    // Not frozen, table, dir, C.LIMIT, nor the cache local to g().
    assert.deepEqual(reported, ['counter:', 'cache:', 'list:', 'pool:', 'agent:', 'C.n:', 'C.seen:']);
  });
});
