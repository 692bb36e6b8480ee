import type IORedis from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { errors } from '../errors';

export interface Limit {
  /** Attempts allowed within the window. */
  max: number;
  windowSeconds: number;
}

/** One key's budget: the key (kind, application, subject) and its limit. */
export type Budget = [key: string, limit: Limit];

/** Attempts taken by `RateLimiter.take`: kept when they failed, given back when they did not count. */
export interface Taken {
  /** Gives every taken attempt back. */
  giveBack(): Promise<void>;
  /** Gives one key's attempt back. */
  giveBackKey(key: string): Promise<void>;
  /** Forgets every attempt on record for one key (a right password clears its account's count). */
  clear(key: string): Promise<void>;
}

/**
 * Fixed-window budgets per key. An attempt is taken atomically *before* the work it guards
 * (Redis: one Lua script per key; memory: one synchronous update), so parallel requests can
 * never run the work more often than the budget allows, on one pod or many. What must not count
 * (a right password, a mail that was not sent) is given back afterwards.
 */
export interface RateLimiter {
  /**
   * Takes one attempt from every budget. When any is spent, gives back what it took and throws
   * 510 api_limit_error with the seconds until the spent window ends.
   */
  take(budgets: Budget[]): Promise<Taken>;
}

/**
 * Shared by every api pod through Redis when `redis` is given; the embedded default (and each pod
 * while Redis is unreachable) keeps its counters in memory, each key expiring with its own window,
 * so no counter is ever dropped early. A Redis outage therefore weakens the limits to one pod's
 * view instead of lifting them or refusing every sign-in.
 */
export function createRateLimiter(options: { redis?: IORedis; prefix?: string; refused?: (key: string) => void } = {}): RateLimiter {
  const limiters = new Map<string, RateLimiterAbstract>();
  const limiterFor = ({ max, windowSeconds }: Limit): RateLimiterAbstract => {
    const id = `${max}/${windowSeconds}`;
    let limiter = limiters.get(id);
    if (!limiter) {
      const memory = new RateLimiterMemory({ points: max, duration: windowSeconds, keyPrefix: 'rl' });
      limiter = options.redis
        ? new RateLimiterRedis({
          storeClient: options.redis, points: max, duration: windowSeconds, keyPrefix: `${options.prefix ?? 'gatehouse'}:rl`,
          insuranceLimiter: memory, rejectIfRedisNotReady: true,
        })
        : memory;
      limiters.set(id, limiter);
    }
    return limiter;
  };

  return {
    async take(budgets) {
      const outcomes = await Promise.allSettled(budgets.map(([key, limit]) => limiterFor(limit).consume(key)));
      const taken = budgets.filter((_, i) => outcomes[i].status === 'fulfilled');
      const giveBack = async (list: Budget[]) => {
        await Promise.all(list.map(([key, limit]) => limiterFor(limit).reward(key)));
      };
      const refused = outcomes.flatMap((o) => (o.status === 'rejected' ? [o.reason as unknown] : []));
      if (refused.length > 0) {
        await giveBack(taken);
        const broken = refused.find((r) => !(r instanceof RateLimiterRes));
        if (broken) throw broken;
        for (const [i, o] of outcomes.entries()) if (o.status === 'rejected') options.refused?.(budgets[i][0]);
        const wait = Math.max(...refused.map((r) => Math.ceil((r as RateLimiterRes).msBeforeNext / 1000)), 1);
        throw errors.apiLimit(wait);
      }
      const budgetOf = (key: string) => budgets.find(([k]) => k === key);
      return {
        giveBack: () => giveBack(taken),
        async giveBackKey(key) {
          const budget = budgetOf(key);
          if (budget) await giveBack([budget]);
        },
        async clear(key) {
          const budget = budgetOf(key);
          if (budget) await limiterFor(budget[1]).delete(key);
        },
      };
    },
  };
}
