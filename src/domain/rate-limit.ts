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
  /**
   * Seconds to wait when any key is over its limit (0: go ahead), and whether any failure is on
   * record for them, in one round trip.
   */
  check(keys: [string, Limit][]): Promise<{ wait: number; failures: boolean }>;
  /** Records one failure. */
  fail(key: string, limit: Limit): Promise<void>;
  reset(key: string): Promise<void>;
}

/** Shared by every api pod through Redis. */
export function createRedisRateLimiter(redis: IORedis, prefix: string): RateLimiter {
  const k = (key: string) => `${prefix}:rl:${key}`;
  return {
    async check(keys) {
      const multi = redis.multi();
      for (const [key] of keys) multi.get(k(key)).ttl(k(key));
      const replies = (await multi.exec())!.map(([err, v]) => {
        if (err) throw err;
        return v;
      });
      let wait = 0;
      let failures = false;
      keys.forEach(([, limit], i) => {
        const count = Number(replies[2 * i] ?? 0);
        failures ||= count > 0;
        if (count >= limit.max) wait = Math.max(wait, Math.max(Number(replies[2 * i + 1]), 1));
      });
      return { wait, failures };
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
    async check(keys) {
      let wait = 0;
      let failures = false;
      for (const [key, limit] of keys) {
        const w = live(key);
        failures ||= w !== undefined;
        if (w && w.count >= limit.max) wait = Math.max(wait, Math.max(1, Math.ceil((w.until - now()) / 1000)));
      }
      return { wait, failures };
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
