import { randomBytes } from 'node:crypto';
import IORedis from 'ioredis';
import { createRateLimiter, type RateLimiter } from '../../src/domain/rate-limit';
import { DependencyDownError, LimitReachedError } from '../../src/domain/refusal';
import { redisUrl, skipUnless } from '../helpers/backend';

const one = { max: 1, windowSeconds: 60 };
const three = { max: 3, windowSeconds: 60 };

/** How many of `n` parallel takes of `budgets` the limiter allowed. */
async function allowed(limiter: RateLimiter, n: number, budgets: Parameters<RateLimiter['take']>[0]): Promise<number> {
  const outcomes = await Promise.allSettled(Array.from({ length: n }, () => limiter.take(budgets)));
  for (const o of outcomes) if (o.status === 'rejected') expect(o.reason).toBeInstanceOf(LimitReachedError);
  return outcomes.filter((o) => o.status === 'fulfilled').length;
}

/** The same behaviour wherever the counters live. */
function behaves(name: string, make: () => Promise<{ limiter: RateLimiter; close?: () => Promise<void> | void }>) {
  describe(name, () => {
    let limiter: RateLimiter;
    let close: (() => Promise<void> | void) | undefined;
    beforeEach(async () => ({ limiter, close } = await make()));
    afterEach(() => close?.());

    it('takes from every budget or from none: a request one budget refuses spends nothing of the others', async () => {
      await limiter.take([['spent', one]]);
      for (let i = 0; i < 5; i++) await expect(limiter.take([['spent', one], ['other', three]])).rejects.toBeInstanceOf(LimitReachedError);
      // `other` still has its three attempts
      expect(await allowed(limiter, 5, [['other', three]])).toBe(3);
    });

    it('answers the seconds until the spent window ends', async () => {
      await limiter.take([['wait', { max: 1, windowSeconds: 90 }]]);
      const refused = await limiter.take([['wait', { max: 1, windowSeconds: 90 }]]).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(LimitReachedError);
      const wait = (refused as LimitReachedError).retryAfterSeconds;
      expect(wait).toBeGreaterThan(85);
      expect(wait).toBeLessThanOrEqual(90);
    });

    it('holds under parallel requests: 40 at once against a budget of 3 get exactly 3', async () => {
      expect(await allowed(limiter, 40, [['burst', three], ['wide', { max: 1000, windowSeconds: 60 }]])).toBe(3);
    });

    it('settle clears one key and gives one attempt back to another, and ignores keys it did not take', async () => {
      await limiter.take([['account', three]]);
      await limiter.take([['account', three]]);
      const taken = await limiter.take([['account', three], ['address', one]]);
      await taken.settle({ clear: ['account'], giveBack: ['address', 'never-taken'] });
      // the account's count is forgotten, the address has its attempt back, and nothing else was touched
      expect(await allowed(limiter, 5, [['account', three]])).toBe(3);
      expect(await allowed(limiter, 3, [['address', one]])).toBe(1);
      expect(await allowed(limiter, 5, [['never-taken', three]])).toBe(3);
    });

    it('a give-back never goes below zero', async () => {
      const taken = await limiter.take([['floor', one]]);
      await taken.settle({ giveBack: ['floor'] });
      await taken.settle({ giveBack: ['floor'] });
      expect(await allowed(limiter, 4, [['floor', one]])).toBe(1);
    });

    it('books turns a delay apart, the first a delay from now, at most `waiting` ahead; a key booked by nobody starts again', async () => {
      const spacing = { delayMs: 1_000, waiting: 3 };
      const booked = await Promise.all(Array.from({ length: 5 }, () => limiter.turn('turns', spacing)));
      const waits = booked.filter((w): w is number => w !== undefined).sort((a, b) => a - b);
      expect(booked.filter((w) => w === undefined)).toHaveLength(2);
      // each a delay after the one before (give or take the milliseconds between the bookings)
      expect(waits).toHaveLength(3);
      for (const [i, w] of waits.entries()) expect(Math.abs(w - (i + 1) * spacing.delayMs)).toBeLessThan(200);
      const other = await limiter.turn('other turns', spacing);
      expect(Math.abs(other! - spacing.delayMs)).toBeLessThan(200);
    });
  });
}

