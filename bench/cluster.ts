import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import mysql from 'mysql2/promise';
import { closedLoop, type LoopResult } from './closed-loop';
import { basic, root } from './harness';

/*
 * Gatehouse on the cluster .ci/cluster.sh starts (3 Galera nodes, every one a writer; a 3-master
 * Redis Cluster), as docs/scaling.md reports it:
 *  1. refresh-token rotations and sign-ins with 1, 2 and 3 api pods, pod k on node k, the load
 *     spread evenly over the pods (each scenario's requests/s as a ratio to one pod's);
 *  2. the cost of wsrep_sync_wait: primary-key SELECTs on one node with it at 0 and at 7;
 *  3. a node killed under load: how long the pods on the other nodes stalled, and what failed.
 *   source .ci/cluster.sh && start_cluster && npm run bench:cluster
 * BENCH_SECONDS (10) per scenario, BENCH_CONNECTIONS (24 for rotations; sign-ins use 12).
 */
const seconds = Number(process.env.BENCH_SECONDS ?? 10);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 24);
const nodes = (process.env.GALERA_URLS ?? '').split(',').filter(Boolean);
const redisUrl = process.env.REDIS_CLUSTER_URL;
const clusterDir = process.env.CLUSTER_DIR;
const database = `gatehouse_bench_${Date.now().toString(36)}`;
const onNode = (n: number) => Object.assign(new URL(nodes[n]), { pathname: `/${database}` }).toString();

const freePort = () => new Promise<number>((resolve) => {
  const s = net.createServer().listen(0, '127.0.0.1', () => {
    const { port } = s.address() as net.AddressInfo;
    s.close(() => resolve(port));
  });
});

const env = (n: number): NodeJS.ProcessEnv => ({
  ...process.env, DATABASE_URL: onNode(n), REDIS_URL: redisUrl, REDIS_PREFIX: database, LOG_LEVEL: 'warn',
  REGISTER_LIMIT_ADDRESS: '9999999/3600', LOGIN_LIMIT_ADDRESS: '9999999/900', LOGIN_LIMIT_ACCOUNT: '9999999/900', MAIL_TRANSPORT: 'file',
  DATA_DIR: path.join('/tmp', database),
});

