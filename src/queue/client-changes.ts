import type { ClientChanges } from '../domain/ports';
import type { Logger } from '../logger';
import { connectRedis, type RedisConnection } from './redis';
import { subscribeRedis, type Subscription } from './subscriber';

export function createRedisClientChanges(redisUrl: string, prefix: string, logger: Logger): ClientChanges {
  const channel = `${prefix}:client-changes`;
  let publisher: RedisConnection | undefined;
  let subscription: Subscription | undefined;
  return {
    async publish(applicationId, clientId) {
      if (!publisher) {
        publisher = connectRedis(redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
        publisher.on('error', () => undefined); // reported below, when a publish fails
      }
      const connection = publisher;
      try {
        if (connection.status !== 'ready') {
          // (the listener goes with the timer: publishes during an outage must not pile listeners up)
          await new Promise<void>((resolve) => {
            const ready = () => {
              clearTimeout(timer);
              resolve();
            };
            const timer = setTimeout(() => {
              connection.off('ready', ready);
              resolve();
            }, 2_000);
            connection.once('ready', ready);
          });
        }
        await connection.publish(channel, JSON.stringify([applicationId, clientId]));
      } catch (err) {
        logger.warn({ err: (err as Error).message }, 'could not publish a client change; pods without a live subscription do not cache clients');
      }
    },
    subscribe({ forget, forgetAll }) {
      // a subscription of its own that waits between attempts (see subscribeRedis): not ioredis's
      // Cluster, whose subscriber retries at once, without end, while every node is down
      let down = false;
      let failures = 0;
      const subscribed = subscribeRedis(redisUrl, channel, {
        message(message) {
          try {
            const [applicationId, clientId] = JSON.parse(message) as [number, string];
            forget(applicationId, clientId);
          } catch {
            forgetAll();
          }
        },
        live() {
          forgetAll(); // whatever changed while the subscription was down
          if (down || failures > 0) logger.info({ node: subscribed.node() }, 'client changes subscription live again: clients are cached again');
          down = false;
          failures = 0;
        },
        down(err) {
          forgetAll();
          down = true;
          logger.warn({ err: err?.message }, 'client changes subscription lost: clients are not cached until it is back');
        },
        failed(err, node, retryInMs) {
          // the first failure of a run, then one line in 60 (every 5 minutes at the longest pause)
          if (++failures % 60 === 1) logger.warn({ err: err?.message ?? 'closed', node, retry_in_ms: retryInMs, attempts: failures }, 'cannot subscribe to client changes; trying the next node');
        },
      });
      subscription = subscribed;
      return { live: () => subscribed.live() };
    },
    close() {
      publisher?.disconnect();
      subscription?.close();
    },
  };
}
