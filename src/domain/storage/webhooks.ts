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
  createdAt: Date;
}

export type NewEndpoint = Omit<StoredEndpoint, 'id' | 'previousSecretSealed' | 'previousUntil' | 'disabledAt' | 'createdAt'>;

/** Where a delivery stands: waiting (or retrying), delivered (2xx), or given up. */
export type DeliveryState = 'pending' | 'delivered' | 'failed';

/** One event for one endpoint: its message id (the `webhook-id`, the same on every attempt), its body as sent, its attempts. */
export interface StoredDelivery {
  id: number;
  applicationId: number;
  endpointId: number;
  messageId: string;
  type: string;
  /** What orders deliveries: an account's go one after another to each endpoint (its id, or '' for events of no account). */
  accountKey: string;
  payload: string;
  state: DeliveryState;
  attempts: number;
  nextAttemptAt: Date;
  lastAttemptAt: Date | null;
  lastStatus: number | null;
  lastMs: number | null;
  lastAnswer: string | null;
  createdAt: Date;
}

export type NewDelivery = Pick<StoredDelivery, 'applicationId' | 'endpointId' | 'messageId' | 'type' | 'accountKey' | 'payload'>;

/** What an attempt came to: the receiver's status (null: none) and how long, its first bytes, and the delivery's state after it. */
export interface AttemptRecord { status: number | null; ms: number; answer: string; state: DeliveryState; nextAttemptAt: Date }

/** An application's webhook endpoints (docs/webhooks.md), written in the transaction of their event. */
export interface WebhookStore {
  insert(endpoint: NewEndpoint, now: Date, transaction: Tx): Promise<StoredEndpoint>;
  /** The application's endpoints, oldest first. */
  list(applicationId: number): Promise<StoredEndpoint[]>;
  find(applicationId: number, endpointId: string, transaction?: Tx): Promise<StoredEndpoint | undefined>;
  /** Removes the endpoint; false when there was none. */
  remove(applicationId: number, endpointId: string, transaction: Tx): Promise<boolean>;
  /** A new secret; the current one becomes the previous, valid until `previousUntil`. False when there is no such endpoint. */
  rotateSecret(applicationId: number, endpointId: string, secretSealed: string, previousUntil: Date, now: Date, transaction: Tx): Promise<boolean>;
  /** New deliveries, due now; one whose endpoint already has its message id is left out (a fan-out run again). Answers how many were new. */
  insertDeliveries(deliveries: NewDelivery[], now: Date, transaction: Tx): Promise<number>;
  /**
   * An endpoint's deliveries due at `now`, oldest first, each the oldest pending one of its account
   * for that endpoint (a later one waits for it, delivered or given up), at most `limit`.
   */
  listDueDeliveries(endpointId: number, now: Date, limit: number): Promise<StoredDelivery[]>;
  /** The endpoints with deliveries due at `now` (what the deliverer runs for). */
  listDueEndpoints(now: Date, limit: number): Promise<number[]>;
  /** Records an attempt of a pending delivery; false when it was not pending any more (another worker finished it). */
  recordAttemptAlone(deliveryId: number, attempt: AttemptRecord, now: Date): Promise<boolean>;
  /** An endpoint's latest deliveries, newest first (/webhooks/deliveries). */
  listDeliveries(applicationId: number, endpointId: number, limit: number): Promise<StoredDelivery[]>;
}
