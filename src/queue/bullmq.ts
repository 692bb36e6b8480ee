import type { Processor, Queue, Worker, WorkerOptions } from 'bullmq';
import type { Logger } from '../logger';
import { backoffDelay, Job, JobQueue, Processors, QUEUE_NAMES, QueueName, RETRY } from './port';
import { connectRedis, queuePrefix, quietRedisErrors, type RedisConnection } from './redis';

/** bullmq, loaded by the first queue or worker (as ioredis is: see ./redis). */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const bullmq = () => require('bullmq') as typeof import('bullmq');

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
  const warn = quietRedisErrors(logger);
  connection.on('error', (err: Error) => warn('redis connection error (producer)', err));
  const { Queue } = bullmq();
  const queues = Object.fromEntries(QUEUE_NAMES.map((name) => [
    name, new Queue(name, { connection, prefix: queuePrefix(prefix, name, connection.isCluster), defaultJobOptions: JOB_OPTIONS }),
  ])) as Record<QueueName, Queue>;
  for (const q of Object.values(queues)) q.on('error', (err) => warn('queue error', err, { queue: q.name }));

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
        const ready = () => {
          clearTimeout(timer);
          resolve(true);
        };
        const timer = setTimeout(() => {
          connection.off('ready', ready);
          resolve(false);
        }, timeoutMs);
        connection.once('ready', ready);
      });
    },
    async enqueue(job: Job) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`enqueue timed out after ${enqueueTimeoutMs} ms`)), enqueueTimeoutMs);
      });
      try {
        await Promise.race([queues[job.queue].add(job.name, job.data, { jobId: job.id, ...(job.delayMs !== undefined && job.delayMs > 0 && { delay: job.delayMs }) }), timeout]);
      } finally {
        clearTimeout(timer);
      }
    },
    async schedule(queue, name, everyMs) {
      await queues[queue].upsertJobScheduler(name, { every: everyMs }, { name, data: {}, opts: { removeOnComplete: 100, removeOnFail: 100 } });
    },
    async close() {
      // a queue's close waits for nothing here but its own commands in flight; bounded all the same
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.allSettled(Object.values(queues).map((q) => q.close())),
        new Promise((r) => (timer = setTimeout(r, 2_000))),
      ]);
      clearTimeout(timer);
      connection.disconnect();
    },
  };
}

/** How long a stopping worker process waits for its jobs in progress (docs/operations.md). */
export const WORKER_DRAIN_MS = 25_000;

/**
 * How long this process may have room for a queue's jobs while that queue has jobs waiting and
 * none starts here, before its BullMQ Worker is judged stuck and replaced (docs/scaling.md).
 */
export const STUCK_AFTER_MS = 30_000;

/** One look at a queue from a worker process: what waits in Redis, and what this process does. */
export interface QueueSample {
  now: number;
  /** Jobs ready to run (BullMQ's `wait` list); delayed retries are not counted. */
  waiting: number;
  /** Jobs this process is running for the queue. */
  active: number;
  concurrency: number;
  /** Jobs this process has started for the queue, ever: a counter, compared between samples. */
  started: number;
}

/**
 * Judges, from samples taken every few seconds, whether a BullMQ Worker's fetch loop has stopped:
 * jobs wait, this process has room, and none has started for `stuckAfterMs`. A busy worker (no
 * room) or one that starts jobs, however slowly, is never judged stuck; neither is a process that
 * cannot see the queue (a failed sample is not a sample).
 */
export function stuckWorkerJudge(stuckAfterMs = STUCK_AFTER_MS): (sample: QueueSample) => boolean {
  let since: number | undefined;
  let lastStarted: number | undefined;
  return (sample) => {
    const idleWithWork = sample.waiting > 0 && sample.active < sample.concurrency && sample.started === lastStarted;
    lastStarted = sample.started;
    if (!idleWithWork) {
      since = undefined;
      return false;
    }
    since ??= sample.now;
    if (sample.now - since < stuckAfterMs) return false;
    since = undefined;
    return true;
  };
}

