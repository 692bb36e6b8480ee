import { Queue, Worker } from 'bullmq';
import type { Logger } from '../logger';
import { backoffDelay, Job, JobQueue, Processors, QUEUE_NAMES, QueueName, RETRY } from './port';
import { connectRedis, queuePrefix, type RedisConnection } from './redis';

/** The backoff of RETRY (exponential, each wait capped), by the name jobs carry. */
const BACKOFF = 'capped-exponential';

const JOB_OPTIONS = {
  attempts: RETRY.attempts,
  backoff: { type: BACKOFF },
  // keep finished jobs long enough for the dashboard and for jobId de-duplication
  removeOnComplete: { age: 24 * 3600, count: 10_000 },
  // failed jobs stay visible for two weeks
  removeOnFail: { age: 14 * 24 * 3600 },
};

/**
 * Whether Redis runs every queue's scripts (their job counts, each in the queue's own slot on a
 * cluster), within `timeoutMs`: a queue waits for its connection, so while Redis is down the
 * check would otherwise never end.
 */
export async function queuesAnswer(connection: RedisConnection, queues: Queue[], timeoutMs = 2_000): Promise<void> {
  if (connection.status !== 'ready') throw new Error('Redis is unreachable');
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the queues did not answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    await Promise.race([Promise.all(queues.map((q) => q.getJobCounts('waiting'))), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Producer side, used by api pods. The connection fails fast while Redis is down (no offline
 * queue): the request has already committed its outbox row, so it answers at once and the
 * maintenance relay enqueues the job once Redis is back.
 */
export function createBullQueue(
  redisUrl: string,
  prefix: string,
  logger: Logger,
  enqueueTimeoutMs = 1_000,
): JobQueue & { connection: RedisConnection; ready(timeoutMs?: number): Promise<boolean>; answers(): Promise<void> } {
  const connection = connectRedis(redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1, lazyConnect: false });
  connection.on('error', (err: Error) => logger.warn({ err: err.message }, 'redis connection error (producer)'));
  const queues = Object.fromEntries(QUEUE_NAMES.map((name) => [
    name, new Queue(name, { connection, prefix: queuePrefix(prefix, name, connection.isCluster), defaultJobOptions: JOB_OPTIONS }),
  ])) as Record<QueueName, Queue>;
  for (const q of Object.values(queues)) q.on('error', (err) => logger.warn({ err: err.message, queue: q.name }, 'queue error'));

  return {
    connection,
    /**
     * Every queue runs a script (its job counts), in its own slot on a cluster: what readiness
     * checks, since a PING is answered by any node, even one that cannot serve a queue's keys.
     */
    async answers() {
      await queuesAnswer(connection, Object.values(queues));
    },
    /** Waits until Redis is reachable (commands fail at once before that); false on timeout. */
    async ready(timeoutMs = 10_000) {
      if (connection.status === 'ready') return true;
      return new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), timeoutMs);
        connection.once('ready', () => {
          clearTimeout(timer);
          resolve(true);
        });
      });
    },
    async enqueue(job: Job) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`enqueue timed out after ${enqueueTimeoutMs} ms`)), enqueueTimeoutMs);
      });
      try {
        await Promise.race([queues[job.queue].add(job.name, job.data, { jobId: job.id }), timeout]);
      } finally {
        clearTimeout(timer);
      }
    },
    async schedule(queue, name, everyMs) {
      await queues[queue].upsertJobScheduler(name, { every: everyMs }, { name, data: {}, opts: { removeOnComplete: 100, removeOnFail: 100 } });
    },
    async close() {
      await Promise.allSettled(Object.values(queues).map((q) => q.close()));
      connection.disconnect();
    },
  };
}

/** Consumer side, used by worker processes: one BullMQ Worker per queue, same processors. */
export function createBullWorkers(options: {
  redisUrl: string;
  prefix: string;
  processors: Processors;
  logger: Logger;
  concurrency?: Partial<Record<QueueName, number>>;
}): { workers: Worker[]; close(): Promise<void> } {
  const { redisUrl, processors, logger } = options;
  // Workers block on Redis; BullMQ requires maxRetriesPerRequest: null on their connection.
  const connection = connectRedis(redisUrl, { maxRetriesPerRequest: null });
  connection.on('error', (err: Error) => logger.warn({ err: err.message }, 'redis connection error (worker)'));
  const workers = QUEUE_NAMES.map((queue) => {
    const worker = new Worker(
      queue,
      async (bullJob) => {
        const attempt = bullJob.attemptsMade + 1;
        const maxAttempts = bullJob.opts.attempts ?? 1;
        return processors[queue](
          { id: bullJob.id ?? '', queue, name: bullJob.name, data: bullJob.data as Record<string, unknown> },
          { attempt, finalAttempt: attempt >= maxAttempts },
        );
      },
      {
        connection, prefix: queuePrefix(options.prefix, queue, connection.isCluster), concurrency: options.concurrency?.[queue] ?? (queue === 'mail' ? 32 : 4),
        // attemptsMade counts the attempt that just failed, as `attempt` does in backoffDelay
        settings: { backoffStrategy: (attemptsMade: number) => backoffDelay(attemptsMade) },
      },
    );
    worker.on('failed', (job, err) =>
      logger.warn({ queue, job: job?.name, jobId: job?.id, attempt: job?.attemptsMade, err: err.message }, 'job failed'));
    worker.on('error', (err) => logger.warn({ queue, err: err.message }, 'worker error'));
    return worker;
  });
  return {
    workers,
    async close() {
      await Promise.allSettled(workers.map((w) => w.close()));
      connection.disconnect();
    },
  };
}