interface Pod { port: number; child: ChildProcess }
async function startPod(n: number): Promise<Pod> {
  const port = await freePort();
  const child = spawn(process.execPath, [path.join(root, 'dist/src/server.js')], { env: { ...env(n), PORT: String(port) }, stdio: ['ignore', 'ignore', 'inherit'] });
  // serving once /healthz answers (the log is at warn: no "listening" line to wait for)
  for (const end = Date.now() + 30_000; ;) {
    if (child.exitCode !== null) throw new Error(`the pod on node ${n + 1} exited ${child.exitCode}`);
    if (await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.ok, () => false)) break;
    if (Date.now() > end) throw new Error(`the pod on node ${n + 1} did not start`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { port, child };
}
const stopPod = (p: Pod) => new Promise<void>((resolve) => {
  p.child.once('exit', () => resolve());
  p.child.kill('SIGTERM');
});

async function post(port: number, route: string, params: Record<string, string>, auth?: string) {
  const res = await fetch(`http://127.0.0.1:${port}${route}`, {
    method: 'POST', headers: { ...(auth && { authorization: auth }), 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(params),
  });
  return (await res.json()) as Record<string, any>;
}

/** One closed loop per pod, the connections split evenly; together: requests/s summed, the worst p99. */
async function spread<C>(pods: Pod[], total: number, scenario: {
  context: (pod: number, connection: number) => C; request: (c: C) => { method: 'POST'; path: string; headers: Record<string, string>; body: string };
  answer: (c: C, status: number, body: string) => boolean;
}, secondsEach = seconds): Promise<LoopResult> {
  const results = await Promise.all(pods.map((p, i) => closedLoop({
    url: `http://127.0.0.1:${p.port}`, connections: Math.max(1, Math.round(total / pods.length)), seconds: secondsEach,
    context: (c) => scenario.context(i, c), request: scenario.request, answer: scenario.answer,
  })));
  return {
    total: results.reduce((s, r) => s + r.total, 0), rps: results.reduce((s, r) => s + r.rps, 0),
    p50: Math.max(...results.map((r) => r.p50)), p99: Math.max(...results.map((r) => r.p99)), max: Math.max(...results.map((r) => r.max ?? 0)),
    failed: results.reduce((s, r) => s + r.failed, 0), firstFailure: results.find((r) => r.firstFailure)?.firstFailure,
  };
}

async function syncWaitCost(): Promise<string> {
  const lines: string[] = [];
  for (const wait of [0, 7]) {
    const pool = mysql.createPool({ uri: onNode(1), connectionLimit: 16 });
    const conns = await Promise.all(Array.from({ length: 16 }, () => pool.getConnection()));
    for (const c of conns) await c.query(`SET SESSION wsrep_sync_wait = ${wait}`);
    let done = 0;
    const end = Date.now() + seconds * 1000;
    const started = performance.now();
    await Promise.all(conns.map(async (c) => {
      while (Date.now() < end) {
        await c.query('SELECT id, name FROM applications ORDER BY id LIMIT 1');
        done++;
      }
    }));
    const perSecond = done / ((performance.now() - started) / 1000);
    for (const c of conns) c.release();
    await pool.end();
    lines.push(`| wsrep_sync_wait = ${wait} | ${Math.round(perSecond)} | ${(16_000 / perSecond).toFixed(2)} |`);
  }
  return ['| primary-key SELECT on node 2, 16 connections | statements/s | ms per statement |', '|---|---|---|', ...lines].join('\n');
}

async function main(): Promise<void> {
  if (nodes.length !== 3 || !redisUrl || !clusterDir) throw new Error('start the cluster first: source .ci/cluster.sh && start_cluster');
  const admin = await mysql.createConnection(nodes[0]);
  await admin.query(`CREATE DATABASE ${database} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
  await admin.end();
  const cli = (...args: string[]) => spawnSync(process.execPath, [path.join(root, 'bin/gatehouse.js'), ...args], { env: env(0), encoding: 'utf8' });
  if (cli('migrate').status !== 0) throw new Error('migrate failed');
  const app = JSON.parse(cli('apps:create', 'local', '--json').stdout);
  const owner = basic(app.clients.owner.client_id, app.clients.owner.client_secret);
  const login = basic(app.clients.login.client_id, app.clients.login.client_secret);
  const loginId = app.clients.login.client_id as string;
  const out: string[] = [`\n3 Galera nodes and a 3-master Redis Cluster on this machine (${(await import('node:os')).availableParallelism()} cores), node ${process.version}, ${seconds} s per scenario\n`];

  const first = await startPod(0);
  // 60 accounts to sign in (sign-ins spread over them, as real ones are), and one user whose refresh tokens rotate
  const accounts = Array.from({ length: 60 }, (_, i) => `bench${i}@example.com`);
  for (const email of accounts) {
    const r = await post(first.port, '/oauth/register_native_traditional', {
      client_id: loginId, locale: 'en-US', emailAddress: email, newPassword: 'correct horse battery', newPasswordConfirm: 'correct horse battery', firstName: 'B', lastName: 'C', displayName: 'b',
    });
    if (r.stat !== 'ok') throw new Error(JSON.stringify(r));
  }
  const user = await post(first.port, '/entity.create', { type_name: 'user', attributes: JSON.stringify({ email: 'rotating@example.com' }) }, owner);
  /** `count` live refresh tokens, made through the pod on `port`. */
  const refreshTokens = async (port: number, count: number) => {
    const pool: string[] = [];
    for (let i = 0; i < count; i++) {
      const code = await post(port, '/access/getAuthorizationCode', { type_name: 'user', uuid: user.uuid, redirect_uri: 'https://bench.example.com/', lifetime: '600', for_client_id: loginId }, owner);
      const pair = await post(port, '/oauth/token', { grant_type: 'authorization_code', code: code.authorizationCode, redirect_uri: 'https://bench.example.com/' }, login);
      pool.push(pair.refresh_token);
    }
    return pool;
  };
  await stopPod(first);

  const rotation = (tokens: string[]) => ({
    context: () => ({ token: tokens.pop()! }),
    request: (c: { token: string }) => ({ method: 'POST' as const, path: '/oauth/token', headers: { authorization: login, 'content-type': 'application/x-www-form-urlencoded' }, body: `grant_type=refresh_token&refresh_token=${c.token}` }),
    answer: (c: { token: string }, status: number, body: string) => {
      if (status !== 200) return false;
      c.token = JSON.parse(body).refresh_token;
      return true;
    },
  });
  let signInNumber = 0;
  const signIn = {
    context: () => ({}),
    request: () => ({
      method: 'POST' as const, path: '/oauth/auth_native_traditional', headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ client_id: loginId, locale: 'en-US', signInEmailAddress: accounts[signInNumber++ % accounts.length], currentPassword: 'correct horse battery' }).toString(),
    }),
    answer: (_c: unknown, status: number, body: string) => status === 200 && body.includes('"stat":"ok"'),
  };

  const rows: string[] = [];
  const reference: Record<string, number> = {};
  for (const count of [1, 2, 3]) {
    const pods = await Promise.all(Array.from({ length: count }, (_, n) => startPod(n)));
    try {
      // made through the first pod, rotated through every pod
      const tokens = await refreshTokens(pods[0].port, connections + count);
      for (const [name, scenario, load] of [['refresh-token rotation', rotation(tokens), connections], ['sign-in (argon2id)', signIn, 12]] as const) {
        const r = await spread(pods, load, scenario as Parameters<typeof spread>[2]);
        reference[name] ??= r.rps;
        rows.push(`| ${name} | ${count} | ${Math.round(r.rps)} | ${r.p50} | ${r.p99} | ${(r.rps / reference[name]).toFixed(2)} | ${r.failed} |`);
        if (r.failed) process.stderr.write(`${name}, ${count} pods: first failure ${r.firstFailure}\n`);
      }
    } finally {
      await Promise.all(pods.map(stopPod));
    }
  }
  out.push(['| scenario | pods (one per node) | requests/s | p50 ms | p99 ms | ratio to 1 pod | failed |', '|---|---|---|---|---|---|---|', ...rows].join('\n'));
  out.push(`\n${await syncWaitCost()}`);

  // 3. node 3 killed while pods on nodes 1 and 2 rotate tokens: the longest wait for an answer, and failures
  const pods = await Promise.all([startPod(0), startPod(1)]);
  try {
    const tokens = await refreshTokens(pods[0].port, connections + 2);
    const pid = Number(fs.readFileSync(path.join(clusterDir, 'galera3', 'db.pid'), 'utf8'));
    setTimeout(() => process.kill(pid, 'SIGKILL'), 3_000);
    const r = await spread(pods, connections, rotation(tokens), 15);
    out.push(`\nnode 3 killed (SIGKILL) 3 s into 15 s of rotations through pods on nodes 1 and 2: ${Math.round(r.rps)} requests/s over the run, `
      + `p99 ${r.p99} ms, the longest wait for one answer ${r.max} ms, ${r.failed} failed${r.firstFailure ? ` (first: ${r.firstFailure.slice(0, 120)})` : ''}`);
    spawn('bash', [path.join(clusterDir, 'galera3', 'start.sh')], { detached: true, stdio: 'ignore' }).unref();
    const restarted = performance.now();
    for (;;) {
      const c = await mysql.createConnection(nodes[2]).catch(() => undefined);
      const [rows2] = c ? await c.query("SHOW STATUS LIKE 'wsrep_local_state_comment'").catch(() => [[]]) : [[]];
      await c?.end().catch(() => undefined);
      if ((rows2 as { Value: string }[])[0]?.Value === 'Synced') break;
      if (performance.now() - restarted > 120_000) throw new Error('node 3 did not rejoin');
      await new Promise((res) => setTimeout(res, 200));
    }
    out.push(`node 3 started again: synced with the cluster ${((performance.now() - restarted) / 1000).toFixed(1)} s later`);
  } finally {
    await Promise.all(pods.map(stopPod));
  }
  process.stdout.write(`${out.join('\n')}\n`);
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack}\n`);
  process.exit(1);
});
