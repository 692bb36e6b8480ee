import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import autocannon from 'autocannon';
import { perOperation, snapshot } from './cpu';

/*
 * What every benchmark shares: a fresh application on the configured database, the bench server
 * (the api plus GET /bench/baseline) in its own process, form posts, and autocannon figures.
 * BENCH_CONNECTIONS and BENCH_SECONDS bound the load; BENCH_NODE_ARGS="--cpu-prof
 * --cpu-prof-dir=/tmp/prof" profiles the server.
 */
export const root = path.resolve(__dirname, '../..');
export const duration = Number(process.env.BENCH_SECONDS ?? 10);
const port = Number(process.env.BENCH_PORT ?? 3917);
export const base = `http://127.0.0.1:${port}`;
export const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

/** The running bench server's api pids, whose CPU each scenario reports. */
let serverPids: number[] = [];

/** An application as `apps:create --json` tells it (its clients' secrets shown once). */
export interface CreatedApp { app: string; clients: Record<'owner' | 'login', { client_id: string; client_secret: string }> }

export interface BenchApp {
  app: string;
  /** What apps:create said, to start a server for the same application again (`app` of startBenchServer). */
  created: CreatedApp;
  owner: string;
  login: string;
  loginId: string;
  /** The api processes (one, or BENCH_API_PROCESSES behind one port). */
  pids: number[];
  /** Where it answers: http://127.0.0.1:PORT. */
  base: string;
  stop(): Promise<void>;
}

/**
 * Migrates, creates a new application, and starts the bench server for it (`processes` api
 * processes behind one port). `release`: the checkout of another release to run instead (a git
 * worktree, built), on its own port and database, to measure it beside this one in the same run.
 * `app`: an application made before (its `created`), served again instead of a new one.
 */
export async function startBenchServer(options: { processes?: number; release?: { root: string; port: number; databaseUrl: string }; app?: CreatedApp } = {}): Promise<BenchApp> {
  const at = options.release ?? { root, port, databaseUrl: process.env.DATABASE_URL };
  // every request comes from one address, and sign-ins go to one account, each attempt taken from
  // the budgets before it runs: the limits would refuse most of them (as 200
  // api_limit_error, which autocannon does not count as failed)
  const env = {
    REGISTER_LIMIT_ADDRESS: '9999999/3600', LOGIN_LIMIT_ADDRESS: '9999999/900', LOGIN_LIMIT_ACCOUNT: '9999999/900',
    ...process.env, PORT: String(at.port), DATABASE_URL: at.databaseUrl, LOG_LEVEL: 'warn', BENCH_API_PROCESSES: String(options.processes ?? 1),
  };
  const cli = (...args: string[]) => spawnSync(process.execPath, [path.join(at.root, 'bin/gatehouse.js'), ...args], { env, encoding: 'utf8' });
  if (cli('migrate').status !== 0) throw new Error('migrate failed');
  let app = options.app;
  if (!app) {
    const created = cli('apps:create', `bench${Date.now().toString(36)}`, '--json');
    if (created.status !== 0) throw new Error(created.stderr);
    app = JSON.parse(created.stdout) as CreatedApp;
  }
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const server = spawn(process.execPath, [...nodeArgs, path.join(at.root, 'dist/bench/server.js')], {
    env: { ...env, DEFAULT_APP: app.app }, stdio: ['ignore', 'pipe', 'inherit'],
  });
  // one process says its pid; with several, the primary says the workers' pids once all listen
  const processes = options.processes ?? 1;
  serverPids = await new Promise<number[]>((resolve) => {
    let seen = '';
    server.stdout.on('data', (d) => {
      seen += String(d);
      const ready = processes === 1 ? /listening on \d+ pid=(\d+)/.exec(seen) : /bench server listening pid=([\d,]+)\n/.exec(seen);
      if (ready) resolve(ready[1].split(',').map(Number));
    });
  });
  // the server's error lines (an unexpected error under load is a finding, not noise)
  server.stdout.on('data', (d) => /"level":(50|60)/.test(String(d)) && process.stderr.write(d));
  return {
    app: app.app,
    created: app,
    owner: basic(app.clients.owner.client_id, app.clients.owner.client_secret),
    login: basic(app.clients.login.client_id, app.clients.login.client_secret),
    loginId: app.clients.login.client_id,
    pids: serverPids,
    base: `http://127.0.0.1:${at.port}`,
    async stop() {
      if (server.exitCode !== null || server.signalCode !== null) return;
      server.kill('SIGTERM');
      await new Promise((r) => server.on('exit', r));
    },
  };
}

/**
 * A worker process (`dist/workers/main.js` of the checkout `at`) with `env` over this process's
 * (emails as files unless told otherwise), once it says it is ready; its output is read and dropped.
 */
export function startBenchWorker(env: NodeJS.ProcessEnv = {}, at = root): Promise<ChildProcess> {
  const worker = spawn(process.execPath, [path.join(at, 'dist/workers/main.js')], {
    env: { MAIL_TRANSPORT: 'file', ...process.env, ...env, LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let seen = '';
    const watch = (d: Buffer) => {
      seen = (seen + String(d)).slice(-4096);
      if (!/worker ready/.test(seen)) return;
      worker.stdout!.off('data', watch);
      worker.stdout!.resume();
      resolve(worker);
    };
    worker.stdout!.on('data', watch);
    worker.once('exit', (code) => reject(new Error(`the worker exited (${code})`)));
  });
}

/** Stops a worker from startBenchWorker and waits for it to exit. */
export async function stopBenchWorker(worker: ChildProcess): Promise<void> {
  if (worker.exitCode !== null || worker.signalCode !== null) return;
  const gone = new Promise((r) => worker.once('exit', r));
  worker.kill('SIGTERM');
  await gone;
}

export async function form(pathname: string, params: Record<string, string>, auth?: string, at = base): Promise<Record<string, any>> {
  const res = await fetch(at + pathname, {
    method: 'POST',
    headers: { ...(auth && { authorization: auth }), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(params),
  });
  return (await res.json()) as Record<string, any>;
}

/** One scenario's figures; `cpu` says where its CPU went per request (see cpu.ts). */
export interface Figures { name: string; rps: number; p50: number; p99: number; failed: number; cpu: string }

export async function measure(name: string, connections: number, options: autocannon.Options): Promise<Figures> {
  const before = snapshot(serverPids);
  const r = await autocannon({ connections, duration, pipelining: 1, ...options });
  const cpu = perOperation(before, snapshot(serverPids), r.requests.total);
  return { name, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, failed: r.non2xx + r.errors, cpu };
}

/** A markdown table of the figures, each with its ratio to `reference` requests/s. */
export function table(results: Figures[], reference: number, referenceName: string): string {
  const rows = results.map((r) => `| ${r.name} | ${Math.round(r.rps)} | ${r.p50} | ${r.p99} | ${(r.rps / reference).toFixed(2)} | ${r.failed} |`);
  return [`| scenario | requests/s | p50 ms | p99 ms | ratio to ${referenceName} | failed |`, '|---|---|---|---|---|---|', ...rows].join('\n');
}
