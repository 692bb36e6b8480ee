import type { Cluster, Redis as RedisClient } from 'ioredis';
import { DependencyDownError, LimitReachedError } from './refusal';

export interface Limit {
  /** Attempts allowed within the window. */
  max: number;
  windowSeconds: number;
}

/** One key's budget: the key (`kind:subkind:application:subject`) and its limit. */
export type Budget = [key: string, limit: Limit];

/** Attempts taken by `RateLimiter.take`, settled once the work they guarded is done. */
export interface Taken {
  /**
   * In one step: forgets every attempt on record for the `clear` keys (a right password clears
   * its account's count) and gives this request's attempt back to the `giveBack` keys (what must
   * not count, such as the address's attempt of a right password). Keys not taken are ignored.
   */
  settle(keys: { clear?: string[]; giveBack?: string[] }): Promise<void>;
}

/**
 * Fixed-window budgets per key. A request takes one attempt from every budget it draws on before
 * the work they guard, all or none in one atomic step (Redis: one Lua script over all its keys;
 * memory: one synchronous pass), so parallel requests can never run the work more often than a
 * budget allows, on one pod or many, and a request refused by one budget never spends another.
 */
export interface RateLimiter {
  /** Takes one attempt from every budget, or, when any is spent, none: 510 api_limit_error with the seconds until that window ends. */
  take(budgets: Budget[]): Promise<Taken>;
  /** The attempts counted under each key in its current window (0: none), taking none. Keys of one application only. */
  count(keys: string[]): Promise<number[]>;
  /**
   * Books the next turn under `key`, shared by every pod as the budgets are: turns are
   * `spacing.delayMs` apart, the first `delayMs` from now. Answers the milliseconds to wait for the
   * turn booked, or undefined (nothing booked) when `spacing.waiting` turns are booked ahead already.
   */
  turn(key: string, spacing: Spacing): Promise<number | undefined>;
}

/** Attempts spaced out rather than refused: one every `delayMs`, at most `waiting` booked ahead. */
export interface Spacing {
  delayMs: number;
  waiting: number;
}

/**
 * KEYS: the budgets' keys; ARGV: each budget's max and window in ms, in turn. Answers {0, 0} when
 * it took one attempt from every budget, else {n, ms}: budget n is spent for ms more, and nothing
 * was taken. A counter's window starts with its first attempt (PEXPIRE on the first INCR).
 */
const TAKE = `
for i, key in ipairs(KEYS) do
  local used = tonumber(redis.call('GET', key) or '0')
  if used >= tonumber(ARGV[2 * i - 1]) then
    local left = redis.call('PTTL', key)
    if left < 0 then
      redis.call('PEXPIRE', key, ARGV[2 * i])
      left = tonumber(ARGV[2 * i])
    end
    return {i, left}
  end
end
for i, key in ipairs(KEYS) do
  if redis.call('INCR', key) == 1 then redis.call('PEXPIRE', key, ARGV[2 * i]) end
end
return {0, 0}`;

/** KEYS: counters; ARGV[i]: 'clear' (delete KEYS[i]) or 'give' (one attempt back, never below zero). */
const SETTLE = `
for i, key in ipairs(KEYS) do
  if ARGV[i] == 'clear' then
    redis.call('DEL', key)
  elseif tonumber(redis.call('GET', key) or '0') > 0 then
    redis.call('DECR', key)
  end
end
return 0`;

/**
 * KEYS: the turns' key; ARGV: the spacing's delay in ms and how many turns may be booked ahead.
 * Answers the ms until the turn it booked, or -1 (nothing booked). The key holds the time of the
 * last turn booked (Redis's clock: pods' clocks may differ) and expires with it.
 */
