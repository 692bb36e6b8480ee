import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes, scrypt as scryptCallback } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import mysql from 'mysql2/promise';
import { closedLoop, type LoopRequest, type LoopResult } from './closed-loop';
import { perOperation, snapshotOf, type Watched } from './cpu';
import { basic, duration, form, root, startBenchServer, type BenchApp } from './harness';
import { openIdRefreshTokens } from './oidc-flow';
import { ARGON2ID } from '../src/domain/passwords';

/*
 * Gatehouse beside its peers, in one run on the same machine, alternating round by round:
 * - the refresh_token grant with rotation: Gatehouse on MariaDB + Redis (every rotation committed
 *   before the answer) and panva/oidc-provider 9 (rotation on, in-memory adapter, RS256 ID token),
 *   the same client authentication (client_secret_basic), token lifetimes and connections
 *   (BENCH_CONNECTIONS, default 50), each connection chaining its own refresh token;
 * - the same grant at Gatehouse's OpenID provider (/oidc/token: oidc-provider mounted over
 *   Gatehouse's stores, tokens from the whole code flow through the hosted sign-in) beside
 *   oidc-provider standalone on the same MariaDB with a durable adapter of its own, and with one
 *   that gives Gatehouse's guarantees (hashed ids, single use under concurrency, the spend and its
 *   event in one transaction, account and expiry indexes, the account read on each grant);
 * - email + password sign-in: Gatehouse (argon2id, m=19456 t=2 p=1), the floor under it (HTTP, a
 *   form body and one argon2 verify, nothing else, in the same server), and better-auth 1.7 (its
 *   defaults: scrypt, SQLite), at BENCH_SIGNIN_CONNECTIONS (default 20);
 * - then the same Gatehouse scenarios with two api processes behind one port, with the database's
 *   commits, fsyncs and rows per second.
 * Prints each ratio (Gatehouse ÷ peer) with p50/p99 and the CPU per request by process.
 * The peers are installed in bench/peers (their own package.json) on first use.
 *   DATABASE_URL=mysql://… REDIS_URL=… SECRET_KEY=… BENCH_WATCH="mariadb=PID redis=PID" npm run bench:peers
 */
const connections = Number(process.env.BENCH_CONNECTIONS ?? 50);
const signInConnections = Number(process.env.BENCH_SIGNIN_CONNECTIONS ?? 20);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
/** BENCH_ONLY=refresh or signin runs only those scenarios, and no scale-out phase (for quick iterations). */
const only = process.env.BENCH_ONLY;
const PEERS = path.join(root, 'bench/peers');
const OIDC_PORT = Number(process.env.BENCH_OIDC_PORT ?? 3927);
const OIDC_DB_PORT = Number(process.env.BENCH_OIDC_DB_PORT ?? 3947);
const OIDC_EQUAL_PORT = Number(process.env.BENCH_OIDC_EQUAL_PORT ?? 3957);
const BETTER_AUTH_PORT = Number(process.env.BENCH_BETTER_AUTH_PORT ?? 3937);
const GATEHOUSE = `http://127.0.0.1:${Number(process.env.BENCH_PORT ?? 3917)}`;
const PASSWORD = 'correct horse battery';
const FORM = 'application/x-www-form-urlencoded';

interface Row extends LoopResult { name: string; cpu: string }

function installPeers(): void {
  if (fs.existsSync(path.join(PEERS, 'node_modules/better-sqlite3/build/Release/better_sqlite3.node')) && fs.existsSync(path.join(PEERS, 'node_modules/mysql2'))) return;
  process.stdout.write('installing the peers in bench/peers (once; better-sqlite3 compiles, about 2 minutes)\n');
  const r = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: PEERS, stdio: 'inherit' });
  if (r.status !== 0) throw new Error('npm ci in bench/peers failed');
}

/** Starts a peer (an .mjs of bench/peers) and answers its first JSON line. */
async function startPeer(script: string, args: string[]): Promise<{ child: ChildProcess; hello: Record<string, any> }> {
  const child = spawn(process.execPath, [path.join(PEERS, script), ...args], { cwd: PEERS, stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (d) => {
    err += String(d);
    if (/error/i.test(String(d)) && !/WARNING/.test(String(d))) process.stderr.write(`${script}: ${d}`);
  });
  const hello = await new Promise<Record<string, any>>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += String(d);
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (line && out.includes('\n')) resolve(JSON.parse(line));
    });
    child.on('exit', (code) => reject(new Error(`${script} exited (${code}): ${err}`)));
  });
  // a peer that dies under load says why (its figures would otherwise be only failures)
  child.on('exit', (code, signal) => {
    if (signal !== 'SIGTERM') process.stderr.write(`${script} exited (${code ?? signal}) during the run: ${err.slice(-2000)}\n`);
  });
  return { child, hello };
}

