import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import autocannon from 'autocannon';

/*
 * Token benchmarks: the refresh_token grant (rotation persisted in the database) and
 * /access/getAccessToken, each beside GET /bench/baseline of the same server, with the same
 * connections and duration, in one run. Needs DATABASE_URL (MariaDB/MySQL), REDIS_URL and
 * SECRET_KEY, as production does:
 *
 *   npm run build && DATABASE_URL=… REDIS_URL=… SECRET_KEY=… node dist/bench/run.js
 *
 * BENCH_CONNECTIONS (50) and BENCH_SECONDS (10) bound the load.
 */
const root = path.resolve(__dirname, '../..');
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const duration = Number(process.env.BENCH_SECONDS ?? 10);
const port = Number(process.env.BENCH_PORT ?? 3917);
const base = `http://127.0.0.1:${port}`;
const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

async function form(pathname: string, params: Record<string, string>, auth: string): Promise<Record<string, any>> {
  const res = await fetch(base + pathname, {
    method: 'POST',
    headers: { authorization: auth, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(params),
  });
  return (await res.json()) as Record<string, any>;
}

interface Figures { name: string; rps: number; p50: number; p99: number; non2xx: number; errors: number; requests: number }

async function measure(name: string, options: autocannon.Options): Promise<Figures> {
  const r = await autocannon({ connections, duration, pipelining: 1, ...options });
  return { name, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx, errors: r.errors, requests: r.requests.total };
}

async function main(): Promise<void> {
  const env = { ...process.env, PORT: String(port), LOG_LEVEL: 'warn', DEFAULT_APP: 'bench' };
  const cli = (...args: string[]) => spawnSync(process.execPath, [path.join(root, 'bin/gatehouse.js'), ...args], { env, encoding: 'utf8' });
  if (cli('migrate').status !== 0) throw new Error('migrate failed');
  const created = cli('apps:create', `bench${Date.now().toString(36)}`, '--json');
  if (created.status !== 0) throw new Error(created.stderr);
  const app = JSON.parse(created.stdout);
  env.DEFAULT_APP = app.app;

  // BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" profiles the server
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const server = spawn(process.execPath, [...nodeArgs, path.join(root, 'dist/bench/server.js')], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve) => server.stdout.on('data', (d) => String(d).includes('listening') && resolve()));
  // the server's error lines (an unexpected error under load is a finding, not noise)
  server.stdout.on('data', (d) => /"level":(50|60)/.test(String(d)) && process.stderr.write(d));
  try {
    const owner = basic(app.clients.owner.client_id, app.clients.owner.client_secret);
    const login = basic(app.clients.login.client_id, app.clients.login.client_secret);
    const user = await form('/entity.create', { type_name: 'user', attributes: JSON.stringify({ email: 'bench@example.com' }) }, owner);

    // live refresh tokens: each request takes one, each answer returns its successor (autocannon
    // resets a connection's context between requests, so the tokens circulate through this pool)
    const pool: string[] = [];
    let failures = 0;
    for (let i = 0; i < connections * 2; i++) {
      const code = await form('/access/getAuthorizationCode', { type_name: 'user', uuid: user.uuid, redirect_uri: 'https://bench.example.com/', lifetime: '600', for_client_id: app.clients.login.client_id }, owner);
      const pair = await form('/oauth/token', { grant_type: 'authorization_code', code: code.authorizationCode, redirect_uri: 'https://bench.example.com/' }, login);
      pool.push(pair.refresh_token);
    }

    const results: Figures[] = [];
    if (!process.env.BENCH_ONLY_REFRESH) results.push(await measure('baseline GET /bench/baseline', { url: `${base}/bench/baseline` }));
    results.push(await measure('POST /oauth/token grant_type=refresh_token', {
      url: base,
      requests: [{
        method: 'POST',
        path: '/oauth/token',
        headers: { authorization: login, 'content-type': 'application/x-www-form-urlencoded' },
        setupRequest: (req) => ({ ...req, body: `grant_type=refresh_token&refresh_token=${pool.shift() ?? 'pool-empty'}` }),
        onResponse: (status, body) => {
          if (status === 200) pool.push(JSON.parse(body).refresh_token);
          else if (failures++ < 5) process.stderr.write(`refresh answered ${status}: ${body}\n`);
        },
      }],
    }));
    if (!process.env.BENCH_ONLY_REFRESH) results.push(await measure('GET /access/getAccessToken', {
      url: `${base}/access/getAccessToken?type_name=user&uuid=${user.uuid}`,
      headers: { authorization: owner },
    }));
    results.push(await measure('baseline GET /bench/baseline (again)', { url: `${base}/bench/baseline` }));

    const baseline = (results[0].rps + results[results.length - 1].rps) / 2;
    process.stdout.write(`\n${connections} connections, ${duration} s each, node ${process.version}\n\n`);
    process.stdout.write('| scenario | requests/s | p50 ms | p99 ms | ratio to baseline | non-2xx |\n|---|---|---|---|---|---|\n');
    for (const r of results) {
      process.stdout.write(`| ${r.name} | ${Math.round(r.rps)} | ${r.p50} | ${r.p99} | ${(r.rps / baseline).toFixed(2)} | ${r.non2xx + r.errors} |\n`);
    }
  } finally {
    server.kill('SIGTERM');
    await new Promise((r) => server.on('exit', r));
  }
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack}\n`);
  process.exit(1);
});
