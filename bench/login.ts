import { Algorithm, hash, verify } from '@node-rs/argon2';
import { OWASP_ARGON2ID } from '../src/domain/passwords';
import { base, duration, form, measure, startBenchServer, table } from './harness';

/*
 * Sign-in and registration throughput beside the raw argon2id work they cannot avoid, measured in
 * the same run on the same cores: verifies/s (sign-in) and hashes/s (registration) at the same
 * concurrency. The request path should add little over the hash.
 *   npm run build && node dist/bench/login.js      (DATABASE_URL, REDIS_URL, SECRET_KEY as for npm run bench)
 */
const connections = Number(process.env.BENCH_CONNECTIONS ?? 20);
const options = { ...OWASP_ARGON2ID, algorithm: Algorithm.Argon2id };

/** Operations per second of `op` run `concurrency` at a time for `seconds`. */
async function rate(op: () => Promise<unknown>, concurrency: number, seconds: number): Promise<number> {
  let done = 0;
  const end = Date.now() + seconds * 1000;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (Date.now() < end) {
      await op();
      done++;
    }
  }));
  return done / seconds;
}

async function main(): Promise<void> {
  const stored = await hash('correct horse battery', options);
  const verifies = await rate(() => verify(stored, 'correct horse battery'), connections, duration);
  const hashes = await rate(() => hash('correct horse battery', options), connections, duration);

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
    process.stdout.write(`raw argon2id (m=${options.memoryCost}, t=${options.timeCost}, p=${options.parallelism}): ${verifies.toFixed(1)} verifies/s, ${hashes.toFixed(1)} hashes/s\n\n`);
    process.stdout.write(`${table([floor, signIn], verifies, 'raw verifies/s')}\n${table([register], hashes, 'raw hashes/s').split('\n').slice(2).join('\n')}\n`);
  } finally {
    await bench.stop();
  }
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack}\n`);
  process.exit(1);
});
