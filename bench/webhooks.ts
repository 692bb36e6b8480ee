import http from 'node:http';
import type { ChildProcess } from 'node:child_process';
import autocannon from 'autocannon';
import { newWebhookSecret } from '../src/domain/webhooks';
import { send, signatureHeaders } from '../src/jobs/webhook-sender';
import { perOperation, snapshotOf, type Watched } from './cpu';
import { duration, form, startBenchServer, startBenchWorker, type BenchApp } from './harness';

/*
 * Webhooks, measured in one run:
 * 1. Deliveries per second one worker process makes, from the events in the store to a local
 *    receiver (fan-out, a row per delivery, signed, sent, recorded), beside the ceiling: the same
 *    receiver fed signed POSTs straight from this process at the worker's concurrency.
 * 2. What an endpoint subscribed to user.signed_in adds to a password sign-in: the sign-in without
 *    any endpoint, then with one (the worker delivering meanwhile, on the same cores), in
 *    alternating rounds; beside an earlier release too when BENCH_RELEASE_ROOT names a built
 *    worktree of one (its sign-in, without webhooks).
 * Needs DATABASE_URL (MariaDB), REDIS_URL and SECRET_KEY:
 *   npm run build && node dist/bench/webhooks.js     (BENCH_WEBHOOKS deliveries, default 5000; BENCH_ROUNDS, default 3)
 */
const deliveries = Number(process.env.BENCH_WEBHOOKS ?? 5000);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const PASSWORD = 'correct horse battery';

/** A receiver that answers 204 and counts. */
async function receiver(): Promise<{ url: string; count(): number; lastAt(): number; close(): Promise<void> }> {
  let count = 0;
  let last = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      count++;
      last = Date.now();
      res.writeHead(204).end();
    });
  });
  const port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));
  return {
    url: `http://127.0.0.1:${port}/hook`, count: () => count, lastAt: () => last,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
  };
}


const until = async (check: () => boolean, timeoutMs: number) => {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
};

