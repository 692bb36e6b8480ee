import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { MAIL_FIELDS } from '../../src/domain/mail';

// The shape of the code (README: Layout): the domain at the bottom, importing nothing of the
// layers above it; storage and the queue beside one another above it; the use cases above them;
// the API, the pages and the jobs (the workers' adapter), side by side, above the use cases; the
// entry points on top. Nothing imports upward and no module reaches itself through its
// imports. Type-only imports count: a circle of types is a circle of concepts.

const ROOT = path.join(__dirname, '../..');

/** Every module under the scanned folders, with the modules of this repository it imports. */
function importGraph(folders: string[]): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  const walk = (dir: string): string[] => fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? walk(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []));
  for (const file of folders.flatMap(walk)) {
    const { importedFiles } = ts.preProcessFile(fs.readFileSync(path.join(ROOT, file), 'utf8'), true, true);
    graph.set(file, importedFiles.map((i) => i.fileName).filter((name) => name.startsWith('.')).map((name) => {
      const target = path.join(path.dirname(file), name);
      return [`${target}.ts`, path.join(target, 'index.ts')].find((f) => fs.existsSync(path.join(ROOT, f))) ?? target;
    }));
  }
  return graph;
}

/** The strongly connected components with more than one module (Tarjan): each is an import circle. */
function circles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (stack.includes(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      component.push(w);
    } while (w !== v);
    if (component.length > 1) found.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

const graph = importGraph(['src', 'workers', 'migrations']);
const edges = [...graph].flatMap(([from, targets]) => targets.map((to) => ({ from, to })));
/** The adapters the outside world reaches (the API, the browser pages, the OpenID provider, the operators' console), and the wiring and entry points above them. */
const ADAPTERS = ['src/http', 'src/web', 'src/oidc', 'src/console'];
const WIRING = ['src/app', 'src/runtime', 'src/server', 'src/cli', 'src/dashboard', 'workers'];
const under = (folder: string) => (file: string) => file.startsWith(`${folder}/`) || file === `${folder}.ts`;

it('has no import circle', () => {
  expect(graph.size).toBeGreaterThan(100);
  expect(circles(graph)).toEqual([]);
});

it('finds a circle when there is one (the check itself)', () => {
  expect(circles(new Map([['a', ['b']], ['b', ['c']], ['c', ['a']], ['d', ['a']]]))).toEqual([['a', 'b', 'c']]);
});

it.each([
  ['src/domain', 'only the domain', (to: string) => under('src/domain')(to)],
  ...['src/db', 'src/queue'].map((layer) => [
    layer, 'nothing of the use cases, the jobs, the API, the pages, the wiring or the entry points',
    (to: string) => ![...ADAPTERS, 'src/usecases', 'src/jobs', ...WIRING].some((upper) => under(upper)(to)),
  ] as const),
  // the workers' adapter: a job names its outbox row and runs a use case, reaching storage by its contract only
  ['src/jobs', 'nothing of storage\'s engine (src/db), the API, the pages, the OpenID provider, the console, the wiring or the entry points',
    (to: string) => !['src/db', ...ADAPTERS, ...WIRING].some((upper) => under(upper)(to))],
  ['src/usecases', 'nothing of the API, the pages, the wiring or the entry points', (to: string) => ![...ADAPTERS, ...WIRING].some((upper) => under(upper)(to))],
  ['src/http', 'nothing of the pages, the OpenID provider, the wiring or the entry points', (to: string) => !['src/web', 'src/oidc', ...WIRING].some((upper) => under(upper)(to))],
  ['src/web', 'nothing of the API, the wiring or the entry points (pages call the use cases, never a handler)', (to: string) => !['src/http', 'src/oidc', ...WIRING].some((upper) => under(upper)(to))],
  // the OpenID provider is an adapter over the use cases, drawing its pages as the hosted pages do
  ['src/oidc', 'nothing of the API, the wiring or the entry points', (to: string) => !['src/http', ...WIRING].some((upper) => under(upper)(to))],
  // the console draws its pages as the hosted pages do, over the use cases
  ['src/console', 'nothing of the API, the OpenID provider, the wiring or the entry points', (to: string) => !['src/http', 'src/oidc', ...WIRING].some((upper) => under(upper)(to))],
  ['migrations', 'only migrations (they are frozen)', under('migrations')],
] as const)('%s imports %s', (layer, _what, allowed) => {
  expect(edges.filter((e) => under(layer)(e.from) && !allowed(e.to))).toEqual([]);
});

it('no API handler imports another (what two share lives beside them in src/http)', () => {
  expect(edges.filter((e) => under('src/http/handlers')(e.from) && under('src/http/handlers')(e.to))).toEqual([]);
});

it('only the entry points import the wiring (runtime, app)', () => {
  const entries = ['src/server.ts', 'src/cli.ts', 'src/dashboard.ts', 'workers/main.ts'];
  const wiring = ['src/runtime.ts', 'src/app.ts'];
  expect(edges.filter((e) => wiring.includes(e.to) && !entries.includes(e.from))).toEqual([]);
  expect(fs.readdirSync(path.join(ROOT, 'workers'))).toEqual(['main.ts']);
});

// One door into behaviour (docs/architecture.md): the adapters (the API, the pages) and the use
// cases reach storage through its contract only, and only the unit of work opens a transaction.

/** Every module's source under `folders`, parsed. */
const sources = (folders: string[]) => [...graph.keys()].filter((f) => folders.some((d) => under(d)(f))).map((file) => ({
  file, tree: ts.createSourceFile(file, fs.readFileSync(path.join(ROOT, file), 'utf8'), ts.ScriptTarget.Latest, true),
}));

/** The nodes of a tree that `match` picks, with where they are. */
function found(files: { file: string; tree: ts.SourceFile }[], match: (n: ts.Node) => boolean): string[] {
  const out: string[] = [];
  for (const { file, tree } of files) {
    const visit = (n: ts.Node) => {
      if (match(n)) out.push(`${file}:${tree.getLineAndCharacterOfPosition(n.getStart()).line + 1} ${n.getText().slice(0, 60)}`);
      ts.forEachChild(n, visit);
    };
    visit(tree);
  }
  return out;
}

it('the API, the pages and the use cases import nothing of src/db, src/queue or src/jobs (storage by its contract, the outbox through the unit of work)', () => {
  const engines = ['src/db', 'src/queue', 'src/jobs'];
  expect(edges.filter((e) => [...ADAPTERS, 'src/usecases'].some((l) => under(l)(e.from)) && engines.some((l) => under(l)(e.to)))).toEqual([]);
});

it('nothing outside src/db and the wiring touches the engine beneath storage (.sequelize, .models)', () => {
  const outside = sources(['src', 'workers']).filter(({ file }) => !under('src/db')(file) && !['src/app.ts', 'src/runtime.ts'].includes(file));
  expect(found(outside, (n) => ts.isPropertyAccessExpression(n) && ['sequelize', 'models'].includes(n.name.text))).toEqual([]);
});

it('the domain and the use cases import no Express, no HTTP module and no page', () => {
  const layers = sources(['src/domain', 'src/usecases']);
  const imports = layers.flatMap(({ file, tree }) => tree.statements.filter(ts.isImportDeclaration)
    .map((i) => ({ file, from: (i.moduleSpecifier as ts.StringLiteral).text })));
  expect(imports.filter((i) => /^(express|supertest|body-parser)$/.test(i.from) || /\/(http|web)\//.test(i.from))).toEqual([]);
});

it('only the unit of work opens a transaction (src/db implements it, and the store methods that run their own work)', () => {
  const code = sources(['src', 'workers']).filter(({ file }) => !under('src/db')(file) && file !== 'src/usecases/unit-of-work.ts');
  expect(found(code, (n) => ts.isCallExpression(n) && ts.isPropertyAccessExpression(n.expression) && n.expression.name.text === 'transaction')).toEqual([]);
});

it('finds a transaction opened elsewhere (the check itself)', () => {
  const tree = ts.createSourceFile('x.ts', 'async function f(db) { await db.transaction(async (tx) => tx); }', ts.ScriptTarget.Latest, true);
  expect(found([{ file: 'x.ts', tree }], (n) => ts.isCallExpression(n) && ts.isPropertyAccessExpression(n.expression) && n.expression.name.text === 'transaction')).toHaveLength(1);
});

/**
 * A call that writes storage: a store method of `db` (or `services.db`, `deps.db`, …) whose name
 * says it changes something. The pages and the OpenID provider read storage to show and to check;
 * every change they ask for is a use case's (src/usecases/oidc/ for the provider's adapter).
 */
const WRITE = /^(save|insert|update|replace|delete|destroy|consume|revoke|rotate|signIn|set|touch|append|countFailureAlone|sweep|prune|purge|complete|reserve|create|remove|write|add|rename|mark|take|use|drain|record)/;
const writesStorage = (n: ts.Node) => {
  if (!ts.isCallExpression(n) || !ts.isPropertyAccessExpression(n.expression) || !WRITE.test(n.expression.name.text)) return false;
  const store = n.expression.expression;
  return ts.isPropertyAccessExpression(store) && /(^|\.)db\.[a-zA-Z]+(\.[a-zA-Z]+)?$/.test(store.getText());
};

it('the command line reaches the queue only through the unit of work its use cases run in (runtime.ts wires it)', () => {
  expect(edges.filter((e) => e.from === 'src/cli.ts' && e.to.startsWith('src/queue/'))).toEqual([]);
});

it('the pages, the console and the OpenID provider write no storage: every change is a use case\'s', () => {
  expect(found(sources(['src/web', 'src/oidc', 'src/console']), writesStorage)).toEqual([]);
});

it('the jobs write no storage but their own row\'s end (done, or an attempt failed): every change is a use case\'s', () => {
  const acknowledges = (n: ts.Node) => ts.isCallExpression(n) && ts.isPropertyAccessExpression(n.expression)
    && /(^|\.)db\.outbox\.(completeAlone|recordFailureAlone)$/.test(n.expression.getText());
  expect(found(sources(['src/jobs']), (n) => writesStorage(n) && !acknowledges(n))).toEqual([]);
});

/**
 * A write that makes a record's next version: the record store's insert, update, replace, touch,
 * setTime or signInAlone. Only src/usecases/records makes one (versions.ts: insertRecord,
 * reviseRecord, markTime, touchRecord, the sign-in's write), so every version is recorded with
 * its event and snapshot, and none is written for a change nobody can see.
 */
const writesVersion = (n: ts.Node) => ts.isCallExpression(n) && ts.isPropertyAccessExpression(n.expression)
  && /^(insert|update|replace|touch|setTime|signInAlone)$/.test(n.expression.name.text) && /(^|\.)db\.records$/.test(n.expression.expression.getText());

it('a record\'s version is written in src/usecases/records only', () => {
  const code = sources(['src', 'workers']).filter(({ file }) => !under('src/db')(file) && !under('src/usecases/records')(file));
  expect(found(code, writesVersion)).toEqual([]);
  const tree = ts.createSourceFile('x.ts', 'async function f(deps) { await deps.db.records.update(r, {}, now, tx); await db.records.setDisabled(1, 2, null, tx); await db.records.find(1); }', ts.ScriptTarget.Latest, true);
  expect(found([{ file: 'x.ts', tree }], writesVersion)).toHaveLength(1);
});

/** An assignment to a member of a response's `locals` (`res.locals.x = …`, `Object.assign(res.locals, …)`). */
const writesLocals = (n: ts.Node) => (ts.isBinaryExpression(n) && n.operatorToken.kind === ts.SyntaxKind.EqualsToken
  && ts.isPropertyAccessExpression(n.left) && /\.locals$/.test(n.left.expression.getText()))
  || (ts.isCallExpression(n) && n.expression.getText() === 'Object.assign' && n.arguments.length > 0 && /\.locals\b/.test(n.arguments[0].getText()));

it('the OpenID provider says why it writes in one place (ProviderRequest), never in a response\'s locals', () => {
  expect(found(sources(['src/oidc']), writesLocals)).toEqual([]);
  const tree = ts.createSourceFile('x.ts', 'function f(ctx) { (ctx.res as any).locals.missed = true; Object.assign(res.locals, {}); const id = res.locals.requestId; }', ts.ScriptTarget.Latest, true);
  expect(found([{ file: 'x.ts', tree }], writesLocals)).toHaveLength(2);
});

it('finds a storage write in an adapter (the check itself)', () => {
  const tree = ts.createSourceFile('x.ts', 'async function f(deps) { await deps.db.oidcState.save(1, o); await db.credentials.consume(1); await db.records.find(1); }', ts.ScriptTarget.Latest, true);
  expect(found([{ file: 'x.ts', tree }], writesStorage)).toHaveLength(2);
});

/**
 * The domain and every use-case folder speak no wire: no parameter bag (params.ts), no API error
 * (errors.ts). A refusal names the command's field; each endpoint names it its own way
 * (src/errors.ts).
 */
const WIRE_FREE = ['src/domain', 'src/usecases', ...fs.readdirSync(path.join(ROOT, 'src/usecases'), { withFileTypes: true })
  .filter((e) => e.isDirectory()).map((e) => `src/usecases/${e.name}`)];

it.each(WIRE_FREE)('%s speaks no wire (no parameter bag, no API error)', (folder) => {
  expect(edges.filter((e) => under(folder)(e.from) && ['src/http/params.ts', 'src/errors.ts'].includes(e.to))).toEqual([]);
  expect(fs.readdirSync(path.join(ROOT, folder)).length).toBeGreaterThan(0);
});

/**
 * A store method that writes takes the caller's transaction (a required Tx), so that a change and
 * its events commit together or not at all; the few that commit on their own (a sweep, a worker's
 * mark, a hot path done in one call with its event) say so in their names: …Alone, and take none.
 */
const READ = /^(find|list|count|search|check|latest|first|published|summary|totp$|activity$|at$|deletedEntityId$|entityId$|stragglers$|backlog$|forEntit|byIdentifier$|byCredential$|liveOfRecord$|ownerOfFamily$|ping$|transaction$|erasedAt$|erasedByUuid$|recordChanges$|history$|progress$)/;

function storeMethods(files: { file: string; tree: ts.SourceFile }[]) {
  const out: { where: string; name: string; tx: 'required' | 'optional' | 'none' }[] = [];
  for (const { file, tree } of files) {
    const visit = (n: ts.Node) => {
      if (ts.isMethodSignature(n) && ts.isIdentifier(n.name)) {
        const txs = n.parameters.filter((p) => p.type && /^Tx(\s*\|\s*undefined)?$/.test(p.type.getText()));
        const tx = txs.length === 0 ? 'none' : txs.every((p) => !p.questionToken && !/undefined/.test(p.type!.getText())) ? 'required' : 'optional';
        out.push({ where: `${file}:${tree.getLineAndCharacterOfPosition(n.getStart()).line + 1}`, name: n.name.text, tx });
      }
      ts.forEachChild(n, visit);
    };
    visit(tree);
  }
  return out;
}

const misnamedWrites = (methods: ReturnType<typeof storeMethods>) => methods.filter((m) => !READ.test(m.name))
  .filter((m) => (m.name.endsWith('Alone') ? m.tx !== 'none' : m.tx !== 'required')).map((m) => `${m.where} ${m.name} (${m.tx} transaction)`);

it('a store method that writes takes a required transaction, or commits alone and says so in its name', () => {
  const contract = sources(['src/domain/storage']);
  expect(storeMethods(contract).length).toBeGreaterThan(50);
  expect(misnamedWrites(storeMethods(contract))).toEqual([]);
});

it('finds a write with an optional transaction, and one that commits alone unnamed (the check itself)', () => {
  const tree = ts.createSourceFile('x.ts', `interface S {
    save(a: number, tx?: Tx): Promise<void>; sweep(before: Date): Promise<number>; sweepAlone(before: Date): Promise<number>;
    put(a: number, tx: Tx | undefined): Promise<void>; insert(a: number, tx: Tx): Promise<void>; find(a: number, tx?: Tx): Promise<void>;
  }`, ts.ScriptTarget.Latest, true);
  expect(misnamedWrites(storeMethods([{ file: 'x.ts', tree }])).map((m) => m.split(' ')[1])).toEqual(['save', 'sweep', 'put']);
});

/**
 * A use case takes the services it uses, never the whole bag where it uses less: each parameter
 * that carries services (CallContext<K>, LoginCall<K>, Pick<Services, K>, or a type made of
 * services only, as RecordDeps) names K, and the type checker finds each name of K used in its
 * body, directly (`ctx.services.db`, a destructuring) or by what it passes the context to (the
 * callee's parameter names what it needs).
 */
const CARRIERS = /^(CallContext|LoginCall)$/;

/** The services a parameter declares, and whether they sit under `.services` (a call's context) or are the parameter itself (Pick<Services, K>). */
function declaredServices(p: ts.ParameterDeclaration): { keys: string[]; nested: boolean } | 'bare' | undefined {
  if (!p.type) return undefined;
  const refs = ts.isIntersectionTypeNode(p.type) ? p.type.types : [p.type];
  for (const r of refs) {
    if (!ts.isTypeReferenceNode(r) || !ts.isIdentifier(r.typeName)) continue;
    const name = r.typeName.text;
    if ((CARRIERS.test(name) || name === 'Services') && !r.typeArguments) return 'bare';
    const keys = (n: ts.TypeNode) => (n.kind === ts.SyntaxKind.NeverKeyword ? [] : n.getText().split('|').map((k) => k.trim().replace(/^'|'$/g, '')));
    if (CARRIERS.test(name)) return { keys: keys(r.typeArguments![0]), nested: true };
    if (name === 'Pick' && r.typeArguments![0].getText() === 'Services') return { keys: keys(r.typeArguments![1]), nested: false };
  }
  return undefined;
}

/** The services a parameter's uses need, by the type checker; undefined when it escapes where they cannot be followed. */
function usedServices(checker: ts.TypeChecker, fn: ts.FunctionLikeDeclaration, p: ts.ParameterDeclaration, nested: boolean): Set<string> | undefined {
  // a destructured parameter (`{ db, clock }: Pick<Services, 'db' | 'clock'>`) uses what it binds
  if (ts.isObjectBindingPattern(p.name)) return new Set(p.name.elements.map((el) => (el.propertyName ?? el.name).getText()));
  const symbol = checker.getSymbolAtLocation(p.name);
  const used = new Set<string>();
  let escapes = false;
  const namesOf = (t: ts.Type) => checker.getPropertiesOfType(checker.getApparentType(t)).map((s) => s.name);
  /** What the callee wants at the position of `arg`: its parameter's services (nested) or the parameter itself. */
  const wanted = (arg: ts.Expression, asContext: boolean) => {
    const call = arg.parent;
    if (!ts.isCallExpression(call)) return false;
    const params = checker.getResolvedSignature(call)?.getParameters() ?? [];
    const i = call.arguments.indexOf(arg);
    const param = params[Math.min(i, params.length - 1)];
    if (!param || i < 0) return false;
    const type = checker.getTypeOfSymbolAtLocation(param, call);
    if (!asContext) return namesOf(type).forEach((n) => used.add(n)), true;
    const services = checker.getPropertyOfType(checker.getApparentType(type), 'services');
    if (services) namesOf(checker.getTypeOfSymbolAtLocation(services, call)).forEach((n) => used.add(n));
    return true;
  };
  /** The uses of an expression that is the services (ctx.services, or the Pick parameter itself). */
  const servicesUse = (e: ts.Expression) => {
    const parent = e.parent;
    if (ts.isPropertyAccessExpression(parent) && parent.expression === e) used.add(parent.name.text);
    else if (ts.isVariableDeclaration(parent) && ts.isObjectBindingPattern(parent.name)) {
      for (const el of parent.name.elements) used.add((el.propertyName ?? el.name).getText());
    } else if (!wanted(e, false)) escapes = true;
  };
  const visit = (n: ts.Node) => {
    if (ts.isIdentifier(n) && n !== p.name && checker.getSymbolAtLocation(n) === symbol) {
      const parent = n.parent;
      if (!nested) servicesUse(n);
      else if (ts.isPropertyAccessExpression(parent) && parent.expression === n) {
        if (parent.name.text === 'services') servicesUse(parent);
      } else if (ts.isVariableDeclaration(parent) && ts.isObjectBindingPattern(parent.name)) {
        // `const { request } = ctx`: what it binds besides the services is no use of them
        if (parent.name.elements.some((el) => (el.propertyName ?? el.name).getText() === 'services')) escapes = true;
      } else if (ts.isSpreadAssignment(parent) && ts.isObjectLiteralExpression(parent.parent)) {
        if (!wanted(parent.parent, true)) escapes = true;
      } else if (!wanted(n, true)) escapes = true;
    }
    ts.forEachChild(n, visit);
  };
  if (fn.body) visit(fn.body);
  return escapes ? undefined : used;
}

/** Each function of `files` whose parameter takes the whole bag, or names services it does not use. */
function servicesReport(program: ts.Program, files: string[]): string[] {
  const checker = program.getTypeChecker();
  const out: string[] = [];
  // the names of the services (src/usecases/services.ts): a parameter of a type made of them only (RecordDeps, Pick<AdminDeps, …>) carries services too
  const bag = program.getSourceFile(path.join(ROOT, 'src/usecases/services.ts'))!.statements
    .find((st): st is ts.InterfaceDeclaration => ts.isInterfaceDeclaration(st) && st.name.text === 'Services')!;
  const SERVICES = new Set(bag.members.map((m) => m.name!.getText()));
  const named = (p: ts.ParameterDeclaration) => {
    const names = p.type ? checker.getPropertiesOfType(checker.getTypeAtLocation(p.type)).map((x) => x.name) : [];
    return names.length > 0 && names.every((x) => SERVICES.has(x)) ? { keys: names, nested: false } : undefined;
  };
  for (const file of files) {
    const sf = program.getSourceFile(file)!;
    const visit = (n: ts.Node) => {
      if ((ts.isFunctionDeclaration(n) || ts.isArrowFunction(n) || ts.isFunctionExpression(n) || ts.isMethodDeclaration(n)) && n.body) {
        for (const p of n.parameters) {
          const declared = declaredServices(p) ?? named(p);
          const where = `${path.relative(ROOT, file)}:${sf.getLineAndCharacterOfPosition(p.getStart()).line + 1} ${p.name.getText()}`;
          if (declared === 'bare') out.push(`${where} takes the whole bag`);
          if (!declared || declared === 'bare') continue;
          const used = usedServices(checker, n, p, declared.nested);
          // a context kept in a variable, returned or put in an object: what it is used for cannot be followed
          if (!used) out.push(`${where} hands its services where the check cannot follow them`);
          const unused = used && declared.keys.filter((k) => !used.has(k));
          if (unused?.length) out.push(`${where} names ${unused.join(', ')} it does not use`);
        }
      }
      ts.forEachChild(n, visit);
    };
    visit(sf);
  }
  return out;
}

const compilerOptions = (() => {
  const parsed = ts.getParsedCommandLineOfConfigFile(path.join(ROOT, 'tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined });
  return parsed!.options;
})();

it('no use case takes the whole services bag, nor names a service it does not use', () => {
  const files = [...graph.keys()].filter(under('src/usecases')).map((f) => path.join(ROOT, f));
  const program = ts.createProgram(files, compilerOptions);
  expect(files.length).toBeGreaterThan(60);
  expect(servicesReport(program, files)).toEqual([]);
}, 60_000);

it('finds a whole bag, a service named and not used, and follows a context passed on (the check itself)', () => {
  const virtual = path.join(ROOT, 'src/usecases/__check__.ts');
  const text = `import type { CallContext, Services } from './services';
    const clockOf = (ctx: CallContext<'clock'>) => ctx.services.clock.now();
    export const whole = (services: Services) => services.db;
    export const more = (ctx: CallContext<'clock' | 'db' | 'work'>) => { const { work } = ctx.services; return [clockOf(ctx), work]; };
    export const exact = (ctx: CallContext<'clock' | 'db'>) => [clockOf({ ...ctx }), ctx.services.db];
    type Deps = Pick<Services, 'db' | 'work'>;
    export const named = (deps: Deps) => deps.db;
    export const kept = (ctx: CallContext<'db'>) => { const held = ctx; return held; };`;
  const host = ts.createCompilerHost(compilerOptions);
  const read = host.getSourceFile.bind(host);
  host.getSourceFile = (name, ...rest) => (name === virtual ? ts.createSourceFile(name, text, ts.ScriptTarget.Latest, true) : read(name, ...rest));
  const exists = host.fileExists.bind(host);
  host.fileExists = (name) => name === virtual || exists(name);
  const program = ts.createProgram([virtual], compilerOptions, host);
  expect(servicesReport(program, [virtual]).map((l) => l.replace(/^\S+:\d+ /, ''))).toEqual([
    'services takes the whole bag', 'ctx names db it does not use', 'deps names work it does not use',
    'ctx hands its services where the check cannot follow them',
  ]);
});

/**
 * A rate-limit key written out where a budget is drawn on: a string or template literal among the
 * arguments of a limiter's `take` or `count`, or of a taken attempt's `settle`, followed through
 * the constants in scope of the call. Every key is BUDGET_KEYS' (src/domain/budget-keys.ts), so a
 * budget has one spelling and one line that says what it counts. A call's own arguments are not
 * followed: `BUDGET_KEYS.loginAccount(app.id, \`id:${id}\`)` builds a key from a subject.
 */
const LIMITER_CALL = /(^|\.)(rateLimiter|limiter)\.(take|count)$|\.settle$/i;

/** The nearest block, function or file around a node: where a `const` or `let` in it is seen. */
const scopeOf = (n: ts.Node): ts.Node => {
  let p = n.parent;
  while (!ts.isBlock(p) && !ts.isSourceFile(p) && !ts.isFunctionLike(p) && !ts.isCaseBlock(p) && !ts.isForOfStatement(p) && !ts.isForStatement(p)) p = p.parent;
  return p;
};

function literalKeys(files: { file: string; tree: ts.SourceFile }[]): { calls: number; keys: string[] } {
  let calls = 0;
  const keys: string[] = [];
  for (const { file, tree } of files) {
    const declarations: ts.VariableDeclaration[] = [];
    const collect = (n: ts.Node) => {
      if (ts.isVariableDeclaration(n) && ts.isIdentifier(n.name) && n.initializer) declarations.push(n);
      ts.forEachChild(n, collect);
    };
    collect(tree);
    // the declaration a name means where it is used: the innermost scope around the use declaring it
    const declared = (use: ts.Identifier) => declarations
      .filter((d) => (d.name as ts.Identifier).text === use.text && scopeOf(d).pos <= use.pos && use.end <= scopeOf(d).end && d !== use.parent)
      .sort((a, b) => (scopeOf(b).pos - scopeOf(a).pos) || (scopeOf(a).end - scopeOf(b).end))[0];
    const seen = new Set<ts.Node>();
    const walk = (n: ts.Node) => {
      if (seen.has(n)) return;
      seen.add(n);
      if (ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n) || ts.isTemplateExpression(n)) {
        keys.push(`${file}:${tree.getLineAndCharacterOfPosition(n.getStart()).line + 1} ${n.getText().slice(0, 60)}`);
      } else if (ts.isIdentifier(n)) {
        const d = declared(n);
        if (d) walk(d.initializer!);
      } else if (ts.isCallExpression(n)) {
        walk(n.expression);
      } else if (ts.isPropertyAccessExpression(n) || ts.isElementAccessExpression(n)) {
        walk(n.expression);
      } else if (ts.isPropertyAssignment(n)) {
        walk(n.initializer);
      } else if (!ts.isFunctionLike(n)) {
        ts.forEachChild(n, walk);
      }
    };
    const visit = (n: ts.Node) => {
      if (ts.isCallExpression(n) && ts.isPropertyAccessExpression(n.expression) && LIMITER_CALL.test(n.expression.getText())) {
        calls += 1;
        n.arguments.forEach(walk);
      }
      ts.forEachChild(n, visit);
    };
    visit(tree);
  }
  return { calls, keys };
}

it('every rate-limit key is named in src/domain/budget-keys.ts: none is written out where a budget is taken or counted', () => {
  const { calls, keys } = literalKeys(sources(['src', 'workers']).filter(({ file }) => file !== 'src/domain/budget-keys.ts'));
  // the check sees the calls it guards (a rename of the limiter would silently empty it)
  expect(calls).toBeGreaterThan(15);
  expect(keys).toEqual([]);
});

it('finds a key written out, directly or through a constant, and not one BUDGET_KEYS builds (the check itself)', () => {
  const tree = ts.createSourceFile('x.ts', `async function f(ctx, deps, rateLimiter, app, who) {
    await deps.rateLimiter.take([[\`scim:scan:\${app.id}:\${who}\`, { max: 30, windowSeconds: 60 }]]);
    const key = 'login:address:' + app.id;
    await ctx.services.rateLimiter.count([key]);
    const budgets = [[\`x:y:\${app.id}:all\`, limit]];
    const taken = await rateLimiter.take(budgets);
    await taken.settle({ giveBack: [\`x:y:\${app.id}:all\`] });
    const fine = BUDGET_KEYS.loginAccount(app.id, \`id:\${who}\`);
    const keys = busyKeys(app.id, 'x');
    await rateLimiter.take([[fine, limits['address']], [keys.address, { max: 1, windowSeconds: 60 }]]);
    await rateLimiter.count([BUDGET_KEYS.deviceApplication(app.id)]);
  }
  function g(rateLimiter, app) { const key = BUDGET_KEYS.busyApplication(app.id); return rateLimiter.count([key]); }
  function h() { const key = 'not:a:budget'; return key; }`, ts.ScriptTarget.Latest, true);
  const { calls, keys } = literalKeys([{ file: 'x.ts', tree }]);
  expect(calls).toBe(7);
  expect(keys.map((k) => k.replace(/^x\.ts:/, ''))).toEqual([
    '2 `scim:scan:${app.id}:${who}`', "3 'login:address:'", '5 `x:y:${app.id}:all`', '7 `x:y:${app.id}:all`',
  ]);
});

it('what emails say besides the greeting is named once (MAIL_FIELDS): the render\'s values extend MailFields, declaring none of them again', () => {
  const [{ tree }] = sources(['src/jobs/mail-templates']);
  const values = tree.statements.find((s): s is ts.InterfaceDeclaration => ts.isInterfaceDeclaration(s) && s.name.text === 'MailValues');
  expect(values?.heritageClauses?.flatMap((h) => h.types.map((t) => t.getText()))).toEqual(['MailFields']);
  const own = values!.members.map((m) => m.name?.getText());
  expect(own).toContain('appName');
  expect(own.filter((name) => (MAIL_FIELDS as readonly (string | undefined)[]).includes(name))).toEqual([]);
});

/**
 * A job's payload typed as an open record (`Record<string, …>`, `object`, `unknown`, `any`) where
 * use cases write one: every payload type is all-optional members or close to it, and an open
 * record passes for any of them, so a misspelt member would be written to the outbox unnoticed.
 */
const openPayload = (n: ts.Node) => (ts.isParameter(n) || ts.isVariableDeclaration(n) || ts.isPropertySignature(n) || ts.isPropertyDeclaration(n))
  && n.name.getText() === 'payload' && n.type !== undefined && /^(Record<\s*string\b|object$|unknown$|any$|\{\s*\[)/.test(n.type.getText());

it('the use cases write each job\'s payload as its queue\'s type, never as an open record', () => {
  expect(found(sources(['src/usecases']), openPayload)).toEqual([]);
  const tree = ts.createSourceFile('x.ts', `const a = (e, payload: Record<string, unknown>) => e; const b = (payload: OutboxPayloads['webhooks']) => payload;
    function c(payload?: { [k: string]: unknown }) {} const d: { payload: WebhookJobPayload } = x;`, ts.ScriptTarget.Latest, true);
  expect(found([{ file: 'x.ts', tree }], openPayload)).toHaveLength(2);
});
