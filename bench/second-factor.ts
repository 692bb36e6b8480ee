import { closedLoop, type LoopRequest } from './closed-loop';
import { perOperation, snapshot } from './cpu';
import { base, duration, form, startBenchServer } from './harness';
import { totpCode, totpStep } from '../src/domain/second-factor';

/*
 * A sign-in with an authenticator app's code beside a sign-in with a password alone, in the same
 * run on the same server, rounds alternating: each of 20 connections signs in its own accounts.
 * The sign-in with a second factor is two requests (the password, answered 214 with an mfa_token;
 * then mfa_verify_native with the code), so its figure is sign-ins per second, not requests. A
 * code is accepted once per account and 30-second step, so the accounts with an authenticator are
 * many, and each signs in with the next step its window allows.
 *   npm run bench:second-factor      (DATABASE_URL, REDIS_URL, SECRET_KEY as for npm run bench)
 */
const connections = Number(process.env.BENCH_CONNECTIONS ?? 20);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const PASSWORD = 'correct horse battery';
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

interface Account { email: string; secret?: string; lastStep: number }

async function accounts(bench: Awaited<ReturnType<typeof startBenchServer>>, count: number, prefix: string): Promise<Account[]> {
  const made: Account[] = [];
  for (let from = 0; from < count; from += 1000) {
    const batch = Array.from({ length: Math.min(1000, count - from) }, (_, i) => ({ email: `${prefix}${from + i}@example.com`, password: PASSWORD }));
    const created = await form('/entity.bulkCreate', { type_name: 'user', all_attributes: JSON.stringify(batch) }, bench.owner);
    if (created.stat !== 'ok') throw new Error(JSON.stringify(created).slice(0, 300));
    made.push(...batch.map((b) => ({ email: b.email, lastStep: 0 })));
  }
  return made;
}

/** Turns each account's authenticator on (a sign-in, then enroll and confirm), 20 at a time. */
async function withAuthenticators(bench: Awaited<ReturnType<typeof startBenchServer>>, list: Account[]): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: connections }, async () => {
    while (next < list.length) {
      const account = list[next++];
      const signed = await form('/oauth/auth_native_traditional', { client_id: bench.loginId, locale: 'en-US', signInEmailAddress: account.email, currentPassword: PASSWORD });
      const enrolled = await form('/oauth/totp_enroll_native', { access_token: String(signed.access_token) });
      const now = new Date();
      const confirmed = await form('/oauth/totp_confirm_native', { access_token: String(signed.access_token), code: totpCode(enrolled.secret, now) });
      if (confirmed.stat !== 'ok') throw new Error(JSON.stringify(confirmed).slice(0, 300));
      account.secret = enrolled.secret;
      account.lastStep = totpStep(now);
    }
  }));
}

const signInRequest = (bench: { loginId: string }, email: string): LoopRequest => ({
  method: 'POST', path: '/oauth/auth_native_traditional', headers: FORM,
  body: new URLSearchParams({ client_id: bench.loginId, locale: 'en-US', signInEmailAddress: email, currentPassword: PASSWORD }).toString(),
});

async function round(bench: Awaited<ReturnType<typeof startBenchServer>>, plain: Account[], pools: Account[][]) {
  const pids = bench.pids;
  let before = snapshot(pids);
  const password = await closedLoop({
    url: base, connections, seconds: duration,
    context: (n) => plain[n],
    request: (a) => signInRequest(bench, a.email),
    answer: (_a, status, body) => status === 200 && body.includes('"stat":"ok"'),
  });
  const passwordCpu = perOperation(before, snapshot(pids), password.total);
  before = snapshot(pids);
  let signIns = 0;
  let waited = 0;
  const twoStep = await closedLoop({
    url: base, connections, seconds: duration,
    context: (n) => ({ pool: pools[n], at: 0, mfa: undefined as string | undefined, account: undefined as Account | undefined, step: 0 }),
    request: (c) => {
      if (c.mfa && c.account) {
        return { method: 'POST', path: '/oauth/mfa_verify_native', headers: FORM,
          body: new URLSearchParams({ client_id: bench.loginId, mfa_token: c.mfa, code: totpCode(c.account.secret!, new Date(c.step * 30_000 + 1_000)) }).toString() };
      }
      // the next account with a step its window still allows
      const now = totpStep(new Date());
      for (let tried = 0; tried < c.pool.length; tried++) {
        const a = c.pool[(c.at + tried) % c.pool.length];
        const step = Math.max(a.lastStep + 1, now - 1);
        if (step <= now + 1) {
          c.at = (c.at + tried + 1) % c.pool.length;
          c.account = a;
          c.step = step;
          a.lastStep = step;
          return signInRequest(bench, a.email);
        }
      }
      throw new Error('every account of a connection used its window: raise BENCH_TOTP_ACCOUNTS');
    },
    answer: (c, _status, body) => {
      const parsed = JSON.parse(body) as Record<string, unknown>;
      if (c.mfa) {
        c.mfa = undefined;
        if (parsed.stat === 'ok') signIns++;
        return parsed.stat === 'ok';
      }
      if (parsed.code !== 214) return false;
      waited++;
      c.mfa = String(parsed.mfa_token);
      return true;
    },
  });
  const twoStepCpu = perOperation(before, snapshot(pids), Math.max(1, signIns));
  const seconds = twoStep.total / twoStep.rps;
  return { password, passwordCpu, twoStep, twoStepCpu, signInsPerSecond: signIns / seconds, paused: waited, signIns };
}

async function main(): Promise<void> {
  const bench = await startBenchServer();
  try {
    const perConnection = Number(process.env.BENCH_TOTP_ACCOUNTS ?? 120);
    const plain = await accounts(bench, connections, `plain${Date.now().toString(36)}-`);
    const totp = await accounts(bench, connections * perConnection, `totp${Date.now().toString(36)}-`);
    await withAuthenticators(bench, totp);
    const pools = Array.from({ length: connections }, (_, n) => totp.slice(n * perConnection, (n + 1) * perConnection));
    process.stdout.write(`${connections} connections, ${duration} s per scenario, ${rounds} rounds, node ${process.version}\n\n`);
    process.stdout.write('| round | password sign-ins/s (p50 / p99 ms) | sign-ins/s with a code (requests/s, p50 / p99 ms per request) | ratio | CPU per password sign-in | CPU per sign-in with a code |\n|---|---|---|---|---|---|\n');
    const ratios: number[] = [];
    for (let r = 1; r <= rounds; r++) {
      const o = await round(bench, plain, pools);
      const ratio = o.signInsPerSecond / o.password.rps;
      ratios.push(ratio);
      process.stdout.write(`| ${r} | ${o.password.rps.toFixed(1)} (${o.password.p50} / ${o.password.p99}) | ${o.signInsPerSecond.toFixed(1)} (${o.twoStep.rps.toFixed(1)}, ${o.twoStep.p50} / ${o.twoStep.p99}) `
        + `| ${ratio.toFixed(2)} | ${o.passwordCpu} | ${o.twoStepCpu} |\n`);
      if (o.password.failed || o.twoStep.failed) process.stdout.write(`failures: ${o.password.failed} / ${o.twoStep.failed}: ${o.password.firstFailure ?? o.twoStep.firstFailure}\n`);
    }
    ratios.sort((a, b) => a - b);
    process.stdout.write(`\nmedian ratio, sign-ins with a code ÷ password sign-ins: ${ratios[Math.floor(ratios.length / 2)].toFixed(2)}\n`);
  } finally {
    await bench.stop();
  }
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack}\n`);
  process.exit(1);
});
