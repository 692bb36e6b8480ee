import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { projectRoot } from '../../src/paths';

// Every command the README and docs/ tell an operator to type is one the command line has: a
// renamed or misspelt command (`gatehouse settings set` for settings:set) fails here, not in
// someone's shell. The commands are read from src/cli.ts as written, so no build is needed.

const root = projectRoot();

/**
 * The names src/cli.ts registers with `program.command(…)`, following the name to where it is
 * written: a literal, either branch of a `?:`, a parameter of a helper that registers (its
 * callers' arguments), or a `for (const [name, …] of [[…], …])` over literal rows.
 */
function registeredCommands(source: string): string[] {
  const tree = ts.createSourceFile('cli.ts', source, ts.ScriptTarget.Latest, true);
  const calls: ts.CallExpression[] = [];
  const collect = (n: ts.Node) => {
    if (ts.isCallExpression(n)) calls.push(n);
    ts.forEachChild(n, collect);
  };
  collect(tree);

  const unwrap = (e: ts.Expression): ts.Expression => (ts.isAsExpression(e) || ts.isParenthesizedExpression(e) || ts.isSatisfiesExpression(e) ? unwrap(e.expression) : e);
  const namesOf = (expr: ts.Expression): string[] => {
    const e = unwrap(expr);
    if (ts.isStringLiteral(e) || ts.isNoSubstitutionTemplateLiteral(e)) return [e.text];
    if (ts.isConditionalExpression(e)) return [...namesOf(e.whenTrue), ...namesOf(e.whenFalse)];
    if (ts.isIdentifier(e)) return namesOfIdentifier(e);
    throw new Error(`src/cli.ts:${tree.getLineAndCharacterOfPosition(e.getStart()).line + 1} registers a command this test cannot name: ${e.getText()}`);
  };
  const namesOfIdentifier = (id: ts.Identifier): string[] => {
    for (let p: ts.Node | undefined = id.parent; p; p = p.parent) {
      // a parameter of the function around the use: what each call of that function passes
      if (ts.isFunctionLike(p)) {
        const index = p.parameters.findIndex((param) => ts.isIdentifier(param.name) && param.name.text === id.text);
        if (index < 0) continue;
        const holder = p.parent;
        if (!ts.isVariableDeclaration(holder) || !ts.isIdentifier(holder.name)) break;
        const helper = holder.name.text;
        return calls.filter((c) => ts.isIdentifier(c.expression) && c.expression.text === helper).flatMap((c) => namesOf(c.arguments[index]!));
      }
      // the variable of a for…of over rows written out: the name's place in each row
      if (ts.isForOfStatement(p) && ts.isVariableDeclarationList(p.initializer)) {
        const bound = p.initializer.declarations[0]!.name;
        const rows = unwrap(p.expression);
        if (!ts.isArrayLiteralExpression(rows)) break;
        if (ts.isIdentifier(bound) && bound.text === id.text) return rows.elements.flatMap(namesOf);
        if (ts.isArrayBindingPattern(bound)) {
          const index = bound.elements.findIndex((b) => ts.isBindingElement(b) && ts.isIdentifier(b.name) && b.name.text === id.text);
          if (index < 0) continue;
          return rows.elements.flatMap((row) => {
            const r = unwrap(row);
            if (!ts.isArrayLiteralExpression(r)) throw new Error(`src/cli.ts: a row of commands this test cannot read: ${row.getText()}`);
            return namesOf(r.elements[index]!);
          });
        }
      }
    }
    throw new Error(`src/cli.ts:${tree.getLineAndCharacterOfPosition(id.getStart()).line + 1} registers a command named by ${id.text}, which this test cannot follow`);
  };

  return calls.filter((c) => c.expression.getText() === 'program.command').flatMap((c) => namesOf(c.arguments[0]!))
    // a helper's own `program.command(name)` is named by its callers, counted above
    .filter((name, i, all) => all.indexOf(name) === i);
}

