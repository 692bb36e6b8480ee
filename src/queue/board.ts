import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import { Queue } from 'bullmq';
import type { Router } from 'express';
import type { Logger } from '../logger';
import { queuesAnswer } from './bullmq';
import { QUEUE_NAMES } from './port';
import { connectRedis, queuePrefix } from './redis';

/** bull-board over the BullMQ queues, served under `basePath`: the queue dashboard's and the console's. */
export interface QueueBoard { router: Router; ready(): Promise<boolean>; close(): Promise<void> }

/**
 * bull-board over the mail, versions, maintenance and webhooks queues (docs/operations.md#queue-dashboard),
 * on one Redis connection of its own whose errors are said once when Redis becomes unreachable and
 * once when it is back. A job holds its outbox id and what it is for (template, locale,
 * application): no email address, link, code or token is ever shown.
 */
export function queueBoard(redisUrl: string, redisPrefix: string, logger: Logger, basePath: string): QueueBoard {
  const redis = connectRedis(redisUrl, { maxRetriesPerRequest: 1, enableOfflineQueue: false });
  let reachable = true;
  redis.on('error', (err: Error) => {
    if (!reachable) return;
    reachable = false;
    logger.error({ err: err.message }, 'Redis is unreachable: the queue dashboard shows no queues until it is back (/readyz answers 503)');
  });
  redis.on('ready', () => {
    if (reachable) return;
    reachable = true;
    logger.info('Redis is reachable again');
  });
  const queues = QUEUE_NAMES.map((name) => new Queue(name, { connection: redis, prefix: queuePrefix(redisPrefix, name, redis.isCluster) }));
  for (const q of queues) q.on('error', () => undefined); // the connection's own handler reports it
  const board = new ExpressAdapter();
  board.setBasePath(basePath);
  createBullBoard({
    queues: queues.map((q) => new BullMQAdapter(q, { allowRetries: true })),
    serverAdapter: board,
    options: { uiConfig: { boardTitle: 'Gatehouse' } },
  });
  return {
    router: board.getRouter() as Router,
    // each queue's counts (a script in the queue's own slot on a cluster), not a PING any node answers
    ready: () => queuesAnswer(redis, queues).then(() => true, () => false),
    async close() {
      await Promise.all(queues.map((q) => q.close()));
      redis.disconnect();
    },
  };
}
