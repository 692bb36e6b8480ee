import IORedis from 'ioredis';
import type { Logger } from '../logger';

/**
 * Client changes across processes: every api pod caches clients (and their opened secrets) for a
 * few seconds, so a reset secret or a deleted client must reach every pod's cache at once.
 * Changes are published on a Redis channel; a pod whose subscription is not live does not cache
 * at all (it may have missed a change), and forgets everything when it comes back.
 */
export interface ClientChanges {
  /** Tells every process that this client changed. Never throws: a pod that misses it stops caching. */
  publish(applicationId: number, clientId: string): Promise<void>;
  /** Listens for changes; `live()` says whether nothing can have been missed, so caching is safe. */
  subscribe(handlers: { forget(applicationId: number, clientId: string): void; forgetAll(): void }): { live(): boolean };
  close(): void;
}

export function createRedisClientChanges(redisUrl: string, prefix: string, logger: Logger): ClientChanges {
  const channel = `${prefix}:client-changes`;
  let publisher: IORedis | undefined;
  let subscriber: IORedis | undefined;
  return {
    async publish(applicationId, clientId) {
      if (!publisher) {
        publisher = new IORedis(redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
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
      subscriber = new IORedis(redisUrl, { maxRetriesPerRequest: null });
      subscriber.on('error', (err) => logger.warn({ err: err.message }, 'redis connection error (client changes)'));
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
