import type { StoredOutboxJob } from './outbox';
import type { Tx } from './transactions';

/** A webhook endpoint as stored: its secrets sealed (the previous one until `previousUntil`, after a rotation). */
export interface StoredEndpoint {
  id: number;
  applicationId: number;
  /** Its public id (`ep_…`). */
  endpointId: string;
  url: string;
  /** The webhook types it subscribed to, or `*` for every one. */
  types: '*' | string[];
  description: string;
  includeRecord: boolean;
  secretSealed: string;
  previousSecretSealed: string | null;
  previousUntil: Date | null;
  disabledAt: Date | null;
  /** Since when every attempt to it has failed (none: the last one went through). */
  failingSince: Date | null;
  /** The newest event of the store when it was added (or enabled again): its first seconds are read back from there; null once they were. */
  eventsFrom: number | null;
  /** Since when it gets events: when it was added, or enabled again. */
  listeningSince: Date;
  createdAt: Date;
}

export type NewEndpoint = Omit<StoredEndpoint, 'id' | 'previousSecretSealed' | 'previousUntil' | 'disabledAt' | 'failingSince' | 'listeningSince' | 'createdAt'>;

/** What an enabled endpoint subscribed to: what a pod needs to know whether an event goes out at all. */
export interface EndpointSubscription { applicationId: number; types: '*' | string[] }

/** Where a delivery stands: waiting (or retrying), delivered (2xx), or given up. */
export type DeliveryState = 'pending' | 'delivered' | 'failed';

/** One event for one endpoint: its message id (the `webhook-id`, the same on every attempt), its body as sent, its attempts. */
export interface StoredDelivery {
  id: number;
  applicationId: number;
  endpointId: number;
  messageId: string;
  type: string;
  /** What orders deliveries: an account's go one after another to each endpoint (its id; `app` for the application's events; a ping's own). */
  accountKey: string;
  /** The account the event is about, if any. */
  accountId: number | null;
  /** The event's place in the event store (0 for a ping): deliveries of one account go in this order. */
  eventSeq: number;
  payload: string;
  state: DeliveryState;
  attempts: number;
  nextAttemptAt: Date;
  /** Failing after this, it is given up: RETRY_FOR_MS after it was made, or sent again. */
  giveUpAt: Date;
  lastAttemptAt: Date | null;
  lastStatus: number | null;
  lastMs: number | null;
  lastAnswer: string | null;
  createdAt: Date;
}

export type NewDelivery = Pick<StoredDelivery, 'applicationId' | 'endpointId' | 'messageId' | 'type' | 'accountKey' | 'accountId' | 'eventSeq' | 'payload'>;

/** What an attempt came to: the receiver's status (null: none) and how long, its first bytes, and the delivery's state after it. */
export interface AttemptRecord {
  /** The claim the attempt was made under (claimAlone's token). */
  claim: string;
  status: number | null; ms: number; answer: string; state: DeliveryState; nextAttemptAt: Date;
  /** What the delivery keeps of its body from now on, when not all of it (an erased account's uuid is not kept once sent). */
  payload?: string;
}