/** Consumer side, used by worker processes: one BullMQ Worker per queue, same processors. */
export function createBullWorkers(options: {
  redisUrl: string;
  prefix: string;
  processors: Processors;
  logger: Logger;
  concurrency?: Partial<Record<QueueName, number>>;
  /** See STUCK_AFTER_MS; how often the queues are looked at is a sixth of it. */
  stuckAfterMs?: number;
  /** Makes each queue's BullMQ Worker (tests inject a fault here); `new Worker(...)` by default. */
  makeWorker?: (queue: QueueName, processor: Processor, options: WorkerOptions) => Worker;
}): { workers: Worker[]; close(drainMs?: number): Promise<{ cutOff: number; abandoned: boolean }> } {
  const { redisUrl, processors, logger } = options;
  const { Queue, Worker } = bullmq();
  const makeWorker = options.makeWorker ?? ((queue, processor, workerOptions) => new Worker(queue, processor, workerOptions));
  // Workers block on Redis; BullMQ requires maxRetriesPerRequest: null on their connection.
  const connection = connectRedis(redisUrl, { maxRetriesPerRequest: null });
  const warn = quietRedisErrors(logger);
  connection.on('error', (err: Error) => warn('redis connection error (worker)', err));
  const prefixOf = (queue: QueueName) => queuePrefix(options.prefix, queue, connection.isCluster);
  const concurrencyOf = (queue: QueueName) => options.concurrency?.[queue] ?? (queue === 'mail' ? 32 : queue === 'webhooks' ? 16 : 4);
  const running = Object.fromEntries(QUEUE_NAMES.map((q) => [q, { active: 0, started: 0 }])) as Record<QueueName, { active: number; started: number }>;

  const start = (queue: QueueName) => {
    const worker = makeWorker(
      queue,
      async (bullJob) => {
        const attempt = bullJob.attemptsMade + 1;
        const maxAttempts = bullJob.opts.attempts ?? 1;
        running[queue].active++;
        running[queue].started++;
        try {
          return await processors[queue](
            { id: bullJob.id ?? '', queue, name: bullJob.name, data: bullJob.data as Record<string, unknown> },
            { attempt, finalAttempt: attempt >= maxAttempts },
          );
        } finally {
          running[queue].active--;
        }
      },
      {
        connection, prefix: prefixOf(queue), concurrency: concurrencyOf(queue),
        // attemptsMade counts the attempt that just failed, as `attempt` does in backoffDelay
        settings: { backoffStrategy: (attemptsMade: number) => backoffDelay(attemptsMade) },
      },
    );
    worker.on('failed', (job, err) =>
      logger.warn({ queue, job: job?.name, jobId: job?.id, attempt: job?.attemptsMade, err: err.message }, 'job failed'));
    worker.on('error', (err) => warn('worker error', err, { queue }));
    return worker;
  };
  const workers = QUEUE_NAMES.map(start);

  // BullMQ's fetch loop waits on a blocking connection of its own; after a Redis Cluster node
  // restarts it has been seen to stay parked for good while jobs waited. The queues are looked at
  // on a connection that fails fast, and a Worker judged stuck is replaced by a new one (with a
  // new blocking connection): the jobs it left are taken by the new one, nothing is lost.
  const stuckAfterMs = options.stuckAfterMs ?? STUCK_AFTER_MS;
  const looker = connectRedis(redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
  looker.on('error', () => undefined); // the worker connection above reports Redis errors
  const lookouts = QUEUE_NAMES.map((queue) => new Queue(queue, { connection: looker, prefix: prefixOf(queue) }));
  for (const q of lookouts) q.on('error', () => undefined);
  const judges = QUEUE_NAMES.map(() => stuckWorkerJudge(stuckAfterMs));
  const retired = new Set<Promise<void>>();
  let looking = false;
  const look = setInterval(() => {
    if (looking || looker.status !== 'ready') return;
    looking = true;
    void Promise.all(QUEUE_NAMES.map(async (queue, i) => {
      const waiting = await lookouts[i].getWaitingCount().catch(() => undefined);
      if (waiting === undefined) return;
      const stuck = judges[i]({ now: Date.now(), waiting, concurrency: concurrencyOf(queue), ...running[queue] });
      if (!stuck) return;
      logger.warn({ queue, waiting, stuck_ms: stuckAfterMs }, 'jobs waited while this worker had room and took none: replacing its queue worker');
      const old = workers[i];
      workers[i] = start(queue);
      // closed at once without waiting for its jobs in progress (they run on; one whose completion
      // cannot be recorded any more is taken again by the new worker once its lock expires)
      retired.add(old.close(true).catch(() => undefined));
    }))
      .catch((err: Error) => logger.warn({ err: err.message }, 'could not look at the queues; will look again'))
      .finally(() => (looking = false));
  }, Math.max(250, Math.floor(stuckAfterMs / 6)));
  look.unref();

  return {
    workers,
    /**
     * Takes no new job and waits for the jobs in progress, up to `drainMs`, then closes BullMQ's
     * workers. BullMQ's graceful close waits for Redis (its blocking connections to end, the last
     * completions to be written), which never happens while Redis is unreachable; then it is
     * closed without waiting instead. What that leaves unwritten is safe: a finished job's outbox
     * row says it is done, so the job, taken again later, does nothing. Answers how many jobs were
     * still running at the deadline (cut off: they run again) and whether BullMQ's close did not
     * wait for Redis (`abandoned`).
     */
    async close(drainMs = WORKER_DRAIN_MS): Promise<{ cutOff: number; abandoned: boolean }> {
      clearInterval(look);
      // no new job from now on; those in progress go on (pause without waiting: that wait is BullMQ's, bound to Redis)
      await Promise.allSettled(workers.map((w) => w.pause(true)));
      const busy = () => QUEUE_NAMES.reduce((n, q) => n + running[q].active, 0);
      const end = Date.now() + drainMs;
      while (busy() > 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 100));
      const cutOff = busy();
      const reachable = connection.status === 'ready' && cutOff === 0;
      let timer: NodeJS.Timeout | undefined;
      const closed = await Promise.race([
        Promise.allSettled([...retired, ...workers.map((w) => w.close(!reachable)), ...lookouts.map((q) => q.close())]).then(() => true),
        // Redis may go away in the middle of a graceful close, which then waits for it
        new Promise<false>((r) => (timer = setTimeout(() => r(false), 5_000))),
      ]);
      clearTimeout(timer);
      looker.disconnect();
      connection.disconnect();
      return { cutOff, abandoned: !reachable || !closed };
    },
  };
}
