import type { Logger } from '../logger';
import { backoffDelay, Job, JobQueue, Processors, QueueName, RETRY } from './port';

/**
 * The embedded default's job runner: jobs run in this process, with the same processors,
 * retries and backoff as the BullMQ workers. Nothing is lost when the process dies mid-job:
 * outbox jobs stay pending in the database and the maintenance relay runs them again.
 */
export function createInProcessQueue(options: {
  processors: Processors;
  logger: Logger;
  attempts?: number;
  backoffMs?: number;
}): JobQueue & { idle(): Promise<void> } {
  const { processors, logger } = options;
  const attempts = options.attempts ?? RETRY.attempts;
  const backoffMs = options.backoffMs ?? RETRY.backoffMs;
  const inFlight = new Set<Promise<void>>();
  const running = new Set<string>();
  /** Retries and schedules waiting on a timer, each with what settles its tracked promise when it is cancelled. */
  const timers = new Map<NodeJS.Timeout, () => void>();
  let closed = false;

  const track = (p: Promise<void>) => {
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p));
  };

  async function run(job: Job, attempt: number): Promise<void> {
    if (closed) return;
    try {
      const result = await processors[job.queue](job, { attempt, finalAttempt: attempt >= attempts });
      logger.debug({ queue: job.queue, job: job.name, jobId: job.id, result }, 'job completed');
      running.delete(job.id);
    } catch (err) {
      if (attempt >= attempts) {
        running.delete(job.id);
        logger.error({ queue: job.queue, job: job.name, jobId: job.id, err }, 'job failed after its last attempt');
        return;
      }
      const delay = backoffDelay(attempt, backoffMs);
      logger.warn({ queue: job.queue, job: job.name, jobId: job.id, attempt, retryInMs: delay, err }, 'job failed; will retry');
      track(new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          timers.delete(timer);
          run(job, attempt + 1).finally(resolve);
        }, delay);
        timer.unref();
        timers.set(timer, resolve);
      }));
    }
  }

  return {
    async enqueue(job) {
      if (closed) throw new Error('the job runner is closed');
      if (running.has(job.id)) return; // same id already queued: a no-op, as with BullMQ
      running.add(job.id);
      if (job.delayMs !== undefined && job.delayMs > 0) {
        // waiting for its time is not work in progress: idle() does not wait for it, close() drops it (its outbox row stays pending)
        const timer = setTimeout(() => {
          timers.delete(timer);
          track(run(job, 1));
        }, job.delayMs);
        timer.unref();
        timers.set(timer, () => running.delete(job.id));
        return;
      }
      track(new Promise<void>((resolve) => setImmediate(() => run(job, 1).finally(resolve))));
    },
    async schedule(queue: QueueName, name: string, everyMs: number) {
      const timer = setInterval(() => {
        if (!closed) void this.enqueue({ id: `${queue}-${name}-${Date.now()}`, queue, name, data: {} });
      }, everyMs);
      timer.unref();
      timers.set(timer, () => {});
    },
    /** Resolves when no job is running or waiting for a retry (tests and graceful shutdown); a job waiting for its delay is neither. */
    async idle() {
      while (inFlight.size > 0) await Promise.allSettled([...inFlight]);
    },
    async close() {
      closed = true;
      // a retry not yet due is dropped: its outbox row stays pending for the relay of the next start
      for (const [timer, cancelled] of timers) {
        clearTimeout(timer);
        cancelled();
      }
      timers.clear();
      await Promise.allSettled([...inFlight]);
    },
  };
}
