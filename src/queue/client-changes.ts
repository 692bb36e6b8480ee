import type { ClientChanges } from '../domain/ports';
import type { Logger } from '../logger';
import { connectRedis, type RedisConnection } from './redis';

export function createRedisClientChanges(redisUrl: string, prefix: string, logger: Logger): ClientChanges {
  const channel = `${prefix}:client-changes`;
  let publisher: RedisConnection | undefined;
  let subscriber: RedisConnection | undefined;
  return {
    async publish(applicationId, clientId) {
      if (!publisher) {
        publisher = connectRedis(redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
        publisher.on('error', () => undefined); // reported below, when a publish fails
      }
      const connection = publisher;
      try {
        if (connection.status !== 'ready') {
          await new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, 2_000);
            connection.once('ready', () => {
              clearTimeout(timer);
              resolve();
            });
          });
        }
        await connection.publish(channel, JSON.stringify([applicationId, clientId]));
      } catch (err) {
        logger.warn({ err: (err as Error).message }, 'could not publish a client change; pods without a live subscription do not cache clients');
      }
    },
    subscribe({ forget, forgetAll }) {
      let subscribed = false;
      subscriber = connectRedis(redisUrl, { maxRetriesPerRequest: null });
      subscriber.on('error', (err: Error) => logger.warn({ err: err.message }, 'redis connection error (client changes)'));
      subscriber.on('close', () => {
        subscribed = false;
        forgetAll();
      });
      subscriber.on('ready', () => {
        void subscriber!.subscribe(channel).then(() => {
          forgetAll(); // whatever changed while the subscription was down
          subscribed = true;
        }, (err: Error) => logger.warn({ err: err.message }, 'could not subscribe to client changes'));
      });
      subscriber.on('message', (_channel: string, message: string) => {
        try {
          const [applicationId, clientId] = JSON.parse(message) as [number, string];
          forget(applicationId, clientId);
        } catch {
          forgetAll();
        }
      });
      return { live: () => subscribed && subscriber!.status === 'ready' };
    },
    close() {
      publisher?.disconnect();
      subscriber?.disconnect();
    },
  };
}
