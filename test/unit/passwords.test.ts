import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { createHashThreads, HashThreadError } from '../../src/domain/hash-threads';
import { createPasswordHasher, type PasswordHasher } from '../../src/domain/passwords';

const cheap = { memoryCost: 8192, timeCost: 1, parallelism: 1 };

describe('createPasswordHasher (argon2 on threads of its own)', () => {
  let passwords: PasswordHasher;
  afterEach(() => passwords.close());

  it('hashes with the policy and verifies: right, wrong, and a stored value that is not a hash', async () => {
    passwords = createPasswordHasher(cheap, 2);
    const stored = await passwords.hash('correct horse battery');
    expect(stored).toMatch(/^\$argon2id\$v=19\$m=8192,t=1,p=1\$/);
    const results = await Promise.all([
      passwords.verify(stored, 'correct horse battery'),
      passwords.verify(stored, 'wrong horse'),
      passwords.verify('not a hash', 'correct horse battery'),
      passwords.verifyNothing('correct horse battery'),
    ]);
    expect(results).toEqual([true, false, false, false]);
  });

  it('serves waiting hashes first come first served', async () => {
    passwords = createPasswordHasher(cheap, 1);
    const finished: number[] = [];
    await Promise.all(Array.from({ length: 8 }, (_, i) => passwords.hash(`password ${i}`).then(() => finished.push(i))));
    expect(finished).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });

  it('background hashes (bulk imports) take at most half the threads: requests keep the rest, and the batch still moves', async () => {
    passwords = createPasswordHasher(cheap, 2, 4);
    // both threads started (a thread's first hash also loads the binding)
    await Promise.all([passwords.hash('warm 1'), passwords.hash('warm 2')]);
    const order: string[] = [];
    // far more than the request queue holds (4): the background lane has its own
    const bulk = Promise.all(Array.from({ length: 40 }, (_, i) => passwords.hashInBackground(`bulk ${i}`).then(() => order.push('bulk'))));
    // requests' hashes right behind them: the free thread, not behind 39 bulk hashes (whatever the machine's speed)
    const requests = Promise.all(Array.from({ length: 3 }, (_, i) => passwords.hash(`request ${i}`).then(() => order.push('request'))));
    // the scheduling itself: every request went onto a thread at once, none waits behind the batch
    expect(passwords.waiting()).toBe(0);
    await Promise.all([bulk, requests]);
    const lastRequest = order.lastIndexOf('request');
    expect(lastRequest).toBeGreaterThan(-1);
    // done while most of the batch still waited (a loaded machine may pause one thread for a few
    // bulk hashes on the other, so the bound is loose; a request queued behind the batch would be last)
    expect(lastRequest).toBeLessThan(20);
    expect(order.filter((o) => o === 'bulk')).toHaveLength(40);
  });

  it('fails waiting work with HashThreadError once closed: a broken hasher is never a wrong password', async () => {
    passwords = createPasswordHasher(cheap, 1);
    const stored = await passwords.hash('correct horse battery');
    const pending = Promise.allSettled(Array.from({ length: 4 }, () => passwords.verify(stored, 'correct horse battery')));
    await passwords.close();
    const settled = await pending;
    // the ones the thread had finished answer true; every other one fails, none answers false
    for (const s of settled) {
      if (s.status === 'fulfilled') expect(s.value).toBe(true);
      else expect(s.reason).toBeInstanceOf(HashThreadError);
    }
    expect(settled.some((s) => s.status === 'rejected')).toBe(true);
    await expect(passwords.verify(stored, 'correct horse battery')).rejects.toBeInstanceOf(HashThreadError);
  });

  it('keeps a process alive while a hash is pending, and not once the threads are idle', () => {
    // the compiled module (npm test builds first), as the server loads it
    const script = `const { createPasswordHasher } = require(${JSON.stringify(path.resolve(__dirname, '../../dist/src/domain/passwords.js'))});
      const p = createPasswordHasher(${JSON.stringify(cheap)}, 2);
      p.hash('x').then((h) => p.verify(h, 'x')).then((ok) => process.stdout.write(String(ok)));`;
    const run = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 20_000 });
    expect(run.stderr).toBe('');
    expect(run.stdout).toBe('true');
    expect(run.status).toBe(0);
  });
});

describe('createHashThreads', () => {
  it('replaces a thread that dies (after a pause when it died at once): its jobs fail with HashThreadError, later ones are served', async () => {
    // a stand-in thread that answers the password's length, and dies on "die"
    const program = `const { parentPort } = require('node:worker_threads');
      parentPort.on('message', ({ args }) => args[0] === 'die' ? process.exit(3) : parentPort.postMessage({ value: args[0].length }));`;
    const threads = createHashThreads(1, {}, Infinity, program);
    try {
      const [before, dying, queued] = await Promise.allSettled([threads.hash('abc'), threads.hash('die'), threads.hash('abcdef')]);
      expect(before).toEqual({ status: 'fulfilled', value: 3 });
      expect(dying).toEqual({ status: 'rejected', reason: expect.any(HashThreadError) });
      expect((dying as PromiseRejectedResult).reason.message).toMatch(/exited with code 3/);
      // the job the dead thread held next fails with it; had it been waiting, the new thread serves it
      expect([{ status: 'fulfilled', value: 6 }, { status: 'rejected', reason: expect.any(HashThreadError) }]).toContainEqual(queued);
      expect(await threads.hash('abcd')).toBe(4);
    } finally {
      await threads.close();
    }
  });
});