behaves('in memory (the embedded default)', async () => ({ limiter: createRateLimiter() }));

skipUnless(redisUrl !== undefined, 'the Redis limiter tests need REDIS_URL')('with Redis', () => {
  /** A connection as the api opens it, once it is ready (before that, the limiter counts in memory). */
  const connect = async () => {
    const redis = new IORedis(redisUrl!, { enableOfflineQueue: false, maxRetriesPerRequest: 1, enableAutoPipelining: true });
    await new Promise((resolve) => redis.once('ready', resolve));
    return redis;
  };
  const prefix = () => `test-${randomBytes(4).toString('hex')}`;

  behaves('in Redis (shared by every pod)', async () => {
    const redis = await connect();
    return { limiter: createRateLimiter({ redis, prefix: prefix() }), close: () => redis.quit().then(() => undefined) };
  });

  it('keeps its counters in Redis, each expiring with its window', async () => {
    const redis = await connect();
    try {
      const p = prefix();
      await createRateLimiter({ redis, prefix: p }).take([['login:account:7:seen', { max: 5, windowSeconds: 120 }]]);
      // hash-tagged by application: one script's keys share a slot on a Redis Cluster
      expect(await redis.get(`${p}:rl:{a7}:login:account:7:seen`)).toBe('1');
      expect(await redis.pttl(`${p}:rl:{a7}:login:account:7:seen`)).toBeGreaterThan(115_000);
    } finally {
      await redis.quit();
    }
  });

  it('Redis answering with an error fails closed (503), instead of counting in memory', async () => {
    const redis = await connect();
    try {
      const p = prefix();
      await redis.rpush(`${p}:rl:{a1}:login:account:1:clash`, 'not a counter');
      await expect(createRateLimiter({ redis, prefix: p }).take([['login:account:1:clash', three]]))
        .rejects.toBeInstanceOf(DependencyDownError);
    } finally {
      await redis.quit();
    }
  });

  it('two limiters on one Redis share every budget (two pods)', async () => {
    const [a, b] = await Promise.all([connect(), connect()]);
    try {
      const p = prefix();
      const pods = [createRateLimiter({ redis: a, prefix: p }), createRateLimiter({ redis: b, prefix: p })];
      const outcomes = await Promise.allSettled(Array.from({ length: 30 }, (_, i) => pods[i % 2].take([['shared', { max: 7, windowSeconds: 60 }]])));
      expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(7);
    } finally {
      await Promise.all([a.quit(), b.quit()]);
    }
  });

  it('two limiters on one Redis share the turns (two pods): each pod books after the other\'s', async () => {
    const [a, b] = await Promise.all([connect(), connect()]);
    try {
      const p = prefix();
      const pods = [createRateLimiter({ redis: a, prefix: p }), createRateLimiter({ redis: b, prefix: p })];
      const spacing = { delayMs: 2_000, waiting: 4 };
      const booked = await Promise.all(Array.from({ length: 6 }, (_, i) => pods[i % 2].turn('device:turn:3:203.0.113.4', spacing)));
      expect(booked.filter((w) => w === undefined)).toHaveLength(2);
      const waits = booked.filter((w): w is number => w !== undefined).sort((x, y) => x - y);
      for (const [i, w] of waits.entries()) expect(Math.abs(w - (i + 1) * spacing.delayMs)).toBeLessThan(200);
      // the last turn booked, kept in Redis until its time (hash-tagged by application)
      expect(await a.pttl(`${p}:rl:{a3}:device:turn:3:203.0.113.4`)).toBeGreaterThan(3 * spacing.delayMs);
    } finally {
      await Promise.all([a.quit(), b.quit()]);
    }
  });
});

it('while Redis is unreachable each process counts on its own: the limits still hold there', async () => {
  // nothing listens on port 1: every command fails at once, as during an outage
  const down = new IORedis('redis://127.0.0.1:1', { enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => null, lazyConnect: true });
  down.on('error', () => undefined);
  try {
    const limiter = createRateLimiter({ redis: down });
    expect(await allowed(limiter, 10, [['outage', three]])).toBe(3);
  } finally {
    down.disconnect();
  }
});
