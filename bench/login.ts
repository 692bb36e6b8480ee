import { spawnSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { hash, verify } from '@node-rs/argon2';
import { ARGON2ID, createPasswordHasher, OWASP_ARGON2ID } from '../src/domain/passwords';
import { perOperation, snapshot } from './cpu';
import { base, duration, form, measure, startBenchServer, table } from './harness';

/*
 * Sign-in and registration throughput beside the raw argon2id work they cannot avoid, measured in
 * the same run on the same cores: verifies/s (sign-in) and hashes/s (registration), fed by as
 * many callers as the load has connections, three ways — through the server's own hasher (its
 * argon2 threads: ARGON2_CONCURRENCY, default one per core), straight into the
 * binding with libuv's default pool of four threads, and straight into it in a process whose pool
 * has one thread per core — and the best of the three is the yardstick. The request path should
 * add little over the hash. Each scenario also reports where its CPU went.
 *   npm run build && node dist/bench/login.js      (DATABASE_URL, REDIS_URL, SECRET_KEY as for npm run bench)
 */
const connections = Number(process.env.BENCH_CONNECTIONS ?? 20);
const concurrency = Number(process.env.ARGON2_CONCURRENCY) || availableParallelism();
const hasher = createPasswordHasher(OWASP_ARGON2ID, concurrency);
const options = { ...OWASP_ARGON2ID, algorithm: ARGON2ID };

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

type Rate = Awaited<ReturnType<typeof rate>>;

/** Raw verifies and hashes straight into the binding, run by this process's libuv pool. */
async function straight(stored: string): Promise<{ verify: Rate; hash: Rate }> {
  return {
    verify: await rate(() => verify(stored, 'correct horse battery'), connections, duration),
    hash: await rate(() => hash('correct horse battery', options), connections, duration),
  };
}

/** The same in a child process whose libuv pool has one thread per core (libuv reads the size at start). */
function straightOnePerCore(stored: string): { verify: Rate; hash: Rate } {
  const child = spawnSync(process.execPath, [__filename, 'straight', stored], {
    env: { ...process.env, UV_THREADPOOL_SIZE: String(availableParallelism()) }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (child.status !== 0) throw new Error('the one-thread-per-core raw measurement failed');
  return JSON.parse(child.stdout);
}

async function main(): Promise<void> {
  const stored = await hasher.hash('correct horse battery');
  const pool = await straight(stored);
  const perCore = straightOnePerCore(stored);
  const raws = {
    verify: [await rate(() => hasher.verify(stored, 'correct horse battery'), connections, duration), pool.verify, perCore.verify],
    hash: [await rate(() => hasher.hash('correct horse battery'), connections, duration), pool.hash, perCore.hash],
  };
  const best = (rates: Rate[]) => Math.max(...rates.map((r) => r.rate));
  const verifies = best(raws.verify);
  const hashes = best(raws.hash);

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
    /** Form posts to `path` whose body `make` draws anew for every request. */
    const varying = (path: string, make: () => Record<string, string>) => ({
      url: base,
      requests: [{
        method: 'POST' as const, path, headers: { 'content-type': 'application/x-www-form-urlencoded' },
        setupRequest: (req: object) => ({ ...req, body: new URLSearchParams({ ...shared, ...make() }).toString() }),
      }],
    });
    let n = 0;
    const register = await measure('POST /oauth/register_native_traditional', connections, varying('/oauth/register_native_traditional', () => ({
      emailAddress: `user${n++}-${Date.now()}@example.com`, newPassword: 'correct horse battery',
      newPasswordConfirm: 'correct horse battery', firstName: 'Bench', lastName: 'Mark', displayName: 'bench',
    })));
    // a profile edit (no password: no argon2): the record locked, changed and its snapshot written
    const baseline = await measure('GET /bench/baseline', connections, { url: `${base}/bench/baseline` });
    let edits = 0;
    const edit = await measure('POST /oauth/update_profile_native (editProfileForm)', connections, varying('/oauth/update_profile_native', () => ({
      form: 'editProfileForm', access_token: String(registered.access_token), displayName: `bench ${edits++}`,
    })));
    const ways = ['the server\'s hasher', `pool of ${process.env.UV_THREADPOOL_SIZE ?? 4}`, `pool of ${availableParallelism()}`];
    process.stdout.write(`\n${connections} connections, ${duration} s each, node ${process.version}\n`);
    process.stdout.write(`raw argon2id (m=${OWASP_ARGON2ID.memoryCost}, t=${OWASP_ARGON2ID.timeCost}, p=${OWASP_ARGON2ID.parallelism}), `
      + `the server's hasher (${concurrency} threads) / ${ways[1]} / ${ways[2]}: `
      + `${raws.verify.map((r) => r.rate.toFixed(1)).join(' / ')} verifies/s, ${raws.hash.map((r) => r.rate.toFixed(1)).join(' / ')} hashes/s (the best is the yardstick)\n\n`);
    process.stdout.write(`${table([floor, signIn], verifies, 'raw verifies/s')}\n${table([register], hashes, 'raw hashes/s').split('\n').slice(2).join('\n')}\n\n`);
    process.stdout.write(`${table([baseline, edit], baseline.rps, 'the baseline')}\n\n`);
    for (const [name, cpu] of [
      ...raws.verify.map((r, i) => [`raw verify, ${ways[i]}`, r.cpu]), ...raws.hash.map((r, i) => [`raw hash, ${ways[i]}`, r.cpu]),
      ...[floor, signIn, register, baseline, edit].map((f) => [f.name, f.cpu])]) {
      process.stdout.write(`${name}: ${cpu}\n`);
    }
  } finally {
    await bench.stop();
  }
}

(process.argv[2] === 'straight'
  ? straight(process.argv[3]).then((r) => void process.stdout.write(JSON.stringify(r)))
  : main()
).catch((e) => {
  process.stderr.write(`${(e as Error).stack}\n`);
  process.exit(1);
});
