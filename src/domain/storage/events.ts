import type { EventType, KeptEvent } from '../events';
import type { Tx } from './transactions';

/** Why a sign-in of an account failed, as its activity shows it. */
export const FAILURE_REASONS = ['wrong_password', 'wrong_code', 'account_disabled'] as const;
export type FailureReason = (typeof FAILURE_REASONS)[number];

/** A failed sign-in of a known account, as it is counted: where it came from, and when. */
export interface FailedSignIn {
  applicationId: number;
  accountId: number;
  reason: FailureReason;
  at: Date;
  clientId?: string;
  address?: string;
  userAgent?: string;
}

/**
 * Where a listing of an account's activity continues: after the entry at `at` of `kind` (an event,
 * or a minute of failed sign-ins) with `id`. Entries are ordered newest first by time, an event
 * before a minute of failures at the same time, then by id.
 */
export interface ActivityCursor { at: Date; kind: 'event' | 'failures'; id: string }

/** One entry of an account's activity: an event about it, or the failed sign-ins of one reason in one minute. */
export type ActivityEntry = {
  id: string;
  at: Date;
  clientId?: string;
  address?: string;
  userAgent?: string;
} & (
  | { kind: 'event'; type: EventType; actorKind: KeptEvent['actor']['kind']; actor: KeptEvent['actor']; data: Record<string, unknown> }
  | { kind: 'failures'; type: 'account.sign_in_failed'; reason: FailureReason; count: number; lastAt: Date }
);

export interface ActivityQuery {
  applicationId: number;
  accountId: number;
  /** Event types to list (the failed sign-ins are `account.sign_in_failed`). */
  types: readonly string[];
  limit: number;
  after?: ActivityCursor;
  since?: Date;
  until?: Date;
}

/**
 * The event store (docs/activity.md): every event, written in the transaction of its change,
 * ordered by its id; the failed sign-ins of an account, one row per reason and minute with a
 * count, so guessing cannot grow it without bound.
 */
export interface EventStore {
  /** Appends `events` in the change's transaction (a change that cannot write its events fails). */
  append(events: readonly KeptEvent[], tx: Tx): Promise<void>;
  /** Counts one failed sign-in in its minute; commits alone, outside any change (the sign-in it belongs to changes nothing). */
  countFailureAlone(failure: FailedSignIn): Promise<void>;
  /** One page of an account's activity, newest first (see ActivityCursor): the caller asks one more than it shows to know whether more follow. */
  activity(query: ActivityQuery): Promise<ActivityEntry[]>;
  /** Deletes events and counted failures older than `before`, at most `limit` of each; returns how many. */
  sweepAlone(before: Date, limit: number): Promise<number>;
  /** The events that changed a record (record.created, .updated, .replaced, .deleted), newest first: who made each version. */
  recordChanges(applicationId: number, accountId: number, limit: number): Promise<StoredEvent[]>;
  /** One event by its own id (`eventId`). */
  findByUid(uid: string): Promise<StoredEvent | undefined>;
  /** The events of these own ids (those the store has), in the store's order. */
  findByUids(uids: readonly string[]): Promise<StoredEvent[]>;
  /**
   * The application's events after the store's `afterId` that happened at `since` or later, in the
   * store's order, at most `limit` (read along the store's primary key: `afterId` should be recent).
   */
  listSince(applicationId: number, afterId: number, since: Date, limit: number): Promise<StoredEvent[]>;
  /** The store's newest id, 0 when it is empty. */
  findNewestId(): Promise<number>;
  /** The newest events of an application, newest first (or of one account): what the tests read back of the stream. */
  latest(applicationId: number, limit: number, accountId?: number): Promise<StoredEvent[]>;
}

/** An event as the store holds it: its place in the stream and what is kept of it. */
export interface StoredEvent extends KeptEvent {
  id: string;
  accountId?: number;
}
