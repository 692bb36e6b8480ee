import fs from 'node:fs';
import os from 'node:os';
import autocannon from 'autocannon';
import { closedLoop } from './closed-loop';
import { duration, form, startBenchServer } from './harness';

/*
 * The api's resident memory, idle and under the password sign-in load:
 *   npm run bench:memory        (the embedded default; DATABASE_URL and REDIS_URL: that shape)
 * One api process; its memory (VmRSS of /proc) is sampled every 100 ms: once it idles after its
 * start and a first sign-in (the argon2 threads and caches warm), while BENCH_CONNECTIONS (20)
 * sign in for BENCH_SECONDS (10), while as many rotate refresh tokens (the refresh_token grant),
 * while half of each do both at once, and 3 s after each load. The yardstick is Keycloak's published sizing
 * of about 1,250 MB of memory per pod (its documentation's "Concepts for sizing CPU and memory
 * resources"), measured against in the same units.
 */
const KEYCLOAK_POD_MB = 1250;
const connections = Number(process.env.BENCH_CONNECTIONS ?? 20);

const rssMb = (pid: number) => {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
};

async function sampled<T>(pid: number, work: () => Promise<T>): Promise<{ result: T; max: number }> {
  let max = rssMb(pid);
  const timer = setInterval(() => (max = Math.max(max, rssMb(pid))), 100);
  try {
    return { result: await work(), max };
  } finally {
    clearInterval(timer);
  }
}

async function main(): Promise<void> {
  const bench = await startBenchServer();
  try {
    const [pid] = bench.pids;
    const email = `memory-${Date.now()}@example.com`;
    const params = { client_id: bench.loginId, locale: 'en-US', signInEmailAddress: email, currentPassword: 'correct horse battery' };
    const registered = await form('/oauth/register_native_traditional', {
      client_id: bench.loginId, locale: 'en-US', emailAddress: email, newPassword: 'correct horse battery', newPasswordConfirm: 'correct horse battery',
      firstName: 'Memory', lastName: 'Bench', displayName: 'memory',
    }, undefined, bench.base);
    if (registered.stat !== 'ok') throw new Error(`registration failed: ${JSON.stringify(registered)}`);
    if ((await form('/oauth/auth_native_traditional', params, undefined, bench.base)).stat !== 'ok') throw new Error('the first sign-in failed');
    await new Promise((r) => setTimeout(r, 3000));
    const idle = rssMb(pid);
    const { result, max } = await sampled(pid, () => autocannon({
      url: `${bench.base}/oauth/auth_native_traditional`, method: 'POST', connections, duration,
      headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(params).toString(),
    }));
    await new Promise((r) => setTimeout(r, 3000));
    const after = rssMb(pid);
    // refresh tokens, each connection chaining its own from rotation to rotation
    const user = await form('/entity.create', { type_name: 'user', attributes: JSON.stringify({ email: `memory-refresh-${Date.now()}@example.com` }) }, bench.owner, bench.base);
    const tokens: string[] = [];
    for (let i = 0; i < connections; i++) {
      const code = await form('/access/getAuthorizationCode', { type_name: 'user', uuid: user.uuid, redirect_uri: 'https://bench.example.com/', lifetime: '600', for_client_id: bench.loginId }, bench.owner, bench.base);
      tokens.push((await form('/oauth/token', { grant_type: 'authorization_code', code: code.authorizationCode, redirect_uri: 'https://bench.example.com/' }, bench.login, bench.base)).refresh_token);
    }
    const headers = { 'content-type': 'application/x-www-form-urlencoded' };
    const refreshing = (count: number, seconds: number) => closedLoop({
      url: bench.base, connections: count, seconds, context: (n) => ({ n }),
      request: (c) => ({ method: 'POST', path: '/oauth/token', headers: { ...headers, authorization: bench.login }, body: `grant_type=refresh_token&refresh_token=${tokens[c.n]}` }),
      answer: (c, status, body) => {
        if (status !== 200) return false;
        tokens[c.n] = (JSON.parse(body) as { refresh_token: string }).refresh_token;
        return true;
      },
    });
    const signingIn = (count: number, seconds: number) => closedLoop({
      url: bench.base, connections: count, seconds, context: () => ({}),
      request: () => ({ method: 'POST', path: '/oauth/auth_native_traditional', headers, body: new URLSearchParams(params).toString() }),
      answer: (_c, status, body) => status === 200 && body.includes('"stat":"ok"'),
    });
    const refresh = await sampled(pid, () => refreshing(connections, duration));
    await new Promise((r) => setTimeout(r, 3000));
    const afterRefresh = rssMb(pid);
    const half = Math.max(1, Math.floor(connections / 2));
    const both = await sampled(pid, () => Promise.all([signingIn(half, duration), refreshing(half, duration)]));
    await new Promise((r) => setTimeout(r, 3000));
    const afterBoth = rssMb(pid);
    const failed = refresh.result.failed + both.result[0].failed + both.result[1].failed;
    const shape = process.env.DATABASE_URL ? 'MariaDB + Redis' : 'the embedded default (SQLite)';
    process.stdout.write(`\n${os.cpus().length} cores, node ${process.version}, one api process on ${shape}; ${connections} connections signing in for ${duration} s `
      + `(${result.requests.average.toFixed(0)} sign-ins/s, ${result.non2xx + result.errors} failed)\n\n`
      + `| | resident memory | ÷ Keycloak's 1,250 MB per pod |\n|---|---|---|\n`
      + `| idle, after start and one sign-in | ${idle.toFixed(0)} MB | ${(idle / KEYCLOAK_POD_MB).toFixed(3)} |\n`
      + `| under the sign-in load (peak) | ${max.toFixed(0)} MB | ${(max / KEYCLOAK_POD_MB).toFixed(3)} |\n`
      + `| 3 s after the load | ${after.toFixed(0)} MB | ${(after / KEYCLOAK_POD_MB).toFixed(3)} |\n`
      + `| under the refresh load (peak; ${refresh.result.rps.toFixed(0)} rotations/s) | ${refresh.max.toFixed(0)} MB | ${(refresh.max / KEYCLOAK_POD_MB).toFixed(3)} |\n`
      + `| 3 s after it | ${afterRefresh.toFixed(0)} MB | ${(afterRefresh / KEYCLOAK_POD_MB).toFixed(3)} |\n`
      + `| under both at once (peak; ${both.result[0].rps.toFixed(0)} sign-ins/s, ${both.result[1].rps.toFixed(0)} rotations/s) | ${both.max.toFixed(0)} MB | ${(both.max / KEYCLOAK_POD_MB).toFixed(3)} |\n`
      + `| 3 s after it | ${afterBoth.toFixed(0)} MB | ${(afterBoth / KEYCLOAK_POD_MB).toFixed(3)} |\n`
      + `\n${failed} refreshes and sign-ins of the later loads failed\n`);
  } finally {
    await bench.stop();
  }
}

void main();