const stop = (child: ChildProcess) => new Promise<void>((resolve) => {
  if (child.exitCode !== null) return resolve();
  child.once('exit', () => resolve());
  child.kill('SIGTERM');
});

/** Runs one closed-loop scenario and reports its CPU per request for `watched`. */
/**
 * The MariaDB server's statement counters (every database of it): read around a scenario, they say
 * how many statements of each kind one request cost (scenarios run one at a time, so the counts are
 * that scenario's, the peers' included).
 */
let statementCounts: (() => Promise<Record<string, number>>) | undefined;
const STATEMENT_KINDS = ['Questions', 'Com_select', 'Com_insert', 'Com_update', 'Com_delete', 'Com_call_procedure', 'Com_begin', 'Com_commit'];

async function scenario<C>(name: string, watched: Watched[], loop: Parameters<typeof closedLoop<C>>[0]): Promise<Row> {
  const before = snapshotOf(watched);
  const statementsBefore = await statementCounts?.();
  const result = await closedLoop(loop);
  const statementsAfter = await statementCounts?.();
  const cpu = perOperation(before, snapshotOf(watched), result.total);
  const statements = statementsBefore && statementsAfter && result.total > 0
    ? `; MariaDB statements per request: ${STATEMENT_KINDS.map((k) => `${k.replace(/^Com_/, '')} ${((statementsAfter[k] - statementsBefore[k]) / result.total).toFixed(2)}`).join(', ')}`
    : '';
  if (result.failed > 0) process.stderr.write(`${name}: ${result.failed} failed, first: ${result.firstFailure}\n`);
  return { name, cpu: cpu + statements, ...result };
}

/** A refresh-token chain per connection against `tokenPath`, the same client for every server; `tokens` keeps each chain's newest token across rounds. */
function refreshLoop(url: string, tokenPath: string, authorization: string, tokens: string[]) {
  return {
    url, connections, seconds: duration,
    context: (n: number) => ({ n }),
    request: (c: { n: number }): LoopRequest => ({
      method: 'POST', path: tokenPath, headers: { authorization, 'content-type': FORM },
      body: `grant_type=refresh_token&refresh_token=${encodeURIComponent(tokens[c.n])}`,
    }),
    answer: (c: { n: number }, status: number, body: string) => {
      if (status !== 200) return false;
      const next = JSON.parse(body).refresh_token as string | undefined;
      if (!next) return false;
      tokens[c.n] = next;
      return true;
    },
  };
}

/** POSTs of `body(n)` per connection n (each connection signs in its own account, as distinct users do). */
const post = (url: string, path: string, contentType: string, body: (n: number) => string) => ({
  url, connections: signInConnections, seconds: duration, context: (n: number) => ({ body: body(n) }),
  request: (c: { body: string }): LoopRequest => ({ method: 'POST', path, headers: { 'content-type': contentType }, body: c.body }),
  answer: (_c: unknown, status: number, text: string) => status === 200 && !text.includes('"stat":"error"'),
});

/** Live Gatehouse refresh tokens, one per connection, each from its own authorization code. */
async function gatehouseTokens(bench: BenchApp): Promise<string[]> {
  const user = await form('/entity.create', { type_name: 'user', attributes: JSON.stringify({ email: `refresh-${Date.now()}@example.com` }) }, bench.owner, bench.base);
  const tokens: string[] = [];
  for (let i = 0; i < connections; i++) {
    const code = await form('/access/getAuthorizationCode', { type_name: 'user', uuid: user.uuid, redirect_uri: 'https://bench.example.com/', for_client_id: bench.loginId }, bench.owner, bench.base);
    const pair = await form('/oauth/token', { grant_type: 'authorization_code', code: code.authorizationCode, redirect_uri: 'https://bench.example.com/' }, bench.login, bench.base);
    if (!pair.refresh_token) throw new Error(JSON.stringify(pair));
    tokens.push(pair.refresh_token);
  }
  return tokens;
}

