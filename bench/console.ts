import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { loadConfig } from '../src/config';
import { createLogger } from '../src/logger';
import { createRuntime } from '../src/runtime';
import { searchAccounts } from '../src/usecases/operators/console-reads';
import { freshDatabase, onEachEngine, timed } from './queries';

/*
 * The console's search of accounts at BENCH_ACCOUNTS (100,000) accounts, on the embedded default
 * and, when DATABASE_URL names MariaDB/MySQL, there too:   npm run bench:console
 * The accounts are imported with `gatehouse users:import` (an address, a given name, one of 50
 * family names). Each search is one page of the console (25 accounts and whether there are more),
 * run BENCH_QUERIES (200) times after 20 to warm up: the median and the 99th percentile, and the
 * median ÷ the yardstick's, the newest page with no text (what the console opens on).
 */
const accounts = Number(process.env.BENCH_ACCOUNTS ?? 100_000);
const queries = Number(process.env.BENCH_QUERIES ?? 200);
const bin = path.join(__dirname, '../../bin/gatehouse.js');
const FAMILY = ['Okafor', 'Lovelace', 'Hopper', 'Turing', 'Noether', 'Curie', 'Meitner', 'Ramanujan', 'Hypatia', 'Johnson',
  'Lamarr', 'Franklin', 'Goodall', 'Carson', 'Ride', 'Earhart', 'Nightingale', 'Tesla', 'Faraday', 'Maxwell',
  'Darwin', 'Mendel', 'Pasteur', 'Kepler', 'Galilei', 'Newton', 'Euler', 'Gauss', 'Riemann', 'Hilbert',
  'Cantor', 'Fermat', 'Pascal', 'Leibniz', 'Bernoulli', 'Laplace', 'Fourier', 'Cauchy', 'Galois', 'Abel',
  'Dirichlet', 'Jacobi', 'Weierstrass', 'Poincare', 'Klein', 'Lie', 'Cartan', 'Weyl', 'Kolmogorov', 'Banach'];

async function measure(engine: 'sqlite' | 'mysql', dir: string, file: string): Promise<string[]> {
  const env = await freshDatabase(engine, dir, 'gatehouse_bench_console');
  const cli = (args: string[]) => {
    const ran = spawnSync(process.execPath, [bin, ...args], { env, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    if (ran.status !== 0) throw new Error(`gatehouse ${args.join(' ')}: ${ran.stderr}`);
  };
  cli(['migrate']);
  cli(['apps:create', 'bench']);
  const started = performance.now();
  cli(['users:import', file, '--app', 'bench']);
  const seeded = (performance.now() - started) / 1000;
  const runtime = createRuntime(loadConfig(env), createLogger('silent'));
  const app = (await runtime.db.applications.findByName('bench'))!;
  const search = (text: string, page = 0) => () => searchAccounts(runtime.services, { app, text, page });
  const scenarios: [string, () => Promise<{ rows: unknown[] }>][] = [
    ['yardstick: the newest page, no text', search('')],
    ['an address, typed whole (`user4242@`)', search('user4242@')],
    ['a beginning shared by 11,111 addresses (`user4`)', search('user4')],
    ['a family name, 2 % of the accounts (`okafor`)', search('okafor')],
    ['page 40 of those (`okafor`, 1,000 further)', search('okafor', 40)],
    ['a filter (`familyName = \'Okafor\' and emailVerified is null`)', search("familyName = 'Okafor' and emailVerified is null")],
    ['nothing matches (`zz`): every account read', search('zz')],
  ];
  const out = [`### ${engine === 'sqlite' ? 'SQLite (embedded default)' : 'MariaDB'}`, '',
    `${accounts.toLocaleString('en')} accounts, imported in ${seeded.toFixed(0)} s; ${queries} searches each after 20 to warm up.`, '',
    '| search (one page: 25 accounts) | found | median ms | p99 ms | ÷ yardstick (median) |', '|---|---|---|---|---|'];
  let yardstick = 0;
  for (const [name, run] of scenarios) {
    const { median, p99, last } = await timed(run, queries);
    if (yardstick === 0) yardstick = median;
    out.push(`| ${name} | ${last.rows.length} | ${median.toFixed(2)} | ${p99.toFixed(2)} | ${(median / yardstick).toFixed(1)} |`);
  }
  await runtime.close();
  return out;
}

/** The accounts' file both engines import. */
const fileIn = (dir: string) => path.join(dir, 'accounts.jsonl');

onEachEngine('console', (engine, dir) => measure(engine, dir, fileIn(dir)), (dir) => {
  const fd = fs.openSync(fileIn(dir), 'w');
  for (let n = 0; n < accounts; n++) {
    fs.writeSync(fd, `${JSON.stringify({ email: `user${n}@bench.example`, givenName: `Person ${n}`, familyName: FAMILY[n % FAMILY.length] })}\n`);
  }
  fs.closeSync(fd);
});
