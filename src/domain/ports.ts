import type { Tx } from './storage';
import type { OutboxJob } from './storage/outbox';

// What the domain needs from the infrastructure beyond storage, declared here and implemented
// under src/queue: the outbox that commits jobs with the change they belong to, and the channel
// that tells every process a client changed.

/** The job queues: mail, record snapshots, and the recurring maintenance. */
export const QUEUE_NAMES = ['mail', 'versions', 'maintenance'] as const;
export type QueueName = (typeof QUEUE_NAMES)[number];

/** What work committed with its jobs answers: its result, and the jobs to enqueue after commit. */
export interface Committed<T> { result: T; jobs: OutboxJob[] }

/**
 * The outbox: a job is written in the same transaction as the change it belongs to, and enqueued
 * only after the commit; one that cannot be enqueued then is relayed later, never lost.
 */
export interface Outbox {
  /** Describes a job; write it inside the transaction (`commit` does), then dispatch it after commit. */
  job(applicationId: number, queueName: QueueName, name: string, payload: Record<string, unknown>, entityId?: number): OutboxJob;
  write(jobs: OutboxJob[], tx: Tx): Promise<void>;
  /** Enqueues committed jobs. Never throws: a job that cannot be enqueued now is relayed later. */
  dispatch(jobs: OutboxJob[]): Promise<void>;
  /** Runs `work` in one transaction with the jobs it answers, then dispatches them. Returns what `work` returned. */
  commit<T>(work: (tx: Tx) => Promise<Committed<T>>): Promise<T>;
}

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