const TURN = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local last = tonumber(redis.call('GET', KEYS[1]) or '0')
local at = math.max(last, now) + tonumber(ARGV[1])
local wait = at - now
if wait > tonumber(ARGV[1]) * tonumber(ARGV[2]) then return -1 end
redis.call('SET', KEYS[1], string.format('%d', at), 'PX', wait)
return wait`;

/** The counters of one process: each key expires with its own window; expired ones are swept once a minute. */
function memoryCounters() {
  const counters = new Map<string, { used: number; endsAt: number }>();
  /** Each key's last turn booked (its time in ms). */
  const turns = new Map<string, number>();
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const [key, c] of counters) if (c.endsAt <= now) counters.delete(key);
    for (const [key, at] of turns) if (at <= now) turns.delete(key);
  }, 60_000);
  sweep.unref();
  const live = (key: string, now: number) => {
    const c = counters.get(key);
    return c && c.endsAt > now ? c : undefined;
  };
  return {
    take(keys: string[], limits: Limit[]): [number, number] {
      const now = Date.now();
      for (const [i, key] of keys.entries()) {
        const c = live(key, now);
        if (c && c.used >= limits[i].max) return [i + 1, c.endsAt - now];
      }
      for (const [i, key] of keys.entries()) {
        const c = live(key, now);
        if (c) c.used++;
        else counters.set(key, { used: 1, endsAt: now + limits[i].windowSeconds * 1000 });
      }
      return [0, 0];
    },
    count(keys: string[]): number[] {
      const now = Date.now();
      return keys.map((key) => live(key, now)?.used ?? 0);
    },
    turn(key: string, spacing: Spacing): number {
      const now = Date.now();
      const at = Math.max(turns.get(key) ?? 0, now) + spacing.delayMs;
      if (at - now > spacing.delayMs * spacing.waiting) return -1;
      turns.set(key, at);
      return at - now;
    },
    settle(keys: string[], how: ('clear' | 'give')[]): void {
      const now = Date.now();
      for (const [i, key] of keys.entries()) {
        const c = live(key, now);
        if (how[i] === 'clear') counters.delete(key);
        else if (c && c.used > 0) c.used--;
      }
    },
  };
}

/** What each kind of budget counts, by its key's first two parts: the limit's error says which was spent. */
const COUNTED: Readonly<Record<string, string>> = {
  'login:account': 'failed sign-ins for this account',
  'login:address': 'failed sign-ins from this address',
  'register:address': 'registrations from this address',
  'mail:recipient': 'emails to this address',
  'mail:address': 'emails requested from this address',
  'social:start': 'social sign-ins started from this address',
  'email_code:guesses': 'wrong codes for this email code',
  'device:address': 'device codes typed from this address',
  'device:application': 'device codes typed in this application',
};
const counted = (key: string) => {
  const kind = key.split(':').slice(0, 2).join(':');
  return Object.hasOwn(COUNTED, kind) ? COUNTED[kind] : 'attempts';
};

/**
 * Redis answered, with an error (a script error, CROSSSLOT, CLUSTERDOWN during a failover, READONLY,
 * OOM): unlike an unreachable Redis, nothing says this pod alone is cut off, so counting in memory
 * would quietly lift the shared limit. The request is refused with 503 instead (fail closed).
 */
const answeredWithError = (err: unknown) => (err as Error)?.name === 'ReplyError';

/**
 * The Redis key of a budget: hash-tagged by application (`{a3}`), so that the keys one script
 * takes (an account's and an address's budgets, always of one application) share a slot on a
 * Redis Cluster, while applications spread over its masters.
 */
function redisKey(prefix: string, key: string): string {
  const application = key.split(':')[2] ?? '';
  return `${prefix}{a${application}}:${key}`;
}

/**
 * Shared by every api pod through Redis when `redis` is given; the embedded default (and each pod
 * while Redis is unreachable) keeps its counters in memory, each key expiring with its own window,
 * so no counter is ever dropped early. A Redis outage therefore weakens the limits to one pod's
 * view instead of lifting them or refusing every sign-in.
 */
export function createRateLimiter(options: { redis?: RedisClient | Cluster; prefix?: string; refused?: (key: string) => void } = {}): RateLimiter {
  const memory = memoryCounters();
  const redis = options.redis;
  const prefix = `${options.prefix ?? 'gatehouse'}:rl:`;
  interface Redis {
    gatehouseTake(n: number, ...args: (string | number)[]): Promise<[number, number]>;
    gatehouseSettle(n: number, ...args: string[]): Promise<number>;
    gatehouseTurn(n: number, ...args: (string | number)[]): Promise<number>;
  }
  if (redis && !('gatehouseTurn' in redis)) {
    redis.defineCommand('gatehouseTake', { lua: TAKE });
    redis.defineCommand('gatehouseSettle', { lua: SETTLE });
    redis.defineCommand('gatehouseTurn', { lua: TURN });
  }
  // Redis when it answers; this process's counters while it does not
  async function viaRedis<T>(call: (r: Redis) => Promise<T>, fallback: () => T): Promise<T> {
    if (!redis) return fallback();
    try {
      return await call(redis as unknown as Redis);
    } catch (err) {
      if (answeredWithError(err)) throw new DependencyDownError('the store of the rate limits (Redis)', err);
      return fallback();
    }
  }

  return {
    async take(budgets) {
      const keys = budgets.map(([key]) => key);
      const limits = budgets.map(([, limit]) => limit);
      const [spent, ms] = await viaRedis(
        (r) => r.gatehouseTake(keys.length, ...keys.map((k) => redisKey(prefix, k)), ...limits.flatMap((l) => [l.max, l.windowSeconds * 1000])),
        () => memory.take(keys, limits),
      );
      if (Number(spent) > 0) {
        options.refused?.(keys[Number(spent) - 1]);
        throw new LimitReachedError(Math.max(1, Math.ceil(Number(ms) / 1000)), counted(keys[Number(spent) - 1]));
      }
      return {
        async settle({ clear = [], giveBack = [] }) {
          const list = [...clear.map((k) => [k, 'clear'] as const), ...giveBack.map((k) => [k, 'give'] as const)].filter(([k]) => keys.includes(k));
          if (list.length === 0) return;
          await viaRedis<unknown>(
            (r) => r.gatehouseSettle(list.length, ...list.map(([k]) => redisKey(prefix, k)), ...list.map(([, how]) => how)),
            () => memory.settle(list.map(([k]) => k), list.map(([, how]) => how)),
          );
        },
      };
    },
    async count(keys) {
      if (keys.length === 0) return [];
      const counts = await viaRedis<(string | null)[] | number[]>(
        (r) => (r as unknown as { mget(...k: string[]): Promise<(string | null)[]> }).mget(...keys.map((k) => redisKey(prefix, k))),
        () => memory.count(keys),
      );
      return counts.map((c) => Number(c ?? 0));
    },
    async turn(key, spacing) {
      const wait = Number(await viaRedis(
        (r) => r.gatehouseTurn(1, redisKey(prefix, key), spacing.delayMs, spacing.waiting),
        () => memory.turn(key, spacing),
      ));
      return wait < 0 ? undefined : wait;
    },
  };
}
