import { readFileSync } from 'node:fs';
import { base, duration, form, measure, startBenchServer } from './harness';

/*
 * The entity API at its limits, measured on the bench server:
 *  1. sign-ins (BENCH_CONNECTIONS, default 20) alone, then beside an entity.bulkCreate of 1,000
 *     records with passwords (its hashes on the background lane of the argon2 threads): the
 *     sign-ins' p50/p99 and requests/s as ratios to the run alone, and how long the batch took;
 *  2. entity.find at its limits: a filter of 100 JSON comparisons on BENCH_RECORDS small records
 *     (default 20,000), then with 400 records of 60 KiB beside them (answered, or stopped at
 *     ENTITY_QUERY_TIMEOUT_MS); a page of those 400 (refused: over 10 MiB), and four pages of
 *     what fits at once: time and the api's peak resident memory.
 *   npm run build && node dist/bench/limits.js     (DATABASE_URL, REDIS_URL, SECRET_KEY as for npm run bench)
 */
const connections = Number(process.env.BENCH_CONNECTIONS ?? 20);
const records = Number(process.env.BENCH_RECORDS ?? 20_000);

/** Resident memory of a process now, in MiB (from /proc). */
const rssMiB = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

/** Runs `work`, sampling a process's resident memory every 20 ms: the time it took and the peak. */
async function sampled<T>(pid: number, work: () => Promise<T>): Promise<{ result: T; ms: number; peakMiB: number; beforeMiB: number }> {
  const beforeMiB = rssMiB(pid);
  let peakMiB = beforeMiB;
  const timer = setInterval(() => (peakMiB = Math.max(peakMiB, rssMiB(pid))), 20);
  const started = performance.now();
  try {
    const result = await work();
    return { result, ms: performance.now() - started, peakMiB: Math.max(peakMiB, rssMiB(pid)), beforeMiB };
  } finally {
    clearInterval(timer);
  }
}