async function main(): Promise<void> {
  if (!process.env.REDIS_URL || !/^(mysql|mariadb):/.test(process.env.DATABASE_URL ?? '')) throw new Error('the webhooks benchmark needs DATABASE_URL (MariaDB) and REDIS_URL');
  process.env.WEBHOOKS_ALLOW_PRIVATE = 'true';
  process.env.OUTBOX_RELAY_AFTER_SECONDS = '600';
  const sink = await receiver();
  const app = await startBenchServer();
  const releaseRoot = process.env.BENCH_RELEASE_ROOT;
  const release = releaseRoot ? await startBenchServer({
    release: { root: releaseRoot, port: Number(process.env.BENCH_RELEASE_PORT ?? 3918), databaseUrl: process.env.DATABASE_URL!.replace(/\/[^/?]*(\?.*)?$/, '/gatehouse_bench_release') },
  }) : undefined;
  const say = (line: string) => process.stdout.write(`${line}\n`);
  let worker: ChildProcess | undefined;
  try {
    // 1. throughput: the events made while no worker runs, then one worker started
    const added = await form('/webhooks/add', { url: sink.url, events: 'user.created' }, app.owner, app.base);
    if (added.stat !== 'ok') throw new Error(JSON.stringify(added));
    for (let made = 0; made < deliveries; made += 1000) {
      const n = Math.min(1000, deliveries - made);
      const created = await form('/entity.bulkCreate', { type_name: 'user', all_attributes: JSON.stringify(Array.from({ length: n }, (_, i) => ({ email: `wh-${made + i}-${Date.now()}@example.com` }))) }, app.owner, app.base);
      if (created.stat !== 'ok') throw new Error(JSON.stringify(created).slice(0, 300));
    }
    const started = Date.now();
    worker = await startBenchWorker();
    const ready = Date.now();
    await until(() => sink.count() >= deliveries, 600_000);
    const workerRate = deliveries / ((sink.lastAt() - ready) / 1000);

    // the ceiling: signed POSTs straight to the receiver, 16 at a time (the worker's concurrency for the queue)
    const secret = newWebhookSecret();
    const body = JSON.stringify({ type: 'user.created', timestamp: new Date().toISOString(), data: { user_id: 'x', actor: 'client', attributes: ['email'] } });
    const before = sink.count();
    const direct = Date.now();
    let next = 0;
    await Promise.all(Array.from({ length: 16 }, async () => {
      while (next++ < deliveries) await send(sink.url, signatureHeaders([secret], `msg_${next}`, new Date(), body), body, { allowPrivate: true });
    }));
    const directRate = (sink.count() - before) / ((Date.now() - direct) / 1000);
    say('## Webhook deliveries');
    say('');
    say(`| what | deliveries/s | ratio to the ceiling |`);
    say('|---|---|---|');
    say(`| one worker: fan-out, a row, signed, sent, recorded (${deliveries} events made while no worker ran; worker start ${ready - started} ms, not counted) | ${Math.round(workerRate)} | ${(workerRate / directRate).toFixed(2)} |`);
    say(`| ceiling: signed POSTs from one process, 16 at a time | ${Math.round(directRate)} | 1.00 |`);
    say('');

    // 2. what a subscribed endpoint adds to a sign-in
    const account = async (at: BenchApp) => {
      const email = `signin-${Date.now()}@example.com`;
      const made = await form('/entity.create', { type_name: 'user', attributes: JSON.stringify({ email, password: PASSWORD }) }, at.owner, at.base);
      if (made.stat !== 'ok') throw new Error(JSON.stringify(made));
      return email;
    };
    const endpoints = await form('/webhooks/list', {}, app.owner, app.base);
    for (const e of endpoints.results as { id: string }[]) await form('/webhooks/remove', { id: e.id }, app.owner, app.base);
    const email = await account(app);
    const releaseEmail = release ? await account(release) : undefined;
    const watch = (at: BenchApp): Watched[] => [...at.pids.map((pid) => ({ label: 'api', pid, node: true })), { label: 'worker', pid: worker!.pid!, node: true }];
    const signIn = async (at: BenchApp, who: string) => {
      const before = snapshotOf(watch(at));
      const r = await autocannon({
        url: `${at.base}/oauth/auth_native_traditional`, method: 'POST', connections: Number(process.env.BENCH_CONNECTIONS ?? 20), duration, pipelining: 1,
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ client_id: at.loginId, locale: 'en-US', signInEmailAddress: who, currentPassword: PASSWORD }).toString(),
      });
      return { total: r.requests.total, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, failed: r.non2xx + r.errors, cpu: perOperation(before, snapshotOf(watch(at)), r.requests.total) };
    };
    type Run = Awaited<ReturnType<typeof signIn>>;
    const runs: { without: Run[]; with: Run[]; release: Run[] } = { without: [], with: [], release: [] };
    const baseCount = sink.count();
    const delivered = () => sink.count() - baseCount;
    let subscribedSignIns = 0;
    for (let round = 0; round < rounds; round++) {
      // (the two in turn first: neither always runs on a warmer machine)
      if (release && round % 2 === 1) runs.release.push(await signIn(release, releaseEmail!));
      runs.without.push(await signIn(app, email));
      if (release && round % 2 === 0) runs.release.push(await signIn(release, releaseEmail!));
      const hook = await form('/webhooks/add', { url: sink.url, events: 'user.signed_in' }, app.owner, app.base);
      const from = delivered();
      const r = await signIn(app, email);
      runs.with.push(r);
      subscribedSignIns += r.total;
      // the deliveries of the round's sign-ins, before the next round
      await until(() => delivered() - from >= r.total, 120_000).catch(() => undefined);
      await form('/webhooks/remove', { id: hook.result.id }, app.owner, app.base);
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const med = (k: keyof typeof runs) => median(runs[k].map((r) => r.rps));
    say('## A password sign-in with and without a subscribed endpoint');
    say('');
    say('| scenario | requests/s (rounds) | p50 ms | p99 ms | failed | CPU per sign-in |');
    say('|---|---|---|---|---|---|');
    for (const [k, name] of [['without', 'no endpoint'], ['with', 'an endpoint subscribed to user.signed_in (delivered meanwhile)'], ['release', 'the earlier release']] as const) {
      if (runs[k].length === 0) continue;
      say(`| ${name} | ${runs[k].map((r) => Math.round(r.rps)).join(', ')} | ${runs[k].map((r) => r.p50).join(', ')} | ${runs[k].map((r) => r.p99).join(', ')} | ${runs[k].reduce((n, r) => n + r.failed, 0)} | ${runs[k][runs[k].length - 1].cpu} |`);
    }
    say('');
    say(`| ratio (medians of ${rounds} rounds) | |`);
    say('|---|---|');
    say(`| sign-in with an endpoint ÷ without | ${(med('with') / med('without')).toFixed(2)} |`);
    if (release) say(`| sign-in without an endpoint ÷ the earlier release | ${(med('without') / med('release')).toFixed(2)} |`);
    say(`| user.signed_in deliveries received ÷ the subscribed rounds' sign-ins | ${(delivered() / Math.max(1, subscribedSignIns)).toFixed(2)} |`);
  } finally {
    worker?.kill('SIGTERM');
    if (worker) await new Promise((r) => worker!.once('exit', r));
    await app.stop();
    await release?.stop();
    await sink.close();
  }
}

void main().catch((err: Error) => {
  process.stderr.write(`${err.stack ?? err.message}\n`);
  process.exit(1);
});
