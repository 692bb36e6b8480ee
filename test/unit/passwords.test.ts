import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { createLimiter, createPasswordHasher } from '../../src/domain/passwords';

const cheap = { memoryCost: 8192, timeCost: 1, parallelism: 1 };

describe('createLimiter', () => {
  it('runs at most max at once, in arrival order, and frees a slot when work fails', async () => {
    const limiter = createLimiter(2);
    let running = 0;
    let peak = 0;
    const started: number[] = [];
    const gates: Array<() => void> = [];
    const work = (i: number) => limiter.run(async () => {
      started.push(i);
      running++;
      peak = Math.max(peak, running);
      await new Promise<void>((resolve) => gates.push(resolve));
      running--;
      if (i === 0) throw new Error('first fails');
      return i;
    });
    const all = [0, 1, 2, 3, 4].map((i) => work(i).catch((e: Error) => e.message));
    for (let open = 0; open < 5; open++) {
      await new Promise((r) => setImmediate(r));
      expect(running).toBeLessThanOrEqual(2);
      gates.shift()!();
    }
    expect(await Promise.all(all)).toEqual(['first fails', 1, 2, 3, 4]);
    expect(started).toEqual([0, 1, 2, 3, 4]);
    expect(peak).toBe(2);
  });
});

describe('createPasswordHasher', () => {
  it('hashes and verifies through the limiter, one computation at a time when told', async () => {
    const passwords = createPasswordHasher(cheap, 1);
    const stored = await passwords.hash('correct horse');
    const results = await Promise.all([
      passwords.verify(stored, 'correct horse'),
      passwords.verify(stored, 'wrong horse'),
      passwords.verify('not a hash', 'correct horse'),
      passwords.verifyNothing('correct horse'),
    ]);
    expect(results).toEqual([true, false, false, false]);
  });
});

describe('threadpool sizing', () => {
  // threads of a node process once libuv's pool has started, with the given environment
  const threads = (env: Record<string, string>) => {
    // the compiled module (npm test builds first), as the server loads it
    const script = `require(${JSON.stringify(path.resolve(__dirname, '../../dist/src/threadpool.js'))});
      require('node:fs').readFile(__filename, () => process.stdout.write(String(require('node:fs').readdirSync('/proc/self/task').length)));`;
    const run = spawnSync(process.execPath, ['-e', script], {
      env: { PATH: process.env.PATH, ...env }, encoding: 'utf8',
    });
    expect(run.stderr).toBe('');
    return Number(run.stdout);
  };

  (process.platform === 'linux' ? it : it.skip)('gives libuv two threads beyond ARGON2_CONCURRENCY, and leaves an explicit UV_THREADPOOL_SIZE alone', () => {
    const four = threads({ UV_THREADPOOL_SIZE: '4' });
    expect(threads({ ARGON2_CONCURRENCY: '8' })).toBe(four + 6);
    expect(threads({ ARGON2_CONCURRENCY: '8', UV_THREADPOOL_SIZE: '4' })).toBe(four);
    expect(threads({ ARGON2_CONCURRENCY: '1' })).toBe(four); // never fewer than libuv's default 4
  });
});
