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
}
