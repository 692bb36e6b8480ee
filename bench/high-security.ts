import { createHash, randomBytes, randomUUID } from 'node:crypto';
import os from 'node:os';
import { exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import { closedLoop, type LoopRequest } from './closed-loop';
import { perOperation, snapshotOf, type Watched } from './cpu';
import { duration, form, startBenchServer, type BenchApp } from './harness';
import { browse, CALLBACK, firstForm, openIdCallback, openIdRefreshTokens } from './oidc-flow';

/*
 * The OpenID provider's grants with an API's JWT access token and with DPoP, beside the plain ones,
 * in one run, alternating round by round (BENCH_ROUNDS, default 3; BENCH_CONNECTIONS, default 20):
 * - the refresh grant: plain (an opaque access token), for an API (resource: an RFC 9068 JWT signed
 *   ES256), and with a DPoP proof (ES256, made by the client for each request);
 * - the code flow of a signed-in browser (the authorization request answered from its session, no
 *   password, then the code exchanged): plain, for an API, and with DPoP at the exchange.
 * Prints each variant's requests per second as a ratio to the plain one of its round, and the CPU
 * per request by process.
 *   DATABASE_URL=… REDIS_URL=… SECRET_KEY=… BENCH_WATCH="mariadb=PID redis=PID" npm run bench:high-security
 */
const connections = Number(process.env.BENCH_CONNECTIONS ?? 20);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const PASSWORD = 'correct horse battery';
const API = 'https://bench-api.example.com/';
const FORM = 'application/x-www-form-urlencoded';

type PrivateKey = Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
interface Key { privateKey: PrivateKey; jwk: JWK }
const newKey = async (): Promise<Key> => {
  const { privateKey, publicKey } = await generateKeyPair('ES256', { extractable: true });
  return { privateKey, jwk: await exportJWK(publicKey) };
};
/** A DPoP proof (RFC 9449) for one POST to `url`. */
const proof = (key: Key, url: string) => new SignJWT({ htm: 'POST', htu: url, jti: randomUUID() })
  .setProtectedHeader({ typ: 'dpop+jwt', alg: 'ES256', jwk: key.jwk }).setIssuedAt().sign(key.privateKey);

/** The api processes (snapshotOf adds this one and BENCH_WATCH's). */
const watched = (bench: BenchApp): Watched[] => bench.pids.map((pid) => ({ label: 'api', pid, node: true }));

/** A closed loop of refresh grants, each connection chaining its own token; `dpop` signs a proof for each. */
async function refreshes(bench: BenchApp, tokens: string[], keys?: Key[]) {
  const url = `${bench.base}/oidc/token`;
  // the client's proofs are made before the round (closedLoop's request is synchronous), each used once: the server's work is measured
  const perConnection = Math.ceil((duration * 2_000) / connections);
  const ready: string[][] = keys ? await Promise.all(keys.map((k) => Promise.all(Array.from({ length: perConnection }, () => proof(k, url))))) : [];
  return closedLoop({
    url: bench.base, connections, seconds: duration, context: (n: number) => ({ n }),
    request: (c: { n: number }): LoopRequest => ({
      method: 'POST', path: '/oidc/token', headers: { authorization: bench.login, 'content-type': FORM, ...(keys && { dpop: ready[c.n].pop() ?? '' }) },
      body: `grant_type=refresh_token&refresh_token=${encodeURIComponent(tokens[c.n])}`,
    }),
    answer: (c: { n: number }, status: number, body: string) => {
      if (status !== 200) return false;
      tokens[c.n] = JSON.parse(body).refresh_token as string;
      return true;
    },
  });
}

/** Browsers signed in once each (their cookie jars), for code flows answered from the session. */
async function signedInBrowsers(bench: BenchApp): Promise<Map<string, string>[]> {
  const run = Date.now().toString(36);
  return Promise.all(Array.from({ length: connections }, async (_, n) => {
    const email = `flow-${run}-${n}@example.com`;
    const created = await form('/entity.create', { type_name: 'user', attributes: JSON.stringify({ email, password: PASSWORD }) }, bench.owner, bench.base);
    if (created.stat !== 'ok') throw new Error(JSON.stringify(created));
    const page = await browse(`${bench.base}/oidc/auth?${authorization(bench, 'x'.repeat(43), {})}`, {}, new Map(), bench.base);
    const signIn = firstForm(page.body, page.url);
    const back = await browse(signIn.action, { method: 'POST', form: { ...signIn.fields, signInEmailAddress: email, currentPassword: PASSWORD } }, page.jar, bench.base);
    if (!new URL(back.url).searchParams.get('code')) throw new Error(`no code: ${back.url}`);
    return back.jar;
  }));
}

function authorization(bench: BenchApp, challenge: string, extra: Record<string, string>) {
  return new URLSearchParams({
    client_id: bench.loginId, response_type: 'code', scope: 'openid', redirect_uri: CALLBACK, state: 's', code_challenge: challenge, code_challenge_method: 'S256', ...extra,
  });
}

/** Code flows of signed-in browsers for `seconds`: the authorization request, the redirects, the exchange. Answers flows per second and p50/p99. */
async function codeFlows(bench: BenchApp, jars: Map<string, string>[], variant: 'plain' | 'api' | 'dpop', keys: Key[]) {
  const latencies: number[] = [];
  let failed = 0;
  let first: string | undefined;
  const end = Date.now() + duration * 1000;
  const started = Date.now();
  await Promise.all(jars.map(async (jar, n) => {
    while (Date.now() < end) {
      const t0 = performance.now();
      try {
        const verifier = randomBytes(32).toString('base64url');
        const challenge = createHash('sha256').update(verifier).digest('base64url');
        const extra: Record<string, string> = variant === 'api' ? { resource: API, scope: 'openid read' } : {};
        const back = await browse(`${bench.base}/oidc/auth?${authorization(bench, challenge, extra)}`, {}, jar, bench.base);
        const code = new URL(back.url).searchParams.get('code');
        if (!code) throw new Error(`no code: ${back.url}`);
        const res = await fetch(`${bench.base}/oidc/token`, {
          method: 'POST',
          headers: { authorization: bench.login, 'content-type': FORM, ...(variant === 'dpop' && { dpop: await proof(keys[n], `${bench.base}/oidc/token`) }) },
          body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: CALLBACK, code_verifier: verifier }),
        });
        const body = await res.json() as { access_token?: string; token_type?: string };
        if (!body.access_token || (variant === 'dpop' && body.token_type !== 'DPoP')) throw new Error(JSON.stringify(body).slice(0, 300));
      } catch (e) {
        failed++;
        first ??= (e as Error).message;
      }
      latencies.push(performance.now() - t0);
    }
  }));
  const sorted = latencies.sort((a, b) => a - b);
  const at = (q: number) => Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0);
  if (first) process.stderr.write(`${variant} code flow: ${failed} failed, first: ${first}\n`);
  return { total: latencies.length, rps: latencies.length / ((Date.now() - started) / 1000), p50: at(0.5), p99: at(0.99), failed };
}

