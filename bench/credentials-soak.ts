import fs from 'node:fs';
import path from 'node:path';
import mysql from 'mysql2/promise';
import { snapshotOf, type Snapshot } from './cpu';
import { form, startBenchServer, startBenchWorker, stopBenchWorker } from './harness';

/*
 * The credentials table under steady churn:   npm run bench:credentials-soak   (DATABASE_URL on
 * MariaDB/MySQL, REDIS_URL: an api and a worker, as deployed).
 *
 * For BENCH_SOAK_MINUTES (default 60), at a constant rate (requests sent on a clock, whatever the
 * answers' times): BENCH_SOAK_SIGNINS password sign-ins a second (default 5) of accounts drawn at
 * random, and BENCH_SOAK_REFRESHES refresh_token grants a second (default 50), each chaining the
 * refresh token of one of BENCH_SOAK_CHAINS accounts (default 200) in turn. The application's
 * tokens live short lives so that the soak sees several of them: access tokens 300 s
 * (access_token_lifetime), refresh tokens 600 s (refresh_token_lifetime), and the worker deletes
 * spent and expired ones BENCH_SOAK_RETENTION minutes after (CREDENTIALS_RETENTION_MINUTES,
 * default 5) in its sweep, every minute. Every minute the benchmark counts the application's
 * credentials by state (live, expired, spent) and reads the size of the table's file; at the end
 * it compares the second half of the soak with the minutes after the first access tokens expired
 * and were kept, and with what the rates and lifetimes should keep.
 */
const minutes = Number(process.env.BENCH_SOAK_MINUTES ?? 60);
const signInsPerSecond = Number(process.env.BENCH_SOAK_SIGNINS ?? 5);
const refreshesPerSecond = Number(process.env.BENCH_SOAK_REFRESHES ?? 50);
const chains = Number(process.env.BENCH_SOAK_CHAINS ?? 200);
const retentionMinutes = Number(process.env.BENCH_SOAK_RETENTION ?? 5);
const ACCESS_SECONDS = 300;
const REFRESH_SECONDS = 600;
const PASSWORD = 'credentials soak password 42';
const REDIRECT = 'https://soak.example.com/';

