import type IORedis from 'ioredis';

export interface Limit {
  /** Failures allowed within the window. */
  max: number;
  windowSeconds: number;
}

/**
 * Counts failures per key in fixed windows. Checked before the code knows whether an account
 * exists, so the answer never tells registered addresses apart.
 */
export interface RateLimiter {
  /** Seconds to wait when the key is over its limit; 0 when it may proceed. */
  blockedFor(key: string, limit: Limit): Promise<number>;
  /** Records one failure. */
  fail(key: string, limit: Limit): Promise<void>;
  reset(key: string): Promise<void>;
}

/** Shared by every api pod through Redis. */
export function createRedisRateLimiter(redis: IORedis, prefix: string): RateLimiter {
  const k = (key: string) => `${prefix}:rl:${key}`;
  return {
    async blockedFor(key, limit) {
      const [count, ttl] = await redis.multi().get(k(key)).ttl(k(key)).exec().then((r) => r!.map(([, v]) => v) as [string | null, number]);
      return Number(count ?? 0) >= limit.max ? Math.max(ttl, 1) : 0;
    },
    async fail(key, limit) {
      // the window starts with the first failure (NX) and is not extended by later ones
      await redis.multi().incr(k(key)).expire(k(key), limit.windowSeconds, 'NX').exec();
    },
    async reset(key) {
      await redis.del(k(key));
    },
  };
}

/** The embedded default's single process keeps its counters in memory. */
export function createMemoryRateLimiter(now: () => number = Date.now): RateLimiter {
  const windows = new Map<string, { count: number; until: number }>();
  const live = (key: string) => {
    const w = windows.get(key);
    if (w && w.until <= now()) windows.delete(key);
    return windows.get(key);
  };
  return {
    async blockedFor(key, limit) {
      const w = live(key);
      return w && w.count >= limit.max ? Math.max(1, Math.ceil((w.until - now()) / 1000)) : 0;
    },
    async fail(key, limit) {
      const w = live(key);
      if (w) w.count++;
      else {
        if (windows.size > 100_000) windows.clear();
        windows.set(key, { count: 1, until: now() + limit.windowSeconds * 1000 });
      }
    },
    async reset(key) {
      windows.delete(key);
    },
  };
}
