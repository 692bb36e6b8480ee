import type { Redis as IORedis, RedisOptions } from 'ioredis';
import { connectRedis, ioredis, parseRedisUrl } from './redis';

/** The pause before the next attempt: `firstMs` after the first failure, doubling up to `maxMs`. */
export interface Backoff {
  firstMs: number;
  maxMs: number;
}

export const SUBSCRIBER_BACKOFF: Backoff = { firstMs: 250, maxMs: 5_000 };

/** The pause before attempt `failures + 1` (after `failures` failed attempts in a row): from half to all of the doubled pause, so pods spread out. */
export function backoffMs(failures: number, backoff: Backoff, random = Math.random): number {
  const ceiling = Math.min(backoff.maxMs, backoff.firstMs * 2 ** Math.max(0, Math.min(failures - 1, 30)));
  return Math.round(ceiling / 2 + (ceiling / 2) * random());
}

export interface Subscription {
  /** Whether SUBSCRIBE has been answered on the connection that is open now: no message can have been missed since. */
  live(): boolean;
  /** The node the subscription is on, or is being tried (`host:port`; the URL's target on one server or Sentinels). */
  node(): string;
  close(): void;
}

type Node = { host: string; port: number };
const key = (n: Node) => `${n.host}:${n.port}`;

/** The nodes of a CLUSTER SLOTS answer (masters and replicas; an empty host is the asked node's). */
function nodesOfSlots(answer: unknown, asked: Node): Node[] {
  const nodes: Node[] = [];
  for (const range of Array.isArray(answer) ? answer : []) {
    for (const node of Array.isArray(range) ? range.slice(2) : []) {
      if (!Array.isArray(node) || typeof node[1] !== 'number') continue;
      nodes.push({ host: typeof node[0] === 'string' && node[0] !== '' ? node[0] : asked.host, port: node[1] });
    }
  }
  return nodes;
}

/**
 * One subscription to `channel` of REDIS_URL that survives an outage of any length: one connection
 * at a time, each made for one attempt and never reconnected by ioredis; when it ends, the next
 * attempt waits (`backoff`, reset once SUBSCRIBE is answered) and goes to the next node.
 *
 * On a Redis Cluster this is a plain connection to one node, not ioredis's `Cluster`: a cluster
 * delivers a PUBLISH to every node, so any node will do. The nodes are those REDIS_URL names, then
 * those the last node asked knew of (CLUSTER SLOTS). ioredis's own cluster subscriber tries the
 * next node at once, with no pause, whenever its connection ends; with every node down that is a
 * loop of refused connections that leaks memory on each pass (docs/decisions.md). On one server
 * or behind Sentinels it is the URL's connection, reconnected here in the same way.
 */
export function subscribeRedis(
  url: string,
  channel: string,
  handlers: {
    message(message: string): void;
    /** SUBSCRIBE answered: from now on no message is missed (those sent while it was down were). */
    live(): void;
    /** The connection of a live subscription ended. */
    down(err: Error | undefined): void;
    /** An attempt ended before SUBSCRIBE was answered (`err` is its last error): the next is due in `retryInMs`. */
    failed?(err: Error | undefined, node: string, retryInMs: number): void;
  },
  options: { backoff?: Backoff; connectTimeoutMs?: number } = {},
): Subscription {
  const target = parseRedisUrl(url);
  const backoff = options.backoff ?? SUBSCRIBER_BACKOFF;
  // no reconnection and no retried commands of ioredis's own: an attempt ends, and the loop below decides
  const once: RedisOptions = { retryStrategy: () => null, connectTimeout: options.connectTimeoutMs ?? 5_000 };
  const seeds: Node[] = target.cluster ? target.nodes : [];
  let learnt: Node[] = [];
  const nodes = () => {
    const all = new Map(seeds.map((n) => [key(n), n]));
    for (const n of learnt) if (all.size < 64) all.set(key(n), n);
    return [...all.values()];
  };
  let turn = 0;
  let failures = 0;
  let subscribed = false;
  let closed = false;
  let current: IORedis | undefined;
  let retry: NodeJS.Timeout | undefined;
  let trying = target.cluster ? key(seeds[0]) : 'the REDIS_URL server';

  const connect = (node: Node | undefined): IORedis => {
    if (!node || !target.cluster) return connectRedis(url, once) as IORedis;
    return new (ioredis().Redis)({
      ...once, host: node.host, port: node.port, username: target.username, password: target.password,
      ...(target.tls && { tls: {} }),
    });
  };

  const attempt = () => {
    retry = undefined;
    if (closed) return;
    const list = nodes();
    const node = target.cluster ? list[turn % list.length] : undefined;
    if (node) trying = key(node);
    const connection = connect(node);
    current = connection;
    let lastError: Error | undefined;
    connection.on('error', (err: Error) => (lastError = err));
    connection.on('message', (from: string, message: string) => {
      if (from === channel) handlers.message(message);
    });
    connection.once('ready', () => {
      void (async () => {
        if (node) {
          // the other nodes of the cluster, for the next attempts (a node that cannot answer is no reason not to subscribe)
          const slots = await connection.call('CLUSTER', 'SLOTS').catch(() => undefined);
          if (slots !== undefined) learnt = nodesOfSlots(slots, node);
        }
        await connection.subscribe(channel);
      })().then(() => {
        if (current !== connection || closed) return;
        failures = 0;
        subscribed = true;
        handlers.live();
      }, (err: Error) => {
        lastError = err;
        if (connection.status !== 'end') connection.disconnect();
      });
    });
    connection.once('end', () => {
      connection.removeAllListeners();
      connection.on('error', () => undefined);
      if (current === connection) current = undefined;
      const wasLive = subscribed;
      subscribed = false;
      if (wasLive) handlers.down(lastError);
      if (closed) return;
      failures++;
      turn = (turn + 1) % Math.max(1, nodes().length);
      const waitMs = backoffMs(failures, backoff);
      if (!wasLive) handlers.failed?.(lastError, trying, waitMs);
      retry = setTimeout(attempt, waitMs);
      retry.unref();
    });
  };
  attempt();

  return {
    live: () => subscribed && current?.status === 'ready',
    node: () => trying,
    close() {
      closed = true;
      if (retry) clearTimeout(retry);
      subscribed = false;
      if (current && current.status !== 'end') current.disconnect();
      current = undefined;
    },
  };
}