/** An application's webhook endpoints (docs/webhooks.md), written in the transaction of their event. */
export interface WebhookStore {
  insert(endpoint: NewEndpoint, now: Date, transaction: Tx): Promise<StoredEndpoint>;
  /** The application's endpoints, oldest first. */
  list(applicationId: number): Promise<StoredEndpoint[]>;
  find(applicationId: number, endpointId: string, transaction?: Tx): Promise<StoredEndpoint | undefined>;
  /** An endpoint by its own key (`id`). */
  findByKey(id: number): Promise<StoredEndpoint | undefined>;
  /** Removes the endpoint; false when there was none. */
  remove(applicationId: number, endpointId: string, transaction: Tx): Promise<boolean>;
  /** A new secret; the current one becomes the previous, valid until `previousUntil`. False when there is no such endpoint. */
  rotateSecret(applicationId: number, endpointId: string, secretSealed: string, previousUntil: Date, now: Date, transaction: Tx): Promise<boolean>;
  /** New deliveries, due now, tried for RETRY_FOR_MS; one whose endpoint already has its message id is left out (a fan-out run again). Answers how many were new. */
  insertDeliveries(deliveries: NewDelivery[], now: Date, transaction: Tx): Promise<number>;
  /**
   * The fan-out of one event, or a catch-up (the webhooks outbox row `outboxId`): marks the row
   * done and inserts its deliveries in one transaction of its own, and for a catch-up marks the
   * endpoint `caughtUp` as caught up. False (and nothing written) when the row was not
   * pending any more: another worker fanned it out.
   */
  fanOutAlone(outboxId: string, deliveries: NewDelivery[], now: Date, caughtUp?: number): Promise<boolean>;
  /**
   * The fan-out of pending events: the webhooks outbox row `ownId` (a `fan-out`) and up to
   * `limit - 1` other pending fan-out rows, oldest first; `deliveriesOf` makes each row's
   * deliveries (by row id; a row it leaves out, whose deliveries could not be made, stays pending),
   * then one transaction of its own marks the rows still pending and held by no other worker done
   * and inserts their deliveries. `own` is false (its own row not done) when the
   * job's own row was not pending any more, or is held by another transaction (`held`: another
   * worker's batch, or a Galera node still applying the row's insert): then it may still be
   * pending afterwards, and the job must run again.
   */
  fanOutBatchAlone(
    ownId: string, limit: number, deliveriesOf: (rows: StoredOutboxJob[]) => Promise<Map<string, NewDelivery[]>>, now: Date,
  ): Promise<{ own: boolean; held?: boolean; deliveries: NewDelivery[] }>;
  /**
   * An endpoint's deliveries due at `now`, in the event store's order, each the first pending one
   * of its account for that endpoint (a later one waits for it, delivered or given up) and none
   * behind an earlier event of its account not fanned out yet; at most `limit`. `others`: how many
   * other pending deliveries were seen (0: there is nothing else to send now).
   */
  listDueDeliveries(endpointId: number, now: Date, limit: number): Promise<{ due: StoredDelivery[]; others: number }>;
  /** The endpoints with deliveries due at `now`, the longest due first (what the deliverer runs for). */
  listDueEndpoints(now: Date, limit: number): Promise<number[]>;
  /**
   * Takes due deliveries for one attempt: moves the next attempt of those still pending and due at
   * `now` to `until`, so no other worker sends them meanwhile (a worker that dies mid-attempt
   * leaves them due again at `until`). Answers the claim's token and the ids taken; the others another worker took or finished.
   */
  claimAlone(deliveryIds: number[], now: Date, until: Date): Promise<{ claim: string; ids: number[] }>;
  /** Records an attempt of a pending delivery under its claim; false when it was not pending any more, or another worker took it since. */
  recordAttemptAlone(deliveryId: number, attempt: AttemptRecord, now: Date): Promise<boolean>;
  /** The endpoint failing since `since` (when it was not), or recovered (null, when it was failing); false when nothing changed. */
  markFailingAlone(endpointId: number, since: Date | null): Promise<boolean>;
  /** An endpoint's latest deliveries, newest first (/webhooks/deliveries). */
  listDeliveries(applicationId: number, endpointId: number, limit: number): Promise<StoredDelivery[]>;
  /** One delivery of the application's. */
  findDelivery(applicationId: number, deliveryId: number): Promise<StoredDelivery | undefined>;
  /** What every enabled endpoint subscribed to. */
  listSubscriptions(): Promise<EndpointSubscription[]>;
  /**
   * Disables (a time) or enables (null) an endpoint; enabled, it gets events from `now` on, its
   * first seconds read back from the store's `eventsFrom`. False when there is no such endpoint.
   */
  setDisabled(applicationId: number, endpointId: string, disabledAt: Date | null, now: Date, eventsFrom: number, transaction: Tx): Promise<boolean>;
  /** Sends a delivery again (due now, tried for RETRY_FOR_MS again, its attempts kept); false when it is not the application's or is pending already. */
  resend(applicationId: number, deliveryId: number, now: Date, transaction: Tx): Promise<boolean>;
  /** Sends again (as `resend` does) every delivery of the endpoint made since `since` that was given up; answers how many. */
  replayFailed(endpointId: number, since: Date, now: Date, transaction: Tx): Promise<number>;
  /** The public id of the account `entityId` (its record's uuid, or its last version's once it is deleted). */
  findAccountUuid(applicationId: number, entityId: number): Promise<string | undefined>;
  /** Per endpoint (its public id) with deliveries waiting: how many, and when the oldest was made. */
  listBacklog(): Promise<Array<{ endpoint: string; pending: number; oldest: Date }>>;
  /** Deletes finished deliveries older than `before`, at most `limit`; answers how many. */
  purgeFinishedAlone(before: Date, limit: number): Promise<number>;
}