/** One account per sign-in connection (`prefix`0@example.com, …); answers each connection's form body. */
/**
 * The two password hashes alone, in this process, one after the other: argon2id verifies at
 * Gatehouse's parameters (m=19456 KiB, t=2, p=1, @node-rs/argon2 on its threads) and scrypt at
 * better-auth's (N=16384, r=16, p=1, node:crypto on libuv's threads), `parallel` at a time for
 * `seconds` each. Their ratio is what the two sign-ins would be if hashing were all they did.
 */
async function rawHashRates(seconds: number, parallel = 8): Promise<{ argon2id: number; scrypt: number }> {
  const password = 'correct horse battery';
  const argon2 = await argon2Module;
  const stored = await argon2.hash(password, { algorithm: ARGON2ID, memoryCost: 19456, timeCost: 2, parallelism: 1 });
  const salt = randomBytes(16).toString('hex');
  const scryptOnce = () => new Promise<void>((resolve, reject) => scryptCallback(password.normalize('NFKC'), salt, 64, { N: 16384, r: 16, p: 1, maxmem: 128 * 16384 * 16 * 2 }, (e) => (e ? reject(e) : resolve())));
  const rate = async (once: () => Promise<unknown>) => {
    const end = Date.now() + seconds * 1000;
    let done = 0;
    await Promise.all(Array.from({ length: parallel }, async () => {
      while (Date.now() < end) {
        await once();
        done++;
      }
    }));
    return done / seconds;
  };
  return { argon2id: await rate(() => argon2.verify(stored, password)), scrypt: await rate(scryptOnce) };
}
const argon2Module = import('@node-rs/argon2');

async function signInAccounts(bench: BenchApp, prefix: string): Promise<string[]> {
  const bodies: string[] = [];
  for (let n = 0; n < signInConnections; n++) {
    const email = `${prefix}${n}@example.com`;
    const registered = await form('/oauth/register_native_traditional', {
      client_id: bench.loginId, locale: 'en-US', emailAddress: email, newPassword: PASSWORD, newPasswordConfirm: PASSWORD, firstName: 'Bench', lastName: 'Mark', displayName: 'bench',
    }, undefined, bench.base);
    if (registered.stat !== 'ok') throw new Error(JSON.stringify(registered));
    bodies.push(new URLSearchParams({ client_id: bench.loginId, locale: 'en-US', signInEmailAddress: email, currentPassword: PASSWORD }).toString());
  }
  return bodies;
}

/** The database's counters: commits, redo log fsyncs, rows written. */
async function databaseCounters(connection: mysql.Connection): Promise<Record<string, number>> {
  const [rows] = await connection.query<mysql.RowDataPacket[]>(
    "SHOW GLOBAL STATUS WHERE Variable_name IN ('Com_commit', 'Innodb_log_writes', 'Innodb_data_fsyncs', 'Handler_write', 'Handler_update', 'Questions')");
  return Object.fromEntries(rows.map((r) => [String(r.Variable_name), Number(r.Value)]));
}

const ratio = (a: number, b: number) => (b > 0 ? (a / b).toFixed(2) : '—');
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const line = (r: Row) => `| ${r.name} | ${Math.round(r.rps)} | ${r.p50} | ${r.p99} | ${r.failed} |`;
type Scenario = 'refresh' | 'releaseRefresh' | 'durableRefresh' | 'oidc' | 'openId' | 'releaseOpenId' | 'oidcDb' | 'oidcEqual' | 'floor' | 'durable' | 'signIn' | 'releaseSignIn' | 'betterAuth';
/** Each round's raw hash rates (argon2id and scrypt verifies per second, nothing else running). */
const rawRates: { argon2id: number; scrypt: number }[] = [];
const HEADER = '| scenario | requests/s | p50 ms | p99 ms | failed |\n|---|---|---|---|---|';