async function main(): Promise<void> {
  const bench = await startBenchServer();
  try {
    const api = await form('/apis/add', { identifier: API, scopes: 'read' }, bench.owner, bench.base);
    if (api.stat !== 'ok') throw new Error(JSON.stringify(api));
    await openIdCallback(bench);
    const plain = await openIdRefreshTokens(bench, connections, PASSWORD, { callbackSet: true });
    const forApi = await openIdRefreshTokens(bench, connections, PASSWORD, { callbackSet: true, scope: 'openid offline_access read', extra: () => ({ resource: API }) });
    const bound = await openIdRefreshTokens(bench, connections, PASSWORD, { callbackSet: true });
    const keys = await Promise.all(Array.from({ length: connections }, newKey));
    const jars = await signedInBrowsers(bench);
    const watch = watched(bench);
    process.stdout.write(`\n${os.cpus().length} cores, node ${process.version}, ${duration} s per scenario, ${rounds} rounds, ${connections} connections\n\n`);
    const rows: Record<string, { rps: number[]; cpu: string[]; p99: number[] }> = {};
    const keep = (name: string, r: { rps: number; p99: number; failed: number }, cpu: string) => {
      rows[name] ??= { rps: [], cpu: [], p99: [] };
      rows[name].rps.push(r.rps);
      rows[name].p99.push(r.p99);
      rows[name].cpu.push(cpu);
      process.stdout.write(`${name}: ${Math.round(r.rps)}/s, p50 ${'p50' in r ? (r as { p50: number }).p50 : ''} ms, p99 ${r.p99} ms, ${r.failed} failed; ${cpu}\n`);
    };
    const measured = async <R extends { total: number; rps: number; p99: number; failed: number }>(name: string, run: () => Promise<R>) => {
      const before = snapshotOf(watch);
      const r = await run();
      keep(name, r, perOperation(before, snapshotOf(watch), r.total));
    };
    for (let round = 1; round <= rounds; round++) {
      process.stdout.write(`round ${round}\n`);
      await measured('refresh, plain', () => refreshes(bench, plain));
      await measured('refresh, an API\'s JWT', () => refreshes(bench, forApi));
      await measured('refresh, DPoP', () => refreshes(bench, bound, keys));
      await measured('code flow, plain', () => codeFlows(bench, jars, 'plain', keys));
      await measured('code flow, an API\'s JWT', () => codeFlows(bench, jars, 'api', keys));
      await measured('code flow, DPoP', () => codeFlows(bench, jars, 'dpop', keys));
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const ratio = (a: string, b: string) => median(rows[a].rps.map((x, i) => x / rows[b].rps[i])).toFixed(2);
    process.stdout.write('\n| ratio (median of the rounds\') | value |\n|---|---|\n');
    for (const [a, b] of [['refresh, an API\'s JWT', 'refresh, plain'], ['refresh, DPoP', 'refresh, plain'], ['code flow, an API\'s JWT', 'code flow, plain'], ['code flow, DPoP', 'code flow, plain']]) {
      process.stdout.write(`| ${a} ÷ ${b} | ${ratio(a, b)} |\n`);
    }
  } finally {
    await bench.stop();
  }
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack}\n`);
  process.exit(1);
});
