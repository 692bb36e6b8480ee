/**
 * The queue port: one way to enqueue jobs, whatever runs them. The BullMQ adapter (production)
 * and the in-process adapter (embedded default) call the same processors from workers/.
 */
export const QUEUE_NAMES = ['mail', 'versions', 'maintenance'] as const;
export type QueueName = (typeof QUEUE_NAMES)[number];

export interface Job {
  /** Unique: the outbox id for outbox jobs, so enqueuing one twice is a no-op. No ':' in it. */
  id: string;
  queue: QueueName;
  name: string;
  data: Record<string, unknown>;
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

/** Retry policy shared by both adapters. */
export const RETRY = { attempts: 8, backoffMs: 2_000 } as const;

/** Delay before retry number `attempt` + 1: exponential, like BullMQ's `exponential` backoff. */
export const backoffDelay = (attempt: number, baseMs: number = RETRY.backoffMs): number => baseMs * 2 ** (attempt - 1);
