/**
 * The queue port: one way to enqueue jobs, whatever runs them. The BullMQ adapter (production)
 * and the in-process adapter (embedded default) call the same processors from workers/.
 */
import type { QueueName } from '../domain/ports';

export { QUEUE_NAMES, type QueueName } from '../domain/ports';

export interface Job {
  /** Unique: the outbox id for outbox jobs, so enqueuing one twice is a no-op. No ':' in it. */
  id: string;
  queue: QueueName;
  name: string;
  data: Record<string, unknown>;
  /** Run no sooner than this many milliseconds from now. */
  delayMs?: number;
}

export interface JobContext {
  /** 1 for the first try. */
  attempt: number;
  /** True on the last try: a failure now is final. */
  finalAttempt: boolean;
}

export type Processor = (job: Job, context: JobContext) => Promise<unknown>;
export type Processors = Record<QueueName, Processor>;

export interface JobQueue {
  enqueue(job: Job): Promise<void>;
  /** A recurring job; safe to call from every process at every start (no duplicates). */
  schedule(queue: QueueName, name: string, everyMs: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * Retry policy shared by both adapters: waits double from 2 s and are capped at 10 minutes, over
 * 20 attempts in all, so a job outlives an outage of about two hours (an SMTP server down, a
 * database restored) before it is given up and shown as failed.
 */
export const RETRY = { attempts: 20, backoffMs: 2_000, maxBackoffMs: 10 * 60_000 } as const;

/** Delay before retry number `attempt` + 1: exponential from `baseMs`, capped at RETRY.maxBackoffMs. */
export const backoffDelay = (attempt: number, baseMs: number = RETRY.backoffMs): number =>
  Math.min(baseMs * 2 ** (attempt - 1), RETRY.maxBackoffMs);

/** Time from a job's first attempt to its last (RETRY's window): 1 h 57 min. */
export const retryWindowMs = (attempts: number = RETRY.attempts): number =>
  Array.from({ length: attempts - 1 }, (_, i) => backoffDelay(i + 1)).reduce((a, b) => a + b, 0);
