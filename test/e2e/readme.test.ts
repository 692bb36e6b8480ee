import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import mysql from 'mysql2/promise';
import { createTestBackend, onMysql, redisUrl, serverUrl, skipUnless, testDatabasePrefix, type TestBackend } from '../helpers/backend';
import { freePort, ROOT } from '../helpers/processes';
import {
  answerPattern, type Background, type Command, LONG_RUNNING, readmeBlocks, Shell, signInOnPage, startInBackground, stopBackground, withValues,
} from '../helpers/readme';
import { startSmtp } from '../helpers/smtp';
import { schemaProblems } from '../helpers/json-schema';
import { openApiDocument } from '../../src/http/openapi';
import { ROUTES } from '../../src/http/routes';

/**
 * The README (and the pages that continue it: GUIDE), run top to bottom as a newcomer (and then an operator) runs it: on a fresh embedded
 * default, and on MariaDB + Redis, where the production block makes its own database and user.
 * What it does not run is listed below with the reason and where else it is covered.
 */

/** The README and the pages whose commands continue it, run in this order as one session. */
const GUIDE = ['README.md', 'docs/api-guide.md', 'docs/cli.md', 'docs/operations.md'];
const guideBlocks = () => GUIDE.flatMap((file) => readmeBlocks(fs.readFileSync(path.join(ROOT, file), 'utf8')).map((b) => ({ ...b, file })));
const OPERATOR_SECTION = 'Running on MySQL and Redis';

interface NotRun { command: RegExp; why: string; wholeBlock?: boolean; onlyEmbedded?: boolean }
const NOT_RUN: NotRun[] = [
  { command: /^npm test\b/, why: 'the command that runs this test' },
  { command: /^DATABASE_URL=\S+ REDIS_URL=/, why: 'CI runs the suite on MariaDB + Redis itself (.ci/run)' },
  { command: /^npm run build\b/, why: '`npm test` builds dist/ before the tests (pretest)' },
  { command: /^npx tsc --noEmit\b/, why: 'CI type-checks before the tests (.ci/run)' },
  { command: /^bash \.ci\/run\b/, why: 'this is what CI runs' },
  { command: /^docker build\b/, why: 'no Docker engine in CI: test/e2e/image.test.ts starts the built dist/ as the image runs it' },
  { command: /^export SECRET_KEY=\$\(openssl rand -hex 32\) DASHBOARD_PASSWORD/, wholeBlock: true, why: 'Docker Compose: test/e2e/processes.test.ts starts the processes it wires, test/unit/compose.test.ts checks the file' },
  { command: /\/oauth\/auth_native -d/, why: 'needs a sign-in at a real provider: test/e2e/social-browser.test.ts does it in Chromium against a local OpenID provider' },
  { command: /\/oauth\/register_native -d/, why: 'needs a sign-in at a real provider (test/e2e/social-browser.test.ts)' },
  { command: /^export DATABASE_URL=mysql:/, wholeBlock: true, onlyEmbedded: true, why: 'needs MariaDB and Redis: the MariaDB + Redis pass runs it' },
  { command: /npm run dashboard$/, onlyEmbedded: true, why: 'needs Redis: the MariaDB + Redis pass runs it' },
];

/** What differs on this machine from the README's: [README text, text run here]. Each must be found. */
type Difference = [string | RegExp, string];

interface Pass {
  embedded: boolean;
  dir: string;
  mainEnv: NodeJS.ProcessEnv;
  operatorEnv: NodeJS.ProcessEnv;
  differences: Difference[];
  /** Differences only for the operator's blocks (the production host's names). */
  operatorDifferences: Difference[];
  prepare?(main: Shell, started: Background[]): Promise<void>;
}

interface Outcome { failures: string[]; notRun: string[]; ran: number; unused: string[]; answersChecked: Set<string> }

const OPENAPI = openApiDocument(ROUTES, 'readme');

