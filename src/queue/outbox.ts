import type { Storage } from '../domain/storage';
import { jobOf } from '../domain/payloads';
import type { OutboxJob, StoredOutboxJob } from '../domain/storage/outbox';
import type { Logger } from '../logger';
import type { JobQueue, QueueName } from './port';

/**
 * What a job is for, as the queue dashboard shows it: never an address, a link or a value of the
 * record (`welcome email, en-US, application 3`; `snapshot of record 42`).
 */
export function about(j: OutboxJob | StoredOutboxJob, read = readable(j)): string {
  if (read?.queue === 'mail') return `${read.payload.template} email, ${read.payload.locale.slice(0, 10)}, application ${j.applicationId}`;
  if (read?.queue === 'versions' && j.entityId !== undefined) return `${j.name} of record ${j.entityId}, application ${j.applicationId}`;
  if (read?.queue === 'webhooks') {
    const endpoint = read.payload.endpoint?.slice(0, 40);
    const type = read.payload.type?.slice(0, 64) ?? 'ping';
    const what = j.name === 'fan-out' ? `${type} to ${endpoint ?? 'its endpoints'}` : `${j.name} of ${endpoint ?? 'every endpoint'}`;
    return `webhooks: ${what}, application ${j.applicationId}`;
  }
  return `${j.name}, application ${j.applicationId}`;
}

/** A job as its queue's, or undefined for one that is none of ours (its job says what is wrong with it when it runs). */
function readable(j: OutboxJob | StoredOutboxJob): OutboxJob | undefined {
  try {
    return jobOf(j);
  } catch {
    return undefined;
  }
}

/**
 * Per coalesced queue: when the last job went out, and the newest job held back since. A job
 * within `ms` of the last is held back; one timer then enqueues the newest held-back job, whose
 * drain records every row committed before it. A process that dies before the timer fires
 * leaves its rows pending, and the maintenance relay enqueues them (nothing is lost).
 */
function coalescer(enqueue: (j: OutboxJob) => Promise<void>) {
  const wakes = new Map<string, { last: number; held?: OutboxJob; timer?: NodeJS.Timeout }>();
  return function wake(j: OutboxJob, ms: number): Promise<void> | undefined {
    const state = wakes.get(j.queue) ?? { last: 0 };
    wakes.set(j.queue, state);
    const t = Date.now();
    if (t - state.last >= ms && !state.timer) {
      state.last = t;
      return enqueue(j);
    }
    state.held = j;
    state.timer ??= setTimeout(() => {
      const held = state.held!;
      state.held = undefined;
      state.timer = undefined;
      state.last = Date.now();
      void enqueue(held);
    }, Math.max(1, ms - (t - state.last)));
    return undefined;
  };
}

/** Enqueues failing in a row after which a relay run stops (Redis is down: the next run tries again). */
const RELAY_FAILURES_TO_STOP = 3;

/**
 * The outbox (docs/operations.md): a row is written in the same transaction as the
 * change it belongs to (by the unit of work, src/usecases/unit-of-work.ts), and enqueued only after
 * commit, with the outbox id as job id. If the enqueue fails (Redis down, pod killed), the row stays
 * pending and the maintenance relay enqueues it.
 */
export function createOutbox(deps: {
  db: Storage; queue: JobQueue; logger: Logger; now?: () => Date;
  /**
   * Queues whose jobs drain every pending row of their queue (versions: a job records its own
   * snapshot and up to 499 others per batch), so one job per `ms` is enough to wake a worker: the
   * rows committed meanwhile are recorded by that job or by one enqueued `ms` after the first.
   * None by default (every job is enqueued).
   */
  coalesce?: { queues: QueueName[]; ms: number };
}): { dispatch(jobs: OutboxJob[]): Promise<void>; relay(graceMs: number, limit?: number): Promise<number> } {
  const { db, queue, logger } = deps;
  const now = deps.now ?? (() => new Date());

  // the job carries the outbox id and what it is for (shown on the dashboard); the payload stays in
  // the database (it holds the recipient and sealed links)
  // (a row whose payload names `notBefore` waits until then)
  // (a job just committed is its queue's already: only a row read back is checked, by the relay)
  const toJob = (j: OutboxJob | StoredOutboxJob, read: OutboxJob | undefined) => {
    const notBefore = read?.queue === 'webhooks' && read.payload.notBefore !== undefined ? Date.parse(read.payload.notBefore) : NaN;
    const delayMs = Number.isNaN(notBefore) ? 0 : notBefore - now().getTime();
    return { id: j.id, queue: j.queue as QueueName, name: j.name, data: { outboxId: j.id, about: about(j, read) }, ...(delayMs > 0 && { delayMs }) };
  };

  const enqueue = async (j: OutboxJob) => {
    try {
      await queue.enqueue(toJob(j, j));
    } catch (err) {
      logger.warn({ outboxId: j.id, queue: j.queue, job: j.name, err: (err as Error).message }, 'enqueue failed; the outbox relay will retry');
    }
  };

  const wake = coalescer(enqueue);

  /** Enqueues committed jobs. Never throws: a job that cannot be enqueued now is relayed later. */
  async function dispatch(jobs: OutboxJob[]): Promise<void> {
    const coalesce = deps.coalesce;
    await Promise.all(jobs.map((j) => (coalesce?.queues.includes(j.queue as QueueName) ? wake(j, coalesce.ms) : enqueue(j))));
  }

  return {
    dispatch,

    /**
     * Re-enqueues jobs still pending after `graceMs`; returns how many were relayed. One enqueue
     * that fails (a timeout while Redis comes back, its scripts loading) does not end the run: the
     * rest are tried, so none waits for the next run; three failures in a row do (Redis is down).
     */
    async relay(graceMs: number, limit = 500): Promise<number> {
      const stragglers = await db.outbox.stragglers(new Date(now().getTime() - graceMs), limit);
      let relayed = 0;
      let failing = 0;
      for (const j of stragglers) {
        try {
          await queue.enqueue(toJob(j, readable(j)));
          relayed++;
          failing = 0;
        } catch (err) {
          logger.warn({ outboxId: j.id, err: (err as Error).message }, 'relay could not enqueue; will try again');
          if (++failing >= RELAY_FAILURES_TO_STOP) break; // the queue is down: stop, the next run tries again
        }
      }
      return relayed;
    },
  };
}
/** The outbox with its relay (the maintenance job's). */
export type RelayingOutbox = ReturnType<typeof createOutbox>;
