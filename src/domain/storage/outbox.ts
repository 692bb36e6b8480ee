import type { Tx } from './transactions';

export type OutboxStatus = 'pending' | 'done' | 'failed';

export interface OutboxJob {
  id: string;
  applicationId: number;
  queue: string;
  name: string;
  payload: Record<string, unknown>;
  /** The record a snapshot job belongs to (versions queue): lookups read its pending snapshots. */
  entityId?: number;
  /** The event the job is for (its `eventId`, the event store's `uid`): what it does, the stream says happened. */
  eventId?: string;
}

/** Jobs written in the transaction of the change they belong to, enqueued after it commits. */
export interface OutboxStore {
  /** Written in the caller's transaction, beside the change the job belongs to. */
  insert(jobs: OutboxJob[], now: Date, transaction: Tx): Promise<void>;
  find(id: string): Promise<(OutboxJob & { status: OutboxStatus; attempts: number }) | undefined>;
  /** Marks a pending job finished, committed on its own; false when another worker already did (idempotence guard). */
  completeAlone(id: string, now: Date, payload?: Record<string, unknown>): Promise<boolean>;
  /** Counts a failed attempt of a job (failed for good when `final`), committed on its own. */
  recordFailureAlone(id: string, message: string, final: boolean, now: Date): Promise<void>;
  /** Jobs still pending after `olderThan`: Redis was down, or a pod died between commit and enqueue. */
  stragglers(olderThan: Date, limit: number): Promise<OutboxJob[]>;
  /** Deletes finished rows older than `before`, at most `limit`; returns how many. */
  purgeDoneAlone(before: Date, limit: number): Promise<number>;
  /** The pending rows of each queue that has any, and when the oldest of them was written. */
  backlog(): Promise<OutboxBacklog[]>;
}

export interface OutboxBacklog { queue: string; pending: number; oldest: Date }