const say = (line = '') => process.stdout.write(`${line}\n`);
const note = (line: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`);

interface Minute { minute: number; live: number; expired: number; spent: number; byKind: Record<string, number>; fileMb: number | undefined; sent: number; failed: number }

async function main() {
  if (!/^(mysql|mariadb):/.test(process.env.DATABASE_URL ?? '') || !process.env.REDIS_URL) {
    throw new Error('bench:credentials-soak needs DATABASE_URL (MariaDB or MySQL) and REDIS_URL: it runs an api and a worker as they are deployed');
  }
  // hashes cheap (the sign-ins measure the table, not argon2), and queues of the soak's own
  Object.assign(process.env, { ARGON2_MEMORY_KIB: '8192', ARGON2_ITERATIONS: '1', REDIS_PREFIX: `benchsoak${Date.now().toString(36)}` });
  const app = await startBenchServer();
  const worker = await startBenchWorker({ CREDENTIALS_RETENTION_MINUTES: String(retentionMinutes) });
  const db = await mysql.createConnection({ uri: process.env.DATABASE_URL, dateStrings: true });
  let stopped = false;
  const timers: NodeJS.Timeout[] = [];
  try {
    for (const [key, value] of [['access_token_lifetime', ACCESS_SECONDS], ['refresh_token_lifetime', REFRESH_SECONDS]] as const) {
      const set = await form('/settings/set_default', { key, value: String(value) }, app.owner, app.base);
      if (set.stat !== 'ok') throw new Error(`settings/set_default ${key}: ${JSON.stringify(set)}`);
    }
    const [[{ id: appId }]] = await db.query('SELECT id FROM applications WHERE name = ?', [app.app]) as unknown as [{ id: number }[]];
    await new Promise((r) => setTimeout(r, 5_100)); // the api's application cache lives 5 s: every token made below has the short lives

    // the accounts, and a refresh token for each chain
    note(`${chains} accounts and their first token pairs`);
    const emails = Array.from({ length: chains }, (_, n) => `soak-${n}@bench.example`);
    for (let i = 0; i < chains; i += 50) {
      const made = await form('/entity.bulkCreate', {
        type_name: 'user', all_attributes: JSON.stringify(emails.slice(i, i + 50).map((email) => ({ email, password: PASSWORD, givenName: 'Soak' }))),
      }, app.owner, app.base);
      if (made.stat !== 'ok') throw new Error(`bulkCreate: ${JSON.stringify(made)}`);
    }
    /** A new refresh token for an account: a code issued by the owner, exchanged by the login client. */
    const firstToken = async (email: string): Promise<string> => {
      const code = await form('/access/getAuthorizationCode', {
        type_name: 'user', key_attribute: 'email', key_value: JSON.stringify(email), redirect_uri: REDIRECT, for_client_id: app.loginId,
      }, app.owner, app.base);
      const pair = await form('/oauth/token', { grant_type: 'authorization_code', code: code.authorizationCode, redirect_uri: REDIRECT }, app.login, app.base);
      if (!pair.refresh_token) throw new Error(`token: ${JSON.stringify(pair)}`);
      return pair.refresh_token as string;
    };
    const refresh: string[] = [];
    for (const email of emails) refresh.push(await firstToken(email));

    const counts = { sent: 0, failed: 0, skipped: 0, reseeded: 0, firstFailure: '' };
    const post = async (pathname: string, params: Record<string, string>, auth?: string): Promise<Record<string, any> | undefined> => {
      counts.sent++;
      try {
        const res = await fetch(app.base + pathname, {
          method: 'POST', body: new URLSearchParams(params),
          headers: { 'content-type': 'application/x-www-form-urlencoded', ...(auth && { authorization: auth }) },
        });
        const body = (await res.json()) as Record<string, any>;
        if (res.status !== 200 || body.stat !== 'ok') throw new Error(`${pathname} ${res.status} ${JSON.stringify(body).slice(0, 200)}`);
        return body;
      } catch (e) {
        counts.failed++;
        counts.firstFailure ||= (e as Error).message;
        return undefined;
      }
    };

    // requests on a clock: each timer sends its next request when its time comes, not when an answer is in
    const inFlight = new Set<number>();
    let next = 0;
    const refreshOne = () => {
      // the next chain not waiting for its answer (a chain's token is spent by one request at a time)
      for (let tries = 0; tries < chains && inFlight.has(next); tries++) next = (next + 1) % chains;
      if (inFlight.has(next)) {
        counts.skipped++;
        return;
      }
      const n = next;
      next = (next + 1) % chains;
      inFlight.add(n);
      void post('/oauth/token', { grant_type: 'refresh_token', refresh_token: refresh[n] }, app.login).then(async (body) => {
        if (body?.refresh_token) refresh[n] = body.refresh_token as string;
        else {
          // the answer was lost or refused: the token may be spent (a retry would revoke its family), so the chain starts again
          counts.reseeded++;
          refresh[n] = await firstToken(emails[n]).catch(() => refresh[n]);
        }
        inFlight.delete(n);
      });
    };
    const signInOne = () => void post('/oauth/auth_native_traditional', {
      client_id: app.loginId, locale: 'en-US', signInEmailAddress: emails[Math.floor(Math.random() * chains)], currentPassword: PASSWORD,
    });
    const onClock = (perSecond: number, send: () => void) => {
      if (perSecond <= 0) return;
      const started = Date.now();
      let done = 0;
      // every 20 ms, as many as the clock says are due
      timers.push(setInterval(() => {
        if (stopped) return;
        const due = Math.floor(((Date.now() - started) / 1000) * perSecond);
        for (; done < due; done++) send();
      }, 20));
    };

    const datadir = (await db.query('SELECT @@datadir AS d, DATABASE() AS s') as unknown as [{ d: string; s: string }[]])[0][0];
    const file = path.join(datadir.d, datadir.s, 'credentials.ibd');
    const sample = async (minute: number): Promise<Minute> => {
      const [rows] = await db.query(
        `SELECT kind, CASE WHEN used_at IS NOT NULL THEN 'spent' WHEN expires_at <= UTC_TIMESTAMP(6) THEN 'expired' ELSE 'live' END AS state, COUNT(*) AS n
         FROM credentials WHERE application_id = ? GROUP BY kind, state`, [appId]) as unknown as [{ kind: string; state: 'live' | 'expired' | 'spent'; n: number }[]];
      const m: Minute = { minute, live: 0, expired: 0, spent: 0, byKind: {}, fileMb: undefined, sent: counts.sent, failed: counts.failed };
      for (const r of rows) {
        m[r.state] += Number(r.n);
        m.byKind[r.kind] = (m.byKind[r.kind] ?? 0) + Number(r.n);
      }
      // the file's size where MariaDB runs on this machine (its pages are reused, never given back)
      m.fileMb = fs.existsSync(file) ? Math.round(fs.statSync(file).size / 1048576 * 10) / 10 : undefined;
      return m;
    };

    const watched = [...app.pids.map((pid) => ({ label: 'api', pid })), { label: 'worker', pid: worker.pid! }];
    const cpuBefore: Snapshot = snapshotOf(watched);
    note(`soak: ${minutes} min at ${signInsPerSecond} sign-ins/s and ${refreshesPerSecond} refreshes/s; access tokens ${ACCESS_SECONDS} s, refresh tokens ${REFRESH_SECONDS} s, kept ${retentionMinutes} min once spent or expired`);
    const series: Minute[] = [await sample(0)];
    onClock(refreshesPerSecond, refreshOne);
    onClock(signInsPerSecond, signInOne);
    say('| minute | live | expired (kept) | spent (kept) | all rows | file MB | requests sent | failed |');
    say('|---|---|---|---|---|---|---|---|');
    const row = (m: Minute) => say(`| ${m.minute} | ${m.live} | ${m.expired} | ${m.spent} | ${m.live + m.expired + m.spent} | ${m.fileMb ?? 'n/a'} | ${m.sent} | ${m.failed} |`);
    row(series[0]);
    const started = Date.now();
    for (let minute = 1; minute <= minutes; minute++) {
      await new Promise((r) => setTimeout(r, Math.max(0, started + minute * 60_000 - Date.now())));
      const m = await sample(minute);
      series.push(m);
      row(m);
    }
    stopped = true;
    const cpuAfter: Snapshot = snapshotOf(watched);
    const cpuSeconds = (label: string) => ((cpuAfter.get(label)?.cpuMs ?? 0) - (cpuBefore.get(label)?.cpuMs ?? 0)) / 1000;

    // flat: the second half against the minutes right after the first access tokens expired, were
    // kept, and a sweep came (no refresh token reaches its lifetime: each chain rotates every few seconds)
    const settled = Math.ceil((ACCESS_SECONDS + retentionMinutes * 60 + 60) / 60) + 1;
    const total = (m: Minute) => m.live + m.expired + m.spent;
    const window = (from: number, to: number) => series.filter((m) => m.minute >= from && m.minute <= to).map(total);
    const secondHalf = window(Math.ceil(minutes / 2), minutes);
    const afterSettling = window(settled, Math.min(settled + 5, minutes));
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
    // access tokens of refreshes and sign-ins, live then kept; spent refresh tokens kept; a live one a chain;
    // and up to a minute of each waiting for the next sweep
    const kept = retentionMinutes * 60;
    const expected = Math.round((refreshesPerSecond + signInsPerSecond) * (ACCESS_SECONDS + kept) + refreshesPerSecond * kept + chains);
    const expectedMost = expected + (2 * refreshesPerSecond + signInsPerSecond) * 60;
    say();
    say(`Requests: ${counts.sent} sent, ${counts.failed} failed${counts.failed ? ` (first: ${counts.firstFailure})` : ''}, ${counts.skipped} refreshes skipped (every chain waiting for its answer), ${counts.reseeded} chains started again.`);
    say(`By kind at the end: ${JSON.stringify(series[series.length - 1].byKind)}.`);
    if (secondHalf.length && afterSettling.length) {
      const first = series.find((m) => m.minute === Math.ceil(minutes / 2));
      const last = series[series.length - 1];
      say(`Settled from minute ${settled} (the access tokens' ${ACCESS_SECONDS / 60} min, the ${retentionMinutes} min kept, a sweep's minute): rows ${Math.round(mean(afterSettling))} in minutes ${settled}-${Math.min(settled + 5, minutes)}; `
        + `second half ${Math.min(...secondHalf)}-${Math.max(...secondHalf)} (mean ${Math.round(mean(secondHalf))}, ${(mean(secondHalf) / mean(afterSettling)).toFixed(2)} of the settled mean); `
        + `the rates and lifetimes should keep ${expected} to ${expectedMost} (the last a sweep's minute later); file ${first?.fileMb ?? 'n/a'} MB at minute ${first?.minute} and ${last.fileMb ?? 'n/a'} MB at the end.`);
    }
    const requests = Math.max(1, counts.sent);
    say(`CPU: api ${(cpuSeconds('api') * 1000 / requests).toFixed(2)} ms per request, worker ${(cpuSeconds('worker') / (minutes * 60) * 100).toFixed(1)} % of a core (its sweeps among its jobs).`);
  } finally {
    stopped = true;
    for (const t of timers) clearInterval(t);
    await db.end();
    await stopBenchWorker(worker);
    await app.stop();
  }
}

main().then(() => process.exit(0), (e) => {
  process.stderr.write(`${(e as Error).stack ?? e}\n`);
  process.exit(1);
});
