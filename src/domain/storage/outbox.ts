import type { MailPayload } from '../mail';
import type { Tx } from './transactions';
import type { SnapshotPayload } from './versions';

export type OutboxStatus = 'pending' | 'done' | 'failed';

/** An erasure job's payload: the record, and its needles sealed to the outbox row (docs/lifecycle.md#erase). */
export interface ErasurePayload { entityId: number; sealedNeedles: string }

/**
 * A webhooks job's payload (docs/webhooks.md#deliveries): a fan-out's webhook type and the
 * account's public id where the change carried it; the endpoint a catch-up, a ping or deliveries
 * queued again are for; `notBefore`, when the job waits until then; a logout token's id.
 */
export interface WebhookJobPayload {
  type?: string; uuid?: string; endpoint?: string; notBefore?: string;
  /** A back-channel logout job's token (its `jti`, docs/openid-connect.md#back-channel-logout). */
  logout?: string;
}

/** What each queue's jobs carry: the payload is the queue's own (src/domain/payloads.ts reads each back). */
export interface OutboxPayloads {
  mail: MailPayload;
  versions: SnapshotPayload;
  webhooks: WebhookJobPayload;
  maintenance: ErasurePayload;
}
export type OutboxQueue = keyof OutboxPayloads;

interface OutboxJobOf<Q extends OutboxQueue> {
  id: string;
  applicationId: number;
  queue: Q;
  name: string;
  payload: OutboxPayloads[Q];
  /** The record a snapshot job belongs to (versions queue): lookups read its pending snapshots. */
  entityId?: number;
  /** The event the job is for (its `eventId`, the event store's `uid`): what it does, the stream says happened. */
  eventId?: string;
}

/** A job as written, beside the change it belongs to: its payload keyed by its queue. */
export type OutboxJob = { [Q in OutboxQueue]: OutboxJobOf<Q> }[OutboxQueue];

/**
 * A job as read back: its payload is what the row holds (JSON), read as its queue's by the payload
 * readers (src/domain/payloads.ts), never cast: a row written by hand or by another release may
 * be anything.
 */
export interface StoredOutboxJob {
  id: string;
  applicationId: number;
  queue: string;
  name: string;
  payload: unknown;
  entityId?: number;
  eventId?: string;
}

/** Jobs written in the transaction of the change they belong to, enqueued after it commits. */
export interface OutboxStore {
  /** Written in the caller's transaction, beside the change the job belongs to. */
  insert(jobs: OutboxJob[], now: Date, transaction: Tx): Promise<void>;
  find(id: string): Promise<(StoredOutboxJob & { status: OutboxStatus; attempts: number }) | undefined>;
  /**
   * Marks a pending job finished, committed on its own; false when another worker already did
   * (idempotence guard). `kept` replaces the payload: what a done job keeps of it (an email's
   * template and recipient, never its link).
   */
  completeAlone(id: string, now: Date, kept?: Record<string, unknown>): Promise<boolean>;
  /** Counts a failed attempt of a job (failed for good when `final`), committed on its own. */
  recordFailureAlone(id: string, message: string, final: boolean, now: Date): Promise<void>;
  /** Jobs still pending after `olderThan`: Redis was down, or a pod died between commit and enqueue. */
  stragglers(olderThan: Date, limit: number): Promise<StoredOutboxJob[]>;
  /** Deletes finished rows older than `before`, at most `limit`; returns how many. */
  purgeDoneAlone(before: Date, limit: number): Promise<number>;
  /** The pending rows of each queue that has any, and when the oldest of them was written. */
  backlog(): Promise<OutboxBacklog[]>;
  /** The jobs that failed for good since `since` (made then or later), counted per application and queue. */
  countFailed(since: Date): Promise<{ applicationId: number; queue: string; failed: number }[]>;
}

export interface OutboxBacklog { queue: string; pending: number; oldest: Date }