/**
 * Where a page tells someone to run the command line: `npx gatehouse X`, `` `gatehouse X` ``, a
 * line of a shell block starting `gatehouse X` (or `$ gatehouse X`), after `&&` or `;`, and
 * `bin/gatehouse.js X`; never the word in prose, an image name (`docker run … gatehouse`) or a
 * database's. Flags (`--help`) and comments are not commands.
 */
function documentedCommands(text: string): { line: number; command: string }[] {
  const out: { line: number; command: string }[] = [];
  text.split('\n').forEach((line, i) => {
    for (const m of line.matchAll(/(?:\bnpx\s+|`|^\s*(?:\$\s+)?|&&\s*|;\s*|\bbin\/)gatehouse(?:\.js)?[ \t]+([^\s`'"();&|]+)/g)) {
      const command = m[1]!.replace(/[.,;:]+$/, '');
      if (!/^[-#]/.test(command)) out.push({ line: i + 1, command });
    }
  });
  return out;
}

/** Whether `command` names a registered one: itself, `help` (the command line's own), or `prefix:*` when some command has that prefix. */
const known = (commands: string[], command: string) => commands.includes(command) || command === 'help'
  || (command.endsWith(':*') && commands.some((c) => c.startsWith(command.slice(0, -1))));

const commands = registeredCommands(fs.readFileSync(path.join(root, 'src/cli.ts'), 'utf8'));
const pages = ['README.md', ...fs.readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

it('reads every command src/cli.ts registers, those a helper or a loop registers too', () => {
  expect(commands.length).toBeGreaterThan(70);
  expect(commands).toEqual(expect.arrayContaining(['migrate', 'init', 'audit', 'settings:set', 'webhooks:remove', 'webhooks:enable', 'webhooks:disable', 'roles:assign', 'roles:unassign']));
  expect(commands.every((c) => /^[a-z]+(:[a-z-]+)?$/.test(c))).toBe(true);
});

it('every `gatehouse <command>` of the README and docs/ is a command the command line has', () => {
  const written = pages.flatMap((page) => documentedCommands(fs.readFileSync(path.join(root, page), 'utf8')).map((d) => ({ ...d, page })));
  expect(written.length).toBeGreaterThan(50);
  expect(written.filter((d) => !known(commands, d.command)).map((d) => `${d.page}:${d.line} gatehouse ${d.command}`)).toEqual([]);
});

it('finds a command that is none, and nothing in prose or a shell line about something else (the check itself)', () => {
  const page = [
    'Set it with `gatehouse settings set demo second_factor optional` or `npx gatehouse settings:set`.',
    '```sh',
    'npx gatehouse users:creat ada@example.com && gatehouse users:show ada@example.com',
    '$ gatehouse --help',
    'docker run -p 3000:3000 -v gatehouse-data:/data gatehouse   # the embedded default',
    'node bin/gatehouse.js clients:list; gatehouse roles:*',
    '```',
    'Gatehouse signs people in; the gatehouse service answers, `npx gatehouse help users:show` explains.',
  ].join('\n');
  const unknown = documentedCommands(page).filter((d) => !known(commands, d.command));
  expect(unknown).toEqual([{ line: 1, command: 'settings' }, { line: 3, command: 'users:creat' }]);
  expect(documentedCommands(page)).toHaveLength(7);
});

it('follows a command named through a helper, a conditional and a loop (the check itself)', () => {
  expect(registeredCommands(`
    program.command('migrate');
    const endpointCommand = (name: string, d: string) => program.command(name).description(d);
    endpointCommand('webhooks:remove', 'x');
    for (const enabled of [true, false]) endpointCommand(enabled ? 'webhooks:enable' : 'webhooks:disable', 'y');
    for (const [command, give] of [['roles:assign', true], ['roles:unassign', false]] as const) program.command(command);
  `).sort()).toEqual(['migrate', 'roles:assign', 'roles:unassign', 'webhooks:disable', 'webhooks:enable', 'webhooks:remove']);
});