/** What the OpenAPI document says is wrong with an endpoint's JSON answer, or undefined (also when it describes no such endpoint). */
function answerAgainstDocument(command: string, stdout: string, checked: Set<string>): string | undefined {
  const path = /(?:\$B|https?:\/\/(?:localhost|127\.0\.0\.1):\d+)(\/[A-Za-z0-9_./]+)/.exec(command)?.[1];
  const operation = path && (OPENAPI.paths as Record<string, Record<string, any>>)[path];
  if (!operation || !stdout.startsWith('{')) return undefined;
  let body: unknown;
  try {
    body = JSON.parse(stdout);
  } catch {
    return undefined;
  }
  const schema = (operation.post ?? operation.get).responses[200].content['application/json'].schema;
  checked.add(path);
  const problems = schemaProblems(schema, body, OPENAPI);
  return problems.length ? `answered what /openapi.json does not describe for ${path}: ${problems.join('; ')}` : undefined;
}

function applyAll(text: string, differences: Difference[], used: Set<number>, offset = 0): string {
  differences.forEach(([from, to], i) => {
    const next = typeof from === 'string' ? text.split(from).join(to) : text.replace(from, to);
    if (next !== text) used.add(i + offset);
    text = next;
  });
  return text;
}

async function runReadme(pass: Pass): Promise<Outcome> {
  const outcome: Outcome = { failures: [], notRun: [], ran: 0, unused: [], answersChecked: new Set() };
  const values = new Map<string, string>();
  const started: Background[] = [];
  const main = new Shell(ROOT, pass.mainEnv);
  const operator = new Shell(ROOT, pass.operatorEnv);
  const all = [...pass.differences, ...pass.operatorDifferences];
  const used = new Set<number>();
  let lastPage: string | undefined;
  let file = GUIDE[0];
  const fail = (line: number, text: string) => outcome.failures.push(`${file} line ${line}: ${text}`);

  const bindClients = async (shell: Shell) => {
    const listed = await shell.run('npx gatehouse clients:list --app local');
    const clients = JSON.parse(listed.stdout) as { client_id: string; client_secret: string; features: string[] }[];
    const owner = clients.find((c) => c.features.includes('owner'))!;
    const login = clients.find((c) => c.features.includes('login_client'))!;
    values.set('OWNER_ID', owner.client_id).set('OWNER_SECRET', owner.client_secret);
    values.set('LOGIN_CLIENT_ID', login.client_id).set('LOGIN_SECRET', login.client_secret);
  };

  try {
    await pass.prepare?.(main, started);
    for (const block of guideBlocks().filter((b) => b.lang === 'sh')) {
      file = block.file;
      const operatorBlock = block.headings.includes(OPERATOR_SECTION);
      const shell = operatorBlock ? operator : main;
      const differences = operatorBlock ? all : pass.differences;
      const first = block.steps.find((s): s is Command => s.kind === 'command');
      const skipBlock = NOT_RUN.find((n) => n.wholeBlock && (!n.onlyEmbedded || pass.embedded) && first && n.command.test(first.text));
      if (skipBlock) {
        outcome.notRun.push(`the block at ${block.file} line ${block.line}: ${skipBlock.why}`);
        continue;
      }
      for (const step of block.steps) {
        if (step.kind === 'prose') {
          if (!step.text.startsWith('(in a browser, signing in')) continue;
          const browser = /^\(in a browser, signing in as (\S+) with '([^']+)'\) → 303 Location: (.+)$/.exec(step.text);
          if (!browser || !lastPage) {
            fail(step.line, 'a browser sign-in reads "(in a browser, signing in as EMAIL with \'PASSWORD\') → 303 Location: URL", under a `curl -i "PAGE"`');
          } else {
            outcome.ran++;
            const answer = await signInOnPage(lastPage, browser[1], browser[2]);
            const m = answerPattern(applyAll(browser[3], differences, used), values).exec(answer.location ?? '');
            if (answer.status !== 303 || !m) fail(step.line, `the sign-in on ${lastPage} answered ${answer.status} ${answer.location}, not 303 ${browser[3]}`);
            else for (const [k, v] of Object.entries(m.groups ?? {})) values.set(k, v);
          }
          continue;
        }
        const skip = NOT_RUN.find((n) => !n.wholeBlock && (!n.onlyEmbedded || pass.embedded) && n.command.test(step.text));
        if (skip) {
          outcome.notRun.push(`${block.file} line ${step.line} (${step.text.split('\n')[0].slice(0, 60)}…): ${skip.why}`);
          continue;
        }
        let text: string;
        try {
          text = withValues(applyAll(step.text.replace(/^npm ci && /, ''), differences, used), values, step.line);
        } catch (e) {
          fail(step.line, (e as Error).message);
          continue;
        }
        outcome.ran++;
        if (LONG_RUNNING.test(text)) {
          const kind = LONG_RUNNING.exec(text)![1];
          // one api and one dashboard at a time: a newcomer stops the one before (same port)
          for (const other of started.filter((s) => s.kind === kind && kind !== 'run worker')) {
            await stopBackground(other);
            started.splice(started.indexOf(other), 1);
          }
          try {
            started.push(await startInBackground(shell, text, pass.dir));
          } catch (e) {
            fail(step.line, (e as Error).message);
            continue;
          }
          if (kind === 'start' && !values.has('OWNER_ID')) await bindClients(shell);
          continue;
        }
        const pageUrl = /^curl -i "([^"]+)"/.exec(text);
        if (pageUrl) lastPage = (await shell.run(`printf '%s' "${pageUrl[1]}"`)).stdout;
        const expected = step.answer && applyAll(step.answer.text, differences, used);
        const end = Date.now() + 10_000;
        for (;;) {
          const got = await shell.run(text);
          const problem = check(got, expected, values) ?? answerAgainstDocument(text, got.stdout, outcome.answersChecked);
          if (!problem) break;
          // an email is written by a job after its request answered: mail:last may look too early
          if (/mail:last/.test(text) && Date.now() < end) {
            await new Promise((r) => setTimeout(r, 200));
            continue;
          }
          fail(step.line, `\`${text}\`\n${problem}`);
          break;
        }
      }
    }
    outcome.unused = all.filter((_d, i) => !used.has(i)).map(([from]) => String(from));
  } finally {
    for (const s of started.reverse()) await stopBackground(s);
    main.close();
    operator.close();
  }
  return outcome;
}