async function main(): Promise<void> {
  if (!process.env.DATABASE_URL?.startsWith('mysql')) throw new Error('bench:peers measures Gatehouse on MariaDB/MySQL + Redis: set DATABASE_URL=mysql://…, REDIS_URL and SECRET_KEY');
  installPeers();
  const baDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-bench-better-auth-'));
  // a peer that fails to start stops those started before it: none is left holding its port
  const started: ChildProcess[] = [];
  const peer = async (script: string, args: string[]) => {
    try {
      const p = await startPeer(script, args);
      started.push(p.child);
      return p;
    } catch (e) {
      await Promise.all(started.map(stop));
      throw e;
    }
  };
  const oidc = await peer('oidc-provider.mjs', [String(OIDC_PORT), String(connections)]);
  // the standalone provider on the same MariaDB server (a table of its own in the bench database)
  const oidcDb = await peer('oidc-provider.mjs', [String(OIDC_DB_PORT), String(connections), process.env.DATABASE_URL]);
  // and with the guarantees Gatehouse's provider gives (tables of its own)
  const oidcEqual = await peer('oidc-provider.mjs', [String(OIDC_EQUAL_PORT), String(connections), process.env.DATABASE_URL, 'equal']);
  const betterAuth = await peer('better-auth.mjs', [String(BETTER_AUTH_PORT), path.join(baDir, 'auth.db'), String(signInConnections), PASSWORD]);
  const db = await mysql.createConnection(process.env.DATABASE_URL);
  statementCounts = async () => {
    const [rows] = await db.query(`SHOW GLOBAL STATUS WHERE Variable_name IN (${STATEMENT_KINDS.map(() => '?').join(', ')})`, STATEMENT_KINDS);
    return Object.fromEntries((rows as Array<{ Variable_name: string; Value: string }>).map((r) => [r.Variable_name, Number(r.Value)]));
  };
  let bench = await startBenchServer();
  // an earlier release (a built git worktree) on its own port and database, measured beside this one in every round
  const releaseRoot = process.env.BENCH_RELEASE_ROOT;
  const release = releaseRoot ? await startBenchServer({
    release: { root: releaseRoot, port: Number(process.env.BENCH_RELEASE_PORT ?? 3918), databaseUrl: process.env.BENCH_RELEASE_DATABASE_URL ?? `${process.env.DATABASE_URL.replace(/\/[^/?]*(\?.*)?$/, '/gatehouse_bench_release')}` },
  }) : undefined;
  const out: string[] = [];
  const say = (s: string) => {
    out.push(s);
    process.stdout.write(`${s}\n`);
  };
  try {
    const gatehouseRefresh = await gatehouseTokens(bench);
    const floorRefresh = await gatehouseTokens(bench);
    const oidcTokens = oidc.hello.tokens as string[];
    const oidcDbTokens = oidcDb.hello.tokens as string[];
    const oidcEqualTokens = oidcEqual.hello.tokens as string[];
    const openIdTokens = only === 'signin' ? [] : await openIdRefreshTokens(bench, connections, PASSWORD);
    const signIn = await signInAccounts(bench, 'bench');
    const releaseTokens = release && only !== 'signin' ? await gatehouseTokens(release) : [];
    const releaseOpenIdTokens = release && only !== 'signin' ? await openIdRefreshTokens(release, connections, PASSWORD) : [];
    const releaseSignIn = release && only !== 'refresh' ? await signInAccounts(release, 'bench') : [];
    const watch = (b: BenchApp): Watched[] => b.pids.map((pid, i) => ({ label: b.pids.length > 1 ? `api${i + 1}` : 'api', pid, node: true }));
    const oidcWatch: Watched[] = [{ label: 'oidc-provider', pid: oidc.child.pid!, node: true }];
    const oidcDbWatch: Watched[] = [{ label: 'oidc-provider', pid: oidcDb.child.pid!, node: true }];
    const oidcEqualWatch: Watched[] = [{ label: 'oidc-provider', pid: oidcEqual.child.pid!, node: true }];
    const baWatch: Watched[] = [{ label: 'better-auth', pid: betterAuth.child.pid!, node: true }];
    const baBody = (n: number) => JSON.stringify({ email: `bench${n}@example.com`, password: PASSWORD });
    const oidcAuth = basic('bench', 'bench-secret-0123456789abcdef');

    say(`\n${os.cpus().length} cores, node ${process.version}, ${duration} s per scenario, ${rounds} rounds alternating; refresh at ${connections} connections, sign-in at ${signInConnections}\n`);
    // every server warms up (JIT, pools, caches) for 2 s before the measured rounds
    const warm = { seconds: 2 };
    if (only !== 'signin') {
      await closedLoop({ ...refreshLoop(GATEHOUSE, '/oauth/token', bench.login, gatehouseRefresh), ...warm });
      if (release) await closedLoop({ ...refreshLoop(release.base, '/oauth/token', release.login, releaseTokens), ...warm });
      await closedLoop({ ...refreshLoop(GATEHOUSE, '/bench/durable-refresh', bench.login, floorRefresh), ...warm });
      await closedLoop({ ...refreshLoop(`http://127.0.0.1:${OIDC_PORT}`, '/token', oidcAuth, oidcTokens), ...warm });
      await closedLoop({ ...refreshLoop(GATEHOUSE, '/oidc/token', bench.login, openIdTokens), ...warm });
      if (release) await closedLoop({ ...refreshLoop(release.base, '/oidc/token', release.login, releaseOpenIdTokens), ...warm });
      await closedLoop({ ...refreshLoop(`http://127.0.0.1:${OIDC_DB_PORT}`, '/token', oidcAuth, oidcDbTokens), ...warm });
      await closedLoop({ ...refreshLoop(`http://127.0.0.1:${OIDC_EQUAL_PORT}`, '/token', oidcAuth, oidcEqualTokens), ...warm });
    }
    if (only !== 'refresh') {
      await closedLoop({ ...post(GATEHOUSE, '/oauth/auth_native_traditional', FORM, (n) => signIn[n]), ...warm });
      if (release) await closedLoop({ ...post(release.base, '/oauth/auth_native_traditional', FORM, (n) => releaseSignIn[n]), ...warm });
      await closedLoop({ ...post(GATEHOUSE, '/bench/durable', FORM, (n) => signIn[n]), ...warm });
      await closedLoop({ ...post(`http://127.0.0.1:${BETTER_AUTH_PORT}`, '/api/auth/sign-in/email', 'application/json', baBody), ...warm });
    }
    const all: Record<Scenario, Row>[] = [];
    for (let round = 1; round <= rounds; round++) {
      const skip = (kind: string) => only !== undefined && only !== kind;
      const none = (name: string): Row => ({ name: `${name} (skipped)`, cpu: '', total: 0, rps: 0, p50: 0, p99: 0, failed: 0 });
      const run = <C>(kind: string, name: string, watched: Watched[], loop: Parameters<typeof closedLoop<C>>[0]) => (skip(kind) ? none(name) : scenario(name, watched, loop));
      const r: Record<Scenario, Row> = {
        refresh: await run('refresh', 'Gatehouse refresh grant (MariaDB + Redis)', watch(bench), refreshLoop(GATEHOUSE, '/oauth/token', bench.login, gatehouseRefresh)),
        releaseRefresh: release ? await run('refresh', 'the earlier release\'s refresh grant', watch(release), refreshLoop(release.base, '/oauth/token', release.login, releaseTokens)) : none('the earlier release\'s refresh grant'),
        durableRefresh: await run('refresh', 'durable rotation floor: HTTP + form + one CALL of the rotation procedure', watch(bench), refreshLoop(GATEHOUSE, '/bench/durable-refresh', bench.login, floorRefresh)),
        oidc: await run('refresh', 'oidc-provider refresh grant (in memory)', oidcWatch, refreshLoop(`http://127.0.0.1:${OIDC_PORT}`, '/token', oidcAuth, oidcTokens)),
        openId: await run('refresh', 'Gatehouse OpenID refresh grant (/oidc/token, MariaDB + Redis)', watch(bench), refreshLoop(GATEHOUSE, '/oidc/token', bench.login, openIdTokens)),
        releaseOpenId: release ? await run('refresh', 'the earlier release\'s OpenID refresh grant', watch(release), refreshLoop(release.base, '/oidc/token', release.login, releaseOpenIdTokens))
          : none('the earlier release\'s OpenID refresh grant'),
        oidcDb: await run('refresh', 'oidc-provider refresh grant (standalone, its own MariaDB adapter)', oidcDbWatch, refreshLoop(`http://127.0.0.1:${OIDC_DB_PORT}`, '/token', oidcAuth, oidcDbTokens)),
        oidcEqual: await run('refresh', 'oidc-provider refresh grant (standalone, MariaDB adapter with Gatehouse\'s guarantees)', oidcEqualWatch, refreshLoop(`http://127.0.0.1:${OIDC_EQUAL_PORT}`, '/token', oidcAuth, oidcEqualTokens)),
        floor: await run('signin', 'floor: HTTP + form + one argon2 verify', watch(bench), post(GATEHOUSE, '/bench/verify', FORM, () => `currentPassword=${encodeURIComponent(PASSWORD)}`)),
        durable: await run('signin', 'durable floor: + one SELECT, one Redis budget, one committed INSERT', watch(bench), post(GATEHOUSE, '/bench/durable', FORM, (n) => signIn[n])),
        signIn: await run('signin', 'Gatehouse sign-in (argon2id)', watch(bench), post(GATEHOUSE, '/oauth/auth_native_traditional', FORM, (n) => signIn[n])),
        releaseSignIn: release ? await run('signin', 'the earlier release\'s sign-in', watch(release), post(release.base, '/oauth/auth_native_traditional', FORM, (n) => releaseSignIn[n])) : none('the earlier release\'s sign-in'),
        betterAuth: await run('signin', 'better-auth sign-in (scrypt, SQLite)', baWatch, post(`http://127.0.0.1:${BETTER_AUTH_PORT}`, '/api/auth/sign-in/email', 'application/json', baBody)),
      };
      if (!skip('signin')) {
        const raw = await rawHashRates(5);
        rawRates.push(raw);
        say(`raw hashes alone: argon2id ${raw.argon2id.toFixed(0)} verifies/s, scrypt ${raw.scrypt.toFixed(0)}/s; sign-in ÷ better-auth ${ratio(r.signIn.rps, r.betterAuth.rps)} `
          + `is ${ratio(r.signIn.rps / r.betterAuth.rps, raw.argon2id / raw.scrypt)} of the raw argon2id ÷ scrypt ratio ${ratio(raw.argon2id, raw.scrypt)}`);
      }
      all.push(r);
      say(`round ${round}\n\n${HEADER}\n${Object.values(r).map(line).join('\n')}\n`);
      say(`OpenID refresh ÷ standalone oidc-provider on MariaDB ${ratio(r.openId.rps, r.oidcDb.rps)} (÷ the one with equal guarantees ${ratio(r.openId.rps, r.oidcEqual.rps)}); OpenID refresh ÷ original refresh ${ratio(r.openId.rps, r.refresh.rps)}; `
        + `refresh ÷ oidc-provider ${ratio(r.refresh.rps, r.oidc.rps)}; refresh ÷ durable rotation floor ${ratio(r.refresh.rps, r.durableRefresh.rps)}; `
        + `durable rotation floor ÷ oidc-provider ${ratio(r.durableRefresh.rps, r.oidc.rps)}; sign-in ÷ floor ${ratio(r.signIn.rps, r.floor.rps)} (p99 ${ratio(r.signIn.p99, r.floor.p99)}× the floor's); `
        + `sign-in ÷ durable floor ${ratio(r.signIn.rps, r.durable.rps)}; durable floor ÷ floor ${ratio(r.durable.rps, r.floor.rps)}; sign-in ÷ better-auth ${ratio(r.signIn.rps, r.betterAuth.rps)}\n`);
      for (const row of Object.values(r)) if (row.cpu) say(`${row.name}: ${row.cpu}`);
      say('');
    }
    // each round's ratio compares two servers measured minutes apart at most; the median of those
    // ratios is robust to the machine getting faster or slower between rounds
    const med = (a: Scenario, b: Scenario, f: 'rps' | 'p99' = 'rps') => {
      const ratios = all.filter((r) => r[b][f] > 0).map((r) => r[a][f] / r[b][f]);
      return ratios.length ? ratio(median(ratios), 1) : '—';
    };
    say('medians of the rounds\' ratios\n');
    say(`| ratio | value |\n|---|---|`);
    say(`| OpenID refresh grant: Gatehouse ÷ oidc-provider standalone on MariaDB | ${med('openId', 'oidcDb')} |`);
    say(`| OpenID refresh grant: Gatehouse ÷ oidc-provider standalone on MariaDB, equal guarantees | ${med('openId', 'oidcEqual')} |`);
    say(`| oidc-provider standalone: equal guarantees ÷ its plain durable adapter | ${med('oidcEqual', 'oidcDb')} |`);
    say(`| OpenID refresh grant ÷ original /oauth/token rotation | ${med('openId', 'refresh')} |`);
    say(`| refresh grant: Gatehouse ÷ oidc-provider | ${med('refresh', 'oidc')} |`);
    say(`| refresh grant: Gatehouse ÷ durable rotation floor | ${med('refresh', 'durableRefresh')} |`);
    say(`| durable rotation floor ÷ oidc-provider | ${med('durableRefresh', 'oidc')} |`);
    say(`| sign-in: Gatehouse ÷ floor (HTTP + verify) | ${med('signIn', 'floor')} |`);
    say(`| sign-in: Gatehouse ÷ durable floor | ${med('signIn', 'durable')} |`);
    say(`| durable floor ÷ floor | ${med('durable', 'floor')} |`);
    say(`| sign-in p99: Gatehouse ÷ floor | ${med('signIn', 'floor', 'p99')} |`);
    say(`| sign-in: Gatehouse ÷ better-auth | ${med('signIn', 'betterAuth')} |`);
    if (rawRates.length) {
      const relative = all.map((r, i) => (r.signIn.rps / r.betterAuth.rps) / (rawRates[i].argon2id / rawRates[i].scrypt)).filter(Number.isFinite);
      say(`| raw verifies alone: argon2id ÷ scrypt (better-auth's parameters) | ${ratio(median(rawRates.map((x) => x.argon2id / x.scrypt)), 1)} |`);
      say(`| sign-in ÷ better-auth, as a share of the raw argon2id ÷ scrypt ratio | ${relative.length ? ratio(median(relative), 1) : '—'} |`);
    }
    if (release) {
      say(`| refresh grant: the earlier release ÷ oidc-provider | ${med('releaseRefresh', 'oidc')} |`);
      say(`| refresh grant: the earlier release ÷ oidc-provider standalone on MariaDB | ${med('releaseRefresh', 'oidcDb')} |`);
      say(`| refresh grant: Gatehouse ÷ oidc-provider standalone on MariaDB | ${med('refresh', 'oidcDb')} |`);
      say(`| refresh grant: Gatehouse ÷ the earlier release | ${med('refresh', 'releaseRefresh')} |`);
      say(`| OpenID refresh grant: Gatehouse ÷ the earlier release | ${med('openId', 'releaseOpenId')} |`);
      say(`| sign-in: Gatehouse ÷ the earlier release | ${med('signIn', 'releaseSignIn')} |`);
      say(`| sign-in: the earlier release ÷ floor | ${med('releaseSignIn', 'floor')} |`);
    }
    say('');

    // scale out: the same Gatehouse scenarios with one api process, then two behind one port
    for (const processes of only ? [] : [1, 2]) {
      await bench.stop();
      bench = await startBenchServer({ processes });
      const tokens = await gatehouseTokens(bench);
      const body = await signInAccounts(bench, `bench-${processes}-`);
      const before = await databaseCounters(db);
      const refresh = await scenario(`Gatehouse refresh grant, ${processes} api ${processes === 1 ? 'process' : 'processes'}`, watch(bench), refreshLoop(GATEHOUSE, '/oauth/token', bench.login, tokens));
      const after = await databaseCounters(db);
      const floor = await scenario(`floor, ${processes} api ${processes === 1 ? 'process' : 'processes'}`, watch(bench), post(GATEHOUSE, '/bench/verify', FORM, () => `currentPassword=${encodeURIComponent(PASSWORD)}`));
      const signInRow = await scenario(`Gatehouse sign-in, ${processes} api ${processes === 1 ? 'process' : 'processes'}`, watch(bench), post(GATEHOUSE, '/oauth/auth_native_traditional', FORM, (n) => body[n]));
      const per = (k: string) => ((after[k] - before[k]) / duration).toFixed(0);
      say(`${processes} api ${processes === 1 ? 'process' : 'processes'}\n\n${HEADER}\n${[refresh, floor, signInRow].map(line).join('\n')}\n`);
      say(`database during the refresh scenario, per second: ${per('Com_commit')} commits, ${per('Innodb_log_writes')} redo log writes, `
        + `${per('Innodb_data_fsyncs')} fsyncs, ${per('Handler_write')} rows written, ${per('Handler_update')} rows updated, ${per('Questions')} statements from clients`);
      for (const r of [refresh, floor, signInRow]) say(`${r.name}: ${r.cpu}`);
      say('');
    }
    if (process.env.BENCH_OUT) fs.writeFileSync(process.env.BENCH_OUT, `${out.join('\n')}\n`);
  } finally {
    await release?.stop();
    await bench.stop();
    await Promise.all([stop(oidc.child), stop(oidcDb.child), stop(oidcEqual.child), stop(betterAuth.child)]);
    await db.end();
    fs.rmSync(baDir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack}\n`);
  process.exit(1);
});
