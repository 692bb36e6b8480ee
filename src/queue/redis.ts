import type { Cluster, Redis as IORedis, RedisOptions } from 'ioredis';
import type { Logger } from '../logger';

/** A connection to one Redis server or to a Redis Cluster: every Redis user of Gatehouse takes either. */
export type RedisConnection = IORedis | Cluster;

/**
 * ioredis, loaded by the first connection: a process without Redis (the embedded default, a CLI
 * command that enqueues nothing) never pays for it (docs/decisions.md, "Libraries loaded when used").
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports
export const ioredis = () => require('ioredis') as typeof import('ioredis');

import { parseRedisUrl } from './redis-url';

export { parseRedisUrl, type RedisTarget } from './redis-url';

/**
 * A connection to REDIS_URL with `options` (those of one connection: timeouts, the offline queue,
 * retries). On a cluster every node's connection gets them, commands go to the masters, and a
 * command refused during a failover is redirected once the cluster has moved the slot. Behind
 * Sentinels it is a connection to the master they name, moved to the new one after a failover.
 */
export function connectRedis(url: string, options: RedisOptions = {}): RedisConnection {
  const target = parseRedisUrl(url);
  const { Redis, Cluster } = ioredis();
  if ('sentinels' in target) {
    // The Sentinels name the master at every (re)connection, and ioredis takes a server only once
    // it says it is a master. A dead master's connections close; a server whose role the Sentinels
    // change has its clients closed (CLIENT KILL); either way every connection reconnects and asks
    // again. ioredis's failover detector stays off: a failover it announces while a connection is
    // reconnecting ends that connection for good (every later command "Connection is closed.").
    // docs/decisions.md and docs/scaling.md say what waiting for the Sentinels costs instead.
    return new Redis({
      ...options, sentinels: target.sentinels, name: target.name, username: target.username, password: target.password,
      failoverDetector: false,
      ...(target.tls && { tls: {}, enableTLSForSentinelMode: true, sentinelTLS: {} }),
    });
  }
  if (!target.cluster) return new Redis(url, options);
  const { enableOfflineQueue, enableAutoPipelining, lazyConnect, ...perNode } = options;
  return new Cluster(target.nodes, {
    redisOptions: { ...perNode, username: target.username, password: target.password, ...(target.tls && { tls: {} }) },
    ...(enableOfflineQueue !== undefined && { enableOfflineQueue }),
    ...(enableAutoPipelining !== undefined && { enableAutoPipelining }),
    ...(lazyConnect !== undefined && { lazyConnect }),
    scaleReads: 'master',
  });
}

/**
 * A BullMQ queue's key prefix. BullMQ's scripts touch several keys of one queue at once, which a
 * Redis Cluster allows only within one hash slot: on a cluster each queue's keys carry a hash tag
 * of their own (`gatehouse:{mail}`), so a queue stays in one slot and the queues spread over the
 * masters. One server keeps the plain prefix (its keys are where earlier releases put them).
 */
export function queuePrefix(prefix: string, queue: string, cluster: boolean): string {
  return cluster ? `${prefix}:{${queue}}` : prefix;
}

/**
 * A script a readiness check runs (not a PING, which any node answers): it writes one expiring key
 * in `key`'s slot, as the rate limits' scripts do, so a node that cannot run scripts or take writes
 * for that slot (a cluster mid-failover, a replica, a full memory) reports not ready.
 */
export async function scriptRuns(redis: RedisConnection, key: string): Promise<void> {
  const answer = await redis.eval("redis.call('SET', KEYS[1], '1', 'PX', 10000) return 1", 1, key);
  if (Number(answer) !== 1) throw new Error(`the readiness script answered ${String(answer)}`);
}

/**
 * Logs Redis errors without flooding the log: while Redis is unreachable each connection reports
 * every failed attempt, and BullMQ's queues and workers repeat their connection's errors (tens of
 * lines a second in a worker). The first of each (message, fields, error) is logged at once, then
 * at most one line per `everyMs` with how many were left out since (`repeated`).
 */
export function quietRedisErrors(logger: Logger, everyMs = 60_000): (msg: string, err: Error, fields?: Record<string, unknown>) => void {
  const seen = new Map<string, { at: number; left: number }>();
  return (msg, err, fields = {}) => {
    const key = `${msg}\n${JSON.stringify(fields)}\n${err.message}`;
    const now = Date.now();
    const last = seen.get(key);
    if (last && now - last.at < everyMs) {
      last.left++;
      return;
    }
    if (seen.size >= 200) {
      for (const [k, v] of seen) if (now - v.at >= everyMs) seen.delete(k);
      if (seen.size >= 200) seen.clear(); // bounded, whatever the errors say
    }
    seen.set(key, { at: now, left: 0 });
    logger.warn({ err: err.message, ...fields, ...(last && last.left > 0 && { repeated: last.left }) }, msg);
  };
}