async function main(): Promise<void> {
  const bench = await startBenchServer();
  const pid = bench.pids[0];
  const out: string[] = [];
  try {
    // 1. bulkCreate beside sign-ins
    const registered = await form('/oauth/register_native_traditional', {
      client_id: bench.loginId, locale: 'en-US', flow: 'standard', flow_version: '1', emailAddress: 'bench-signin@example.com',
      newPassword: 'correct horse battery', newPasswordConfirm: 'correct horse battery', firstName: 'B', lastName: 'S', displayName: 'bench',
    });
    if (registered.stat !== 'ok') throw new Error(JSON.stringify(registered));
    const signIn = {
      url: `${base}/oauth/auth_native_traditional`, method: 'POST' as const, path: '/oauth/auth_native_traditional',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ client_id: bench.loginId, locale: 'en-US', flow: 'standard', flow_version: '1', signInEmailAddress: 'bench-signin@example.com', currentPassword: 'correct horse battery' }).toString(),
    };
    const probe = await form(signIn.path, Object.fromEntries(new URLSearchParams(signIn.body)));
    if (probe.stat !== 'ok') throw new Error(`a sign-in answered ${JSON.stringify(probe).slice(0, 300)}`);
    const alone = await measure('sign-ins alone', connections, signIn);
    const items = Array.from({ length: 1000 }, (_, i) => ({ email: `bulk${i}-${Date.now()}@example.com`, password: `bulk password ${i}` }));
    const bulkStarted = performance.now();
    let bulkMs = 0;
    const bulk = form('/entity.bulkCreate', { type_name: 'user', all_attributes: JSON.stringify(items) }, bench.owner).then((r) => {
      bulkMs = performance.now() - bulkStarted;
      return r;
    });
    const beside = await measure('sign-ins beside bulkCreate of 1,000 with passwords', connections, signIn);
    const created = await bulk;
    if (created.stat !== 'ok') throw new Error(`bulkCreate: ${JSON.stringify(created).slice(0, 300)}`);
    out.push(`| scenario | requests/s | p50 ms | p99 ms | ratio of requests/s | ratio of p99 | failed |`, '|---|---|---|---|---|---|---|');
    for (const f of [alone, beside]) out.push(`| ${f.name} | ${Math.round(f.rps)} | ${f.p50} | ${f.p99} | ${(f.rps / alone.rps).toFixed(2)} | ${(f.p99 / alone.p99).toFixed(2)} | ${f.failed} |`);
    out.push('', `bulkCreate of 1,000 records with passwords: ${(bulkMs / 1000).toFixed(1)} s (${created.results.length} created) beside ${connections} connections signing in for ${duration} s`);

    // 2. entity.find at its limits: small records first, then 400 of 60 KiB
    const seed = async (count: number, make: (i: number) => Record<string, unknown>, perCall: number) => {
      for (let at = 0; at < count; at += perCall) {
        const batch = Array.from({ length: Math.min(perCall, count - at) }, (_, i) => make(at + i));
        const res = await form('/entity.bulkCreate', { type_name: 'user', all_attributes: JSON.stringify(batch) }, bench.owner);
        if (res.stat !== 'ok') throw new Error(`seeding: ${JSON.stringify(res).slice(0, 300)}`);
      }
    };
    const answer = (r: Record<string, any>) => (r.stat === 'ok' ? `${r.result_count ?? r.total_count} records` : `${r.code} naming ${r.argument_name}`);
    const row = (call: string, m: { result: Record<string, any>; ms: number; beforeMiB: number; peakMiB: number }) =>
      `| ${call} | ${answer(m.result)} | ${Math.round(m.ms)} | ${Math.round(m.beforeMiB)} → ${Math.round(m.peakMiB)} |`;
    await seed(records, (i) => ({ displayName: `user ${i}`, address: { city: `c${i % 7}`, zip: String(i) } }), 1000);
    const terms = Array.from({ length: 100 }, (_, i) => `address.zip = '${i * 97}x'`).join(' or ');
    const heavy = await sampled(pid, () => form('/entity.find', { type_name: 'user', filter: terms, sort_on: '["-displayName"]' }, bench.owner));
    const counted = await sampled(pid, () => form('/entity.count', { type_name: 'user', filter: terms }, bench.owner));
    await seed(400, () => ({ big: true, filler: 'x'.repeat(60 * 1024) }), 100);
    const heavyBig = await sampled(pid, () => form('/entity.find', { type_name: 'user', filter: terms, sort_on: '["-displayName"]' }, bench.owner));
    const refused = await sampled(pid, () => form('/entity.find', { type_name: 'user', filter: 'big = true' }, bench.owner));
    const fits = Number(/at most (\d+) records/.exec(String(refused.result.error_description))?.[1] ?? 0);
    const pages = await sampled(pid, () => Promise.all([0, 1, 2, 3].map(() => form('/entity.find', { type_name: 'user', filter: 'big = true', max_results: String(fits) }, bench.owner))));
    out.push('', `entity.find at its limits (ENTITY_QUERY_TIMEOUT_MS ${process.env.ENTITY_QUERY_TIMEOUT_MS ?? 5000}):`, '',
      '| call | answer | ms | api RSS before → peak (MiB) |', '|---|---|---|---|',
      row(`find, 100 JSON comparisons, sorted, ${records} records of ~100 bytes`, heavy),
      row(`count, the same filter`, counted),
      row(`find, the same filter, with 400 records of 60 KiB added`, heavyBig),
      row('find of the 400 records of 60 KiB (24 MiB)', refused),
      `| 4 × find of the ${fits} that fit (10 MiB each), at once | ${pages.result.map(answer).join(', ')} | ${Math.round(pages.ms)} | ${Math.round(pages.beforeMiB)} → ${Math.round(pages.peakMiB)} |`);
    process.stdout.write(`\n${connections} connections, ${duration} s, node ${process.version}\n\n${out.join('\n')}\n`);
  } finally {
    await bench.stop();
  }
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack}\n`);
  process.exit(1);
});