/** What is wrong with a command's output, or undefined; binds the placeholders its answer names. */
function check(got: { status: number; stdout: string; stderr: string }, expected: string | undefined, values: Map<string, string>): string | undefined {
  const shown = `exit ${got.status}\nstdout: ${got.stdout.slice(0, 2000)}\nstderr: ${got.stderr.slice(0, 1000)}`;
  if (expected !== undefined) {
    const m = answerPattern(expected, values).exec(got.stdout);
    if (!m) return `printed something else than the README shows:\n  README: ${expected}\n  ${shown}`;
    for (const [k, v] of Object.entries(m.groups ?? {})) values.set(k, v);
    return undefined;
  }
  if (got.status !== 0) return `failed:\n${shown}`;
  if (got.stdout.startsWith('{')) {
    try {
      const body = JSON.parse(got.stdout) as { stat?: string };
      if (body.stat !== undefined && body.stat !== 'ok') return `answered an error:\n${shown}`;
    } catch {
      // not one JSON object: nothing more to check
    }
  }
  return undefined;
}

function report(outcome: Outcome, name: string) {
  process.stdout.write(`README, ${name}: ${outcome.ran} commands run; the answers of ${outcome.answersChecked.size} endpoints checked against /openapi.json; not run here:\n${outcome.notRun.map((n) => `  - ${n}`).join('\n')}\n`);
  expect(outcome.failures).toEqual([]);
  expect(outcome.unused).toEqual([]);
  // every exception still names something the README says
  for (const n of NOT_RUN.filter((x) => !x.onlyEmbedded || name === 'embedded')) {
    expect(guideBlocks().some((b) => b.steps.some((s) => s.kind === 'command' && n.command.test(s.text)))).toBe(true);
  }
}

async function basePass(embedded: boolean): Promise<Pass & { ports: Record<string, number> }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-readme-'));
  const ports = { api: await freePort(), dashboard: await freePort(), metrics: await freePort() };
  const base: NodeJS.ProcessEnv = {
    PATH: process.env.PATH, HOME: process.env.HOME, DATA_DIR: path.join(dir, 'var'), PORT: String(ports.api), DASHBOARD_PORT: String(ports.dashboard),
  };
  return {
    embedded, dir, ports, mainEnv: base, operatorEnv: base,
    differences: [
      ['localhost:3000', `localhost:${ports.api}`],
      ['localhost:9464', `localhost:${ports.metrics}`],
      ['METRICS_PORT=9464', `METRICS_PORT=${ports.metrics}`],
    ],
    operatorDifferences: [],
  };
}

