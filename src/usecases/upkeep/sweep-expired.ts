import { RETIRED_KEY_SECONDS } from '../../domain/signing-keys';
import type { Services } from '../services';

/**
 * Storage's upkeep (docs/operations.md): what is past its time removed, in batches small enough
 * that no delete holds locks for long, and bounded per run so one run never monopolizes a worker.
 */

export interface Retention {
  /** Spent and expired credentials are kept this long (for reuse detection), then deleted. */
  credentialRetentionMs: number;
  /** Finished outbox rows are kept this long. */
  outboxRetentionMs: number;
  /** Version snapshots are kept this long (the newest one before the cutoff stays); null: forever. */
  versionsRetentionMs: number | null;
  /** Events and counted failed sign-ins (an account's activity) are kept this long. */
  eventsRetentionMs: number;
  /** Webhook deliveries delivered or given up are kept this long (what /webhooks/deliveries and the console show). */
  webhookDeliveriesRetentionMs: number;
  /** Rows per delete statement; small enough that no delete holds locks for long. */
  batchSize: number;
  /** Upper bound of batches per run, so one run never monopolizes the worker. */
  maxBatches: number;
}

/** What a sweep removed, by kind. */
export type Swept = { credentials: number; outbox: number; snapshots: number; compacted: number; oidcState: number; signingKeys: number; events: number; webhookDeliveries: number; logoutDeliveries: number };

async function inBatches(settings: Retention, deleteBatch: () => Promise<number>): Promise<number> {
  let total = 0;
  for (let i = 0; i < settings.maxBatches; i++) {
    const n = await deleteBatch();
    total += n;
    if (n < settings.batchSize) break;
  }
  return total;
}

/** Removes what is past its retention: spent and expired credentials, finished outbox rows, old snapshots (and converts history kept one row per sign-in into runs), the OpenID provider's expired state, retired keys, old events and deliveries. */
export async function sweepExpired(deps: Pick<Services, 'db' | 'clock'>, command: { settings: Retention }): Promise<Swept> {
  const { db } = deps;
  const retention = command.settings;
  const t = deps.clock.now().getTime();
  const credentials = await inBatches(retention, () =>
    db.credentials.sweepAlone(new Date(t - retention.credentialRetentionMs), retention.batchSize));
  const outboxRows = await inBatches(retention, () =>
    db.outbox.purgeDoneAlone(new Date(t - retention.outboxRetentionMs), retention.batchSize));
  const kept = retention.versionsRetentionMs;
  const snapshots = kept === null ? 0 : await inBatches(retention, () => db.versions.pruneAlone(new Date(t - kept), retention.batchSize));
  // the OpenID provider's expired sessions, interactions and grants; keys retired long enough for what they signed to have expired
  const oidcState = await inBatches(retention, () => db.oidcState.sweepAlone(new Date(t - retention.credentialRetentionMs), retention.batchSize));
  const signingKeys = await db.signingKeys.sweepAlone(new Date(t - RETIRED_KEY_SECONDS * 1000));
  // events and counted failures past their retention, in batches like the rest
  const events = await inBatches(retention, () => db.events.sweepAlone(new Date(t - retention.eventsRetentionMs), retention.batchSize));
  // finished webhook deliveries and logout tokens (docs/openid-connect.md#back-channel-logout), kept as long as each other
  const webhookDeliveries = await inBatches(retention, () => db.webhooks.purgeFinishedAlone(new Date(t - retention.webhookDeliveriesRetentionMs), retention.batchSize));
  const logoutDeliveries = await inBatches(retention, () => db.logouts.purgeFinishedAlone(new Date(t - retention.webhookDeliveriesRetentionMs), retention.batchSize));
  // last: history kept before compact history, converted into runs of sign-ins (docs/versions.md#compact-history) until none is left
  let compacted = 0;
  for (let i = 0; i < retention.maxBatches; i++) {
    const n = await db.versions.compactAlone(retention.batchSize);
    if (n < 0) break;
    compacted += n;
  }
  return { credentials, outbox: outboxRows, snapshots, compacted, oidcState, signingKeys, events, webhookDeliveries, logoutDeliveries };
}
