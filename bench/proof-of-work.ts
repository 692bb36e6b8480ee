import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { chromium } from 'playwright-core';
import { createChallenge, randomInt, solveChallenge, verifySolution } from 'altcha-lib';
import { deriveKey } from 'altcha-lib/algorithms/pbkdf2';
import { buildApp } from '../src/app';
import { loadConfig } from '../src/config';
import { createHttpServer } from '../src/http-server';
import { createLogger } from '../src/logger';
import { createRuntime } from '../src/runtime';
import { migrate } from '../src/db/migrate';
import { createApplication } from '../src/usecases/applications/create-application';
import { changeClientSettings } from '../src/usecases/clients/change-settings';
import { findFlowDirectories, loadFlowDirectory } from '../src/domain/flow-definition';
import { CHALLENGE_ALGORITHM, CHALLENGE_COST } from '../src/domain/proof-of-work';
import { root } from './harness';
import { freshDatabase, timed } from './queries';

/*
 * The proof-of-work challenge's price on each side (docs/proof-of-work.md):   npm run bench:proof-of-work
 * In Debian's Chromium on this machine, the time from the registration page's load to the widget's
 * solution in its form, BENCH_SOLVES (7) pages per difficulty (`challenge_difficulty`, the attempts a
 * solution takes on average), median and slowest; on the server, the verification of a solution
 * (altcha-lib's verifySolution, BENCH_VERIFIES (500) after 20), beside a password check (argon2id,
 * the sign-in's own cost) in the same run: what a request that carries a solution adds.
 */
const solves = Number(process.env.BENCH_SOLVES ?? 7);
const verifies = Number(process.env.BENCH_VERIFIES ?? 500);
const DIFFICULTIES = (process.env.BENCH_DIFFICULTIES ?? '300,1000,3000,10000').split(',').map(Number);

const freePort = () => new Promise<number>((resolve) => {
  const s = net.createServer().listen(0, '127.0.0.1', () => {
    const { port } = s.address() as net.AddressInfo;
    s.close(() => resolve(port));
  });
});

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-bench-pow-'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = { ...await freshDatabase('sqlite', dir, 'pow'), PUBLIC_BASE_URL: base, LOG_LEVEL: 'silent', REGISTER_LIMIT_ADDRESS: '100000/3600' };
  const runtime = createRuntime(loadConfig(env), createLogger('silent'));
  await migrate(runtime.db);
  const operator = { actor: { kind: 'operator' as const, name: 'bench' }, origin: {} };
  const created = await createApplication(runtime.services, { name: 'bench', flows: findFlowDirectories(path.join(root, 'flows')).map(loadFlowDirectory), acting: operator });
  const app = (await runtime.db.applications.findByName('bench'))!;
  const login = created.clients.login.client_id;
  const server = createHttpServer(buildApp({ services: runtime.services, defaultApp: 'bench' }), runtime.config.http, createLogger('silent'));
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const set = (entries: [string, string][]) => changeClientSettings(runtime.services, { applicationId: app.id, clientId: login, entries, acting: operator });
  await set([['redirect_uris', `${base}/done`], ['challenge', 'on']]);
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', headless: true, args: ['--no-sandbox', '--disable-gpu'] });
  const out = [`Debian's Chromium ${browser.version()}, ${os.cpus().length} cores; each attempt is ${CHALLENGE_COST} iterations of ${CHALLENGE_ALGORITHM} (WebCrypto in the widget's worker).`, '',
    '| `challenge_difficulty` | solve in Chromium, median ms | slowest ms | server verify, median ms | solve ÷ verify |', '|---|---|---|---|---|'];
  try {
    for (const difficulty of DIFFICULTIES) {
      await set([['challenge_difficulty', String(difficulty)]]);
      await new Promise((resolve) => setTimeout(resolve, 5_100)); // the client cache
      const times: number[] = [];
      for (let i = 0; i < solves; i++) {
        const context = await browser.newContext();
        const page = await context.newPage();
        const started = performance.now();
        await page.goto(`${base}/register?client_id=${login}&redirect_uri=${encodeURIComponent(`${base}/done`)}&locale=en-US`);
        while ((await page.locator('input[name=altcha]').count()) === 0 || (await page.inputValue('input[name=altcha]')) === '') {
          if (performance.now() - started > 120_000) throw new Error(`no solution in 120 s at difficulty ${difficulty}`);
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        times.push(performance.now() - started);
        await context.close();
      }
      times.sort((a, b) => a - b);
      // the server's side: one solution verified again and again (its nonce is not spent here)
      const challenge = await createChallenge({
        algorithm: CHALLENGE_ALGORITHM, cost: CHALLENGE_COST, deriveKey, counter: randomInt(2 * difficulty),
        hmacSignatureSecret: 's', hmacKeySignatureSecret: 'k', expiresAt: new Date(Date.now() + 600_000),
      });
      const solution = (await solveChallenge({ challenge, deriveKey }))!;
      const verify = await timed(() => verifySolution({ challenge, solution, deriveKey, hmacSignatureSecret: 's', hmacKeySignatureSecret: 'k' }), verifies);
      const median = times[Math.floor(times.length / 2)];
      out.push(`| ${difficulty} | ${median.toFixed(0)} | ${times[times.length - 1].toFixed(0)} | ${verify.median.toFixed(3)} | ${(median / verify.median).toFixed(0)} |`);
    }
    const hash = await runtime.services.passwords.hash('correct horse battery staple');
    const password = await timed(() => runtime.services.passwords.verify(hash, 'correct horse battery staple'), 50);
    out.push('', `Yardstick in the same run: a password check (argon2id, what every sign-in costs the server) ${password.median.toFixed(1)} ms median.`);
  } finally {
    await browser.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await runtime.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  console.log(out.join('\n'));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
