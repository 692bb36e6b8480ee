import { availableParallelism } from 'node:os';
import { createPasswordHasher, OWASP_ARGON2ID } from '../src/domain/passwords';
import { perOperation, snapshot } from './cpu';
import { base, duration, form, measure, startBenchServer, table } from './harness';

/*
 * Sign-in and registration throughput beside the raw argon2id work they cannot avoid, measured in
 * the same run on the same cores: verifies/s (sign-in) and hashes/s (registration) through the
 * server's own hasher, as many at once as the server runs (ARGON2_CONCURRENCY, default one per
 * core), fed by as many callers as the load has connections. The request path should add little
 * over the hash. Each scenario also reports where its CPU went (cpu.ts).
 *   npm run build && node dist/bench/login.js      (DATABASE_URL, REDIS_URL, SECRET_KEY as for npm run bench)
 */
const connections = Number(process.env.BENCH_CONNECTIONS ?? 20);
const concurrency = Number(process.env.ARGON2_CONCURRENCY) || availableParallelism();
const raw = createPasswordHasher(OWASP_ARGON2ID, concurrency);

/** Operations per second of `op` run `concurrency` at a time for `seconds`, and where the CPU went. */
async function rate(op: () => Promise<unknown>, concurrency: number, seconds: number): Promise<{ rate: number; cpu: string }> {
  const before = snapshot();
  let done = 0;
  const end = Date.now() + seconds * 1000;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (Date.now() < end) {
      await op();
      done++;
    }
  }));
  return { rate: done / seconds, cpu: perOperation(before, snapshot(), done) };
}

async function main(): Promise<void> {
  const stored = await raw.hash('correct horse battery');
  const rawVerify = await rate(() => raw.verify(stored, 'correct horse battery'), connections, duration);
  const rawHash = await rate(() => raw.hash('correct horse battery'), connections, duration);
  const verifies = rawVerify.rate;
  const hashes = rawHash.rate;

  const bench = await startBenchServer();
  try {
    const shared = { client_id: bench.loginId, locale: 'en-US' };
    const registered = await form('/oauth/register_native_traditional', {
      ...shared, emailAddress: 'bench@example.com', newPassword: 'correct horse battery', newPasswordConfirm: 'correct horse battery',
      firstName: 'Bench', lastName: 'Mark', displayName: 'bench',
    });
    if (registered.stat !== 'ok') throw new Error(JSON.stringify(registered));
    const floor = await measure('POST /bench/verify (HTTP + verify only)', connections, {
      url: `${base}/bench/verify`,
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'currentPassword=correct+horse+battery',
    });
    const signIn = await measure('POST /oauth/auth_native_traditional', connections, {
      url: `${base}/oauth/auth_native_traditional`,
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ ...shared, signInEmailAddress: 'bench@example.com', currentPassword: 'correct horse battery' }).toString(),
    });
    let n = 0;
    const register = await measure('POST /oauth/register_native_traditional', connections, {
      url: base,
      requests: [{
        method: 'POST',
        path: '/oauth/register_native_traditional',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        setupRequest: (req) => ({
          ...req,
          body: new URLSearchParams({
            ...shared, emailAddress: `user${n++}-${Date.now()}@example.com`, newPassword: 'correct horse battery',
            newPasswordConfirm: 'correct horse battery', firstName: 'Bench', lastName: 'Mark', displayName: 'bench',
          }).toString(),
        }),
      }],
    });
    process.stdout.write(`\n${connections} connections, ${duration} s each, node ${process.version}\n`);
    process.stdout.write(`raw argon2id (m=${OWASP_ARGON2ID.memoryCost}, t=${OWASP_ARGON2ID.timeCost}, p=${OWASP_ARGON2ID.parallelism}, ${concurrency} at once): ${verifies.toFixed(1)} verifies/s, ${hashes.toFixed(1)} hashes/s\n\n`);
    process.stdout.write(`${table([floor, signIn], verifies, 'raw verifies/s')}\n${table([register], hashes, 'raw hashes/s').split('\n').slice(2).join('\n')}\n\n`);
    for (const [name, cpu] of [['raw verify', rawVerify.cpu], ['raw hash', rawHash.cpu], ...[floor, signIn, register].map((f) => [f.name, f.cpu])]) {
      process.stdout.write(`${name}: ${cpu}\n`);
    }
  } finally {
    await bench.stop();
  }
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack}\n`);
  process.exit(1);
});