// the embedded pass with the suite on the embedded default (the MariaDB + Redis suite would run the same again: its
// commands start their own embedded default whatever the suite's database), the MariaDB + Redis pass with that suite
skipUnless(!onMysql, 'the README on the embedded default runs with the embedded suite (this one runs the MariaDB + Redis pass)')('the README, run top to bottom', () => {
  it('on a fresh embedded default: every command answers what the README shows', async () => {
    const pass = await basePass(true);
    try {
      report(await runReadme(pass), 'embedded');
    } finally {
      fs.rmSync(pass.dir, { recursive: true, force: true });
    }
  }, 300_000);
});

skipUnless(onMysql && !!redisUrl, 'the README on MariaDB + Redis needs DATABASE_URL (mysql://) and REDIS_URL')('the README on MariaDB + Redis', () => {
  let backend: TestBackend;
  const user = `gh_readme_${randomBytes(3).toString('hex')}`;
  afterAll(async () => {
    const admin = await mysql.createConnection(serverUrl());
    await admin.query(`DROP USER IF EXISTS '${user}'@'%'`);
    await admin.end();
    await backend?.cleanup();
  });

  it('every command answers what the README shows, the production block with its own database and user', async () => {
    backend = await createTestBackend({ redis: true });
    const pass = await basePass(false);
    const smtp = await startSmtp();
    try {
      const server = new URL(process.env.DATABASE_URL!);
      const prefix = `ghtest-readme-${randomBytes(3).toString('hex')}`;
      // the newcomer's terminal: a MariaDB + Redis deployment with a worker, emails as files
      pass.mainEnv = { ...pass.mainEnv, ...backend.env, LOG_LEVEL: 'info', REDIS_PREFIX: prefix };
      pass.operatorEnv = { ...pass.operatorEnv, REDIS_PREFIX: `${prefix}-prod`, ...(server.password && { MYSQL_PWD: decodeURIComponent(server.password) }) };
      pass.prepare = async (main, started) => {
        const migrated = await main.run('npx gatehouse migrate && npx gatehouse init');
        expect(migrated.status).toBe(0);
        started.push(await startInBackground(main, 'npm run worker', pass.dir));
      };
      const database = `${testDatabasePrefix()}readme`;
      const password = randomBytes(12).toString('hex');
      const keyFile = path.join(pass.dir, 'gatehouse-key');
      fs.writeFileSync(keyFile, randomBytes(32).toString('hex'), { mode: 0o600 });
      // (the root password, if any, through the environment: never on a command line `ps` shows)
      const root = `mariadb --no-defaults -h ${server.hostname} -P ${server.port || 3306} -u ${decodeURIComponent(server.username)}`;
      pass.differences.push(['redis://127.0.0.1:6379', redisUrl!]);
      pass.operatorDifferences = [
        [`mysql://gatehouse:PASSWORD@db.internal:3306/gatehouse`, `mysql://${user}:${password}@${server.host}/${database}`],
        ['redis://redis.internal:6379', redisUrl!],
        ['smtp://USER:PASSWORD@smtp.example.com:587', `smtp://127.0.0.1:${smtp.port}`],
        ['/run/secrets/gatehouse-key', keyFile],
        ['HOST=0.0.0.0', 'HOST=127.0.0.1'],
        ['mariadb -e', `${root} -e`],
        ['CREATE DATABASE gatehouse ', `CREATE DATABASE ${database} `],
        ["'gatehouse'@'%' IDENTIFIED BY 'PASSWORD'", `'${user}'@'%' IDENTIFIED BY '${password}'`],
        ["gatehouse.* TO 'gatehouse'@'%'", `${database}.* TO '${user}'@'%'`],
      ];
      report(await runReadme(pass), 'MariaDB + Redis');
    } finally {
      await smtp.close();
      fs.rmSync(pass.dir, { recursive: true, force: true });
    }
  }, 400_000);
});
