import os from 'node:os';
import { closedLoop, type LoopRequest, type LoopResult } from './closed-loop';
import { perOperation, snapshotOf, type Watched } from './cpu';
import { duration, form, startBenchServer, type BenchApp } from './harness';
import { openIdCallback, openIdRefreshTokens } from './oidc-flow';

/*
 * Organizations in the OpenID provider's tokens, measured in one run, alternating round by round,
 * every account a member of BENCH_ORGANIZATIONS organizations (default 50):
 * - the plain refresh_token grant at /oidc/token (scope openid offline_access): the yardstick;
 * - the same grant for a sign-in with the scope organizations (its ID token lists the 50);
 * - the same grant for a sign-in that asked for one organization (a JWT access token with org_id,
 *   org_roles and org_permissions, read for each token);
 * - the token exchange of a refresh token for an organization's access token (switching);
 * - the plain refresh of an earlier release when BENCH_RELEASE_ROOT names a built worktree of one;
 * and the whole code flow through the hosted sign-in (argon2 included), with and without the
 * scope organizations, in ms per sign-in.
 *   DATABASE_URL=mysql://… REDIS_URL=… SECRET_KEY=… npm run bench:organizations
 * (also on the embedded default without DATABASE_URL; BENCH_CONNECTIONS default 20, BENCH_ROUNDS 3)
 */
const connections = Number(process.env.BENCH_CONNECTIONS ?? 20);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const organizations = Number(process.env.BENCH_ORGANIZATIONS ?? 50);
const PASSWORD = 'correct horse battery';
const FORM = 'application/x-www-form-urlencoded';
const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const say = (line = '') => process.stdout.write(`${line}\n`);

interface Row extends LoopResult { cpu: string }

/** Each connection chains its own refresh token, rotation after rotation. */
function refreshLoop(app: BenchApp, tokens: string[]) {
  return {
    url: app.base, connections, seconds: duration,
    context: (n: number) => ({ n }),
    request: (c: { n: number }): LoopRequest => ({
      method: 'POST', path: '/oidc/token', headers: { authorization: app.login, 'content-type': FORM },
      body: `grant_type=refresh_token&refresh_token=${encodeURIComponent(tokens[c.n])}`,
    }),
    answer: (c: { n: number }, status: number, body: string) => {
      if (status !== 200) return false;
      const next = (JSON.parse(body) as { refresh_token?: string }).refresh_token;
      if (!next) return false;
      tokens[c.n] = next;
      return true;
    },
  };
}

/** Each connection exchanges its refresh token for one of its organizations' access tokens, a different one each time. */
function exchangeLoop(app: BenchApp, tokens: string[], orgs: string[]) {
  return {
    url: app.base, connections, seconds: duration,
    context: (n: number) => ({ n, i: n }),
    request: (c: { n: number; i: number }): LoopRequest => ({
      method: 'POST', path: '/oidc/token', headers: { authorization: app.login, 'content-type': FORM },
      body: new URLSearchParams({
        grant_type: TOKEN_EXCHANGE, subject_token: tokens[c.n], subject_token_type: 'urn:ietf:params:oauth:token-type:refresh_token', organization: orgs[c.i++ % orgs.length],
      }).toString(),
    }),
    answer: (_c: unknown, status: number, body: string) => status === 200 && body.includes('"access_token"'),
  };
}

