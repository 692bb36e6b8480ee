import type { Cluster, Redis } from 'ioredis';

/**
 * Remembers accepted signatures for as long as their Date keeps them valid, so a captured signed
 * request cannot be sent again (docs/api.md#authentication: a signed request that changes anything is accepted once). With Redis, shared
 * by every pod (SET NX: exactly one pod accepts a signature); without it, or while Redis is
 * unreachable, in this process's memory.
 */
export interface ReplayGuard {
  /** True the first time `key` is seen within `ttlMs`; false for every later use. */
  firstUse(key: string, ttlMs: number): Promise<boolean>;
}

export function createMemoryReplayGuard(now: () => number = Date.now): ReplayGuard {
  // insertion order is near expiry order (every entry lives about the same window), so expired
  // entries are dropped from the front as new ones arrive: memory follows the request rate
  const seen = new Map<string, number>();
  return {
    async firstUse(key, ttlMs) {
      const t = now();
      for (const [k, until] of seen) {
        if (until > t) break;
        seen.delete(k);
      }
      const until = seen.get(key);
      if (until !== undefined && until > t) return false;
      seen.set(key, t + ttlMs);
      return true;
    },
  };
}

export function createRedisReplayGuard(redis: Redis | Cluster, prefix: string, fallback: ReplayGuard = createMemoryReplayGuard()): ReplayGuard {
  return {
    async firstUse(key, ttlMs) {
      try {
        return (await redis.set(`${prefix}:sig:${key}`, '1', 'PX', Math.max(1, Math.ceil(ttlMs)), 'NX')) === 'OK';
      } catch {
        return fallback.firstUse(key, ttlMs);
      }
    },
  };
}
