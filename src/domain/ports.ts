import type { TransactionOptions, Tx } from './storage';
import type { OutboxJob } from './storage/outbox';
import type { DomainEvent } from './events';

// What the domain needs from the infrastructure beyond storage, declared here and implemented
// elsewhere: the unit of work a use case runs in (src/usecases), and the channel that tells every
// process a client changed (src/queue).

/** The job queues: mail, record snapshots, the recurring maintenance, and webhooks. */
export const QUEUE_NAMES = ['mail', 'versions', 'maintenance', 'webhooks'] as const;
export type QueueName = (typeof QUEUE_NAMES)[number];

/**
 * What a use case's work holds while it runs (docs/architecture.md#one-unit-of-work): the one
 * transaction every store write joins, and the events it records, which the subscribers get when
 * the work is done (their writes join the transaction; their outbox rows are enqueued after the
 * commit). Only the unit of work opens a transaction.
 */
export interface UnitOfWork {
  readonly tx: Tx;
  record(...events: DomainEvent[]): void;
}

/**
 * Runs a use case's work (docs/architecture.md#one-unit-of-work): opens the one transaction, lets
 * storage write through it, hands the events the work recorded to the subscribers (their writes
 * join the transaction, their outbox rows are inserted in it), commits, then enqueues the outbox
 * rows. A write made by one stored-procedure call (a sign-in, a rotation) takes its rows from
 * `jobsOf` and commits them itself. Nothing else opens a transaction.
 * Implemented in src/usecases/unit-of-work.ts.
 */
export interface Work {
  /**
   * Runs `work` in one transaction with its events, then enqueues their jobs. `answerFirst`: the
   * caller answers once the transaction commits, and the jobs are enqueued after (they are in the
   * outbox already, and its relay enqueues what was not): an answer that must take as long whether
   * or not it sends an email.
   */
  run<T>(work: (uow: UnitOfWork) => Promise<T>, options?: TransactionOptions & { answerFirst?: boolean }): Promise<T>;
  /** The outbox rows of `events` for a single-call write; undefined when a subscriber must write in a transaction for one of them (then run it in `run`). */
  jobsOf(events: readonly DomainEvent[]): OutboxJob[] | undefined;
  /**
   * After a single-call write committed `events` with their rows: enqueues the rows (never throws:
   * a row that cannot be enqueued now is relayed later) and runs what subscribers do after a commit.
   */
  dispatch(jobs: OutboxJob[], events: readonly DomainEvent[]): Promise<void>;
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


/** What one attempt to send a webhook came to: the receiver's status and first bytes, or why there was none. */
export type WebhookAttempt =
  | { kind: 'answered'; status: number; ms: number; answer: string }
  | { kind: 'refused'; ms: number; reason: string };

/**
 * Sends one webhook delivery, signed with the endpoint's live secrets (src/jobs/webhook-sender.ts:
 * HTTP, Standard Webhooks signatures, never to a private address unless the operator allows it).
 * Never throws: what went wrong is the attempt's `reason`.
 */
export interface WebhookTransport {
  send(delivery: { url: string; secrets: readonly string[]; messageId: string; at: Date; body: string }): Promise<WebhookAttempt>;
}

/** Sends one logout token to a client's back-channel logout address (src/jobs/webhook-sender.ts, under the webhooks' rules). Never throws. */
export interface LogoutTransport {
  send(url: string, logoutToken: string): Promise<WebhookAttempt>;
}

/** The emails kept as files (the embedded default's mail folder, src/mail-files.ts). */
export interface MailFolder {
  /** Removes the emails addressed to any of `addresses`; answers how many. */
  removeMailsTo(addresses: readonly string[]): Promise<number>;
}