async function main(): Promise<void> {
  const bench = await startBenchServer();
  const releaseRoot = process.env.BENCH_RELEASE_ROOT;
  if (releaseRoot && !process.env.DATABASE_URL) throw new Error('BENCH_RELEASE_ROOT needs DATABASE_URL (MariaDB): the earlier release runs on a database of its own beside it');
  const release = releaseRoot ? await startBenchServer({
    release: { root: releaseRoot, port: Number(process.env.BENCH_RELEASE_PORT ?? 3918), databaseUrl: process.env.DATABASE_URL!.replace(/\/[^/?]*(\?.*)?$/, '/gatehouse_bench_release') },
  }) : undefined;
  try {
    // the accounts, each a member of every organization (with a role that gives permissions)
    await openIdCallback(bench);
    const run = Date.now().toString(36);
    const emails: string[] = [];
    const uuids: string[] = [];
    for (let n = 0; n < connections; n++) {
      const email = `org-${run}-${n}@example.com`;
      const created = await form('/entity.create', { type_name: 'user', attributes: JSON.stringify({ email, password: PASSWORD }) }, bench.owner);
      if (created.stat !== 'ok') throw new Error(JSON.stringify(created));
      emails.push(email);
      uuids.push((await form('/entity', { type_name: 'user', id: String(created.id) }, bench.owner)).result.uuid as string);
    }
    await form('/organizations/roles/define', { name: 'billing', permissions: 'read:invoices pay:invoices' }, bench.owner);
    await form('/settings/set_default', { key: 'organization_max_per_account', value: String(Math.max(100, organizations)) }, bench.owner);
    const orgs: string[] = [];
    for (let o = 0; o < organizations; o++) {
      const made = await form('/organizations/create', { name: `Customer ${o}`, slug: `customer-${run}-${o}` }, bench.owner);
      if (made.stat !== 'ok') throw new Error(JSON.stringify(made));
      orgs.push(made.id as string);
      for (const uuid of uuids) {
        const added = await form('/organizations/members/add', { organization_id: made.id as string, uuid, roles: o % 2 === 0 ? 'billing,member' : 'member' }, bench.owner);
        if (added.stat !== 'ok') throw new Error(JSON.stringify(added));
      }
    }
    const flows = { emails, callbackSet: true };
    const plain = await openIdRefreshTokens(bench, connections, PASSWORD, flows);
    const scoped = await openIdRefreshTokens(bench, connections, PASSWORD, { ...flows, scope: 'openid offline_access organizations' });
    const organizationTokens = await openIdRefreshTokens(bench, connections, PASSWORD, { ...flows, extra: (n) => ({ organization: orgs[n % orgs.length] }) });
    const exchange = await openIdRefreshTokens(bench, connections, PASSWORD, flows);
    const releasePlain = release ? await openIdRefreshTokens(release, connections, PASSWORD) : [];

    const watch = (b: BenchApp): Watched[] => b.pids.map((pid) => ({ label: 'api', pid, node: true }));
    const measure = async (b: BenchApp, loop: Parameters<typeof closedLoop>[0]): Promise<Row> => {
      const before = snapshotOf(watch(b));
      const r = await closedLoop(loop as Parameters<typeof closedLoop<unknown>>[0]);
      if (r.failed > 0) process.stderr.write(`${r.failed} failed: ${r.firstFailure}\n`);
      return { ...r, cpu: perOperation(before, snapshotOf(watch(b)), r.total) };
    };
    const scenarios: { key: string; name: string; app: BenchApp; loop: () => Parameters<typeof closedLoop>[0] }[] = [
      { key: 'plain', name: 'refresh, scope openid offline_access (the yardstick)', app: bench, loop: () => refreshLoop(bench, plain) as never },
      { key: 'scoped', name: `refresh, scope organizations: the ID token lists ${organizations} organizations`, app: bench, loop: () => refreshLoop(bench, scoped) as never },
      { key: 'organization', name: 'refresh of an organization\'s token: a JWT with org_id, org_roles, org_permissions', app: bench, loop: () => refreshLoop(bench, organizationTokens) as never },
      { key: 'exchange', name: 'token exchange of a refresh token for an organization\'s token (switching)', app: bench, loop: () => exchangeLoop(bench, exchange, orgs) as never },
      ...(release ? [{ key: 'release', name: 'refresh, scope openid offline_access, the earlier release', app: release, loop: () => refreshLoop(release, releasePlain) as never }] : []),
    ];
    // warm-up
    for (const s of scenarios) await closedLoop({ ...(s.loop() as object), seconds: 2 } as Parameters<typeof closedLoop>[0]);
    const results = new Map<string, Row[]>(scenarios.map((s) => [s.key, []]));
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? scenarios : [...scenarios].reverse();
      for (const s of order) results.get(s.key)!.push(await measure(s.app, s.loop()));
    }
    const median = (rows: Row[]) => [...rows].sort((a, b) => a.rps - b.rps)[Math.floor(rows.length / 2)];
    const yardstick = median(results.get('plain')!).rps;
    say(`\n${os.cpus().length} cores, node ${process.version}, ${process.env.DATABASE_URL ? 'MariaDB' : 'SQLite'}${process.env.REDIS_URL ? ' + Redis' : ''}, `
      + `${connections} connections, ${duration} s per scenario, ${rounds} rounds alternating, each account in ${organizations} organizations\n`);
    say('| scenario | requests/s (median) | p50 ms | p99 ms | ÷ plain refresh | failed | CPU per request |');
    say('|---|---|---|---|---|---|---|');
    for (const s of scenarios) {
      const rows = results.get(s.key)!;
      const m = median(rows);
      say(`| ${s.name} | ${Math.round(m.rps)} | ${m.p50.toFixed(1)} | ${m.p99.toFixed(1)} | ${(m.rps / yardstick).toFixed(2)} | ${rows.reduce((n, r) => n + r.failed, 0)} | ${m.cpu} |`);
    }

    // the whole sign-in, with and without the scope organizations, alternating
    const perSignIn = { without: [] as number[], with: [] as number[] };
    for (let round = 0; round < rounds; round++) {
      for (const key of round % 2 === 0 ? ['without', 'with'] as const : ['with', 'without'] as const) {
        const t0 = process.hrtime.bigint();
        await openIdRefreshTokens(bench, connections, PASSWORD, { ...flows, ...(key === 'with' && { scope: 'openid offline_access organizations' }) });
        perSignIn[key].push(Number(process.hrtime.bigint() - t0) / 1e6 / connections);
      }
    }
    const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    say('');
    say('| the whole code flow (authorization request, hosted sign-in with argon2, code exchange), one at a time | ms per sign-in (median of rounds) |');
    say('|---|---|');
    say(`| scope openid offline_access | ${med(perSignIn.without).toFixed(1)} |`);
    say(`| scope openid offline_access organizations (${organizations} organizations) | ${med(perSignIn.with).toFixed(1)} (÷ without: ${(med(perSignIn.without) / med(perSignIn.with)).toFixed(2)} of its rate) |`);
  } finally {
    await release?.stop();
    await bench.stop();
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`${(e as Error).stack ?? String(e)}\n`);
  process.exit(1);
});
