import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';

/*
 * The `gatehouse` command's start, on the embedded default (a fresh data folder, SQLite):
 *   npm run bench:cli
 * Times each command below BENCH_RUNS times (default 7), one after the other, beside `node -e 0`
 * (the runtime's own start) in the same run, and prints the medians. The commands are `--help`
 * and those an operator runs most; every other one that reaches the database loads the same
 * wiring (BENCHMARKS.md, The command line, names those left out and why).
 */
const runs = Number(process.env.BENCH_RUNS ?? 7);
/** Each command timed here answers within this on an idle 2-core machine. */
const GOAL_MS = 1500;
const bin = path.join(__dirname, '../../bin/gatehouse.js');

function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-bench-cli-'));
  // the embedded default: no server named
  const { DATABASE_URL: _d, REDIS_URL: _r, ...rest } = process.env;
  const env = { ...rest, DATA_DIR: dir };
  try {
    const run = (args: string[]) => {
      const started = performance.now();
      const r = spawnSync(process.execPath, args, { cwd: dir, env, encoding: 'utf8' });
      return { ms: performance.now() - started, status: r.status };
    };
    if (run([bin, 'init']).status !== 0) throw new Error('gatehouse init failed');
    if (run([bin, 'users:create', 'ada@example.com']).status !== 0) throw new Error('gatehouse users:create failed');
    let n = 0;
    const cases: [string, () => string[]][] = [
      ['node -e 0', () => ['-e', '0']],
      ['gatehouse --help', () => [bin, '--help']],
      ['gatehouse apps:list', () => [bin, 'apps:list']],
      ['gatehouse users:show', () => [bin, 'users:show', 'ada@example.com']],
      ['gatehouse users:create', () => [bin, 'users:create', `user-${n++}@example.com`]],
      ['gatehouse users:export', () => [bin, 'users:export', 'ada@example.com']],
      ['gatehouse users:activity', () => [bin, 'users:activity', 'ada@example.com']],
      // the first one makes the operators' application; each run after it, a new operator mailed its link
      ['gatehouse operators:add', () => [bin, 'operators:add', `op-${n++}@example.com`, '--role', 'viewer']],
    ];
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const times = new Map(cases.map(([name]) => [name, [] as number[]]));
    // round by round, so that a slower moment of the machine touches every command alike
    for (let i = 0; i < runs; i++) {
      for (const [name, args] of cases) {
        const r = run(args());
        if (r.status !== 0) throw new Error(`${name} failed`);
        times.get(name)!.push(r.ms);
      }
    }
    const node = median(times.get('node -e 0')!);
    process.stdout.write(`\n${os.cpus().length} cores, node ${process.version}, ${runs} runs each, medians; the goal: every command under ${GOAL_MS} ms\n\n| command | ms | ÷ node -e 0 | under the goal |\n|---|---|---|---|\n`);
    for (const [name] of cases) {
      const ms = median(times.get(name)!);
      process.stdout.write(`| ${name} | ${ms.toFixed(0)} | ${(ms / node).toFixed(1)} | ${ms < GOAL_MS ? 'yes' : 'NO'} |\n`);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main();
