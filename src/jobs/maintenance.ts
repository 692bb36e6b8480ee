import type { Storage } from '../domain/storage';
import { RETIRED_KEY_SECONDS } from '../domain/signing-keys';
import type { RelayingOutbox } from '../queue/outbox';
import type { Logger } from '../logger';
import type { Job, JobContext } from '../queue/port';
import { ERASE_JOB, erasurePayloadOf } from '../domain/payloads';
import type { SecretBox } from '../domain/secrets';
import type { ErasureNeedles } from '../domain/storage/erasures';
import { removeMailsTo } from '../mail-files';

/** Recurring maintenance jobs. The relay also runs on a timer of its own in workers (see workers/main.ts). */
export const MAINTENANCE_SCHEDULE = [
  { name: 'relay-outbox', everyMs: 15_000 },
  { name: 'sweep', everyMs: 60_000 },
] as const;

/** How often a worker looks for outbox rows left pending: often enough to relay soon after `relayGraceMs`. */
export const relayEveryMs = (relayGraceMs: number) => Math.max(1_000, Math.min(15_000, Math.floor(relayGraceMs / 2)));

export interface MaintenanceSettings {
  /** How long an outbox row may stay pending before the relay enqueues it again. */
  relayGraceMs: number;
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

export const DEFAULT_MAINTENANCE: MaintenanceSettings = {
  relayGraceMs: 30_000,
  credentialRetentionMs: 24 * 3600_000,
  outboxRetentionMs: 7 * 24 * 3600_000,
  versionsRetentionMs: null,
  eventsRetentionMs: 400 * 24 * 3600_000,
  webhookDeliveriesRetentionMs: 30 * 24 * 3600_000,
  batchSize: 500,
  maxBatches: 100,
};

async function inBatches(settings: MaintenanceSettings, deleteBatch: () => Promise<number>): Promise<number> {
  let total = 0;
  for (let i = 0; i < settings.maxBatches; i++) {
    const n = await deleteBatch();
    total += n;
    if (n < settings.batchSize) break;
  }
  return total;
}

/** Recurring upkeep: relay outbox stragglers, sweep expired and spent rows. Returns what it did. */
export function createMaintenanceProcessor(deps: {
  db: Storage; outbox: RelayingOutbox; settings: MaintenanceSettings; logger: Logger; now?: () => Date;
  /** What an erasure's job needs: the key its needles are sealed with, and the mail folder of the file transport (none: SMTP). */
  erase: { box: SecretBox; mailDir?: string };
}) {
  const { db, outbox, settings, logger } = deps;
  const now = deps.now ?? (() => new Date());

  /**
   * An erasure's job (docs/lifecycle.md#erase): removes again what names the person outside the
   * record's rows, then the emails of the mail folder addressed to it, then clears its own row.
   * Each step finds nothing the second time, so a job stopped midway simply runs again.
   */
  async function erase(job: Job, context: JobContext): Promise<Record<string, number>> {
    const outboxId = String(job.data.outboxId ?? job.id);
    const row = await db.outbox.find(outboxId);
    if (!row || row.status !== 'pending') return { skipped: 1 };
    try {
      const { entityId, sealedNeedles } = erasurePayloadOf(row.payload);
      const needles = JSON.parse(deps.erase.box.open(sealedNeedles, outboxId)) as ErasureNeedles;
      const purged = await db.erasures.purgeAlone(row.applicationId, entityId, needles, outboxId);
      const mails = deps.erase.mailDir ? await removeMailsTo(deps.erase.mailDir, needles.emails) : 0;
      // the database's files follow: nothing of the person left in SQLite's log (a reader may hold it a moment)
      let scrubbed = await db.erasures.scrubFilesAlone();
      for (let tries = 0; !scrubbed && tries < 50; tries++) {
        await new Promise((r) => setTimeout(r, 100));
        scrubbed = await db.erasures.scrubFilesAlone();
      }
      if (!scrubbed) throw new Error('the database\'s write-ahead log stayed in use through 50 checkpoints; the erasure\'s job tries again');
      await db.outbox.completeAlone(outboxId, now(), {});
      return { ...purged, mails };
    } catch (err) {
      await db.outbox.recordFailureAlone(outboxId, (err as Error).message, context.finalAttempt, now());
      throw err;
    }
  }

  return async (job: Job, context: JobContext): Promise<Record<string, number>> => {
    switch (job.name) {
      case ERASE_JOB:
        return erase(job, context);
      case 'relay-outbox': {
        const relayed = await outbox.relay(settings.relayGraceMs);
        if (relayed > 0) logger.info({ relayed }, 'outbox relay enqueued pending jobs');
        return { relayed };
      }
      case 'sweep': {
        const t = now().getTime();
        const credentials = await inBatches(settings, () =>
          db.credentials.sweepAlone(new Date(t - settings.credentialRetentionMs), settings.batchSize));
        const outboxRows = await inBatches(settings, () =>
          db.outbox.purgeDoneAlone(new Date(t - settings.outboxRetentionMs), settings.batchSize));
        const retention = settings.versionsRetentionMs;
        const snapshots = retention === null ? 0 : await inBatches(settings, () => db.versions.pruneAlone(new Date(t - retention), settings.batchSize));
        // the OpenID provider's expired sessions, interactions and grants; keys retired long enough for what they signed to have expired
        const oidcState = await inBatches(settings, () => db.oidcState.sweepAlone(new Date(t - settings.credentialRetentionMs), settings.batchSize));
        const signingKeys = await db.signingKeys.sweepAlone(new Date(t - RETIRED_KEY_SECONDS * 1000));
        // events and counted failures past their retention, in batches like the rest
        const events = await inBatches(settings, () => db.events.sweepAlone(new Date(t - settings.eventsRetentionMs), settings.batchSize));
        const webhookDeliveries = await inBatches(settings, () => db.webhooks.purgeFinishedAlone(new Date(t - settings.webhookDeliveriesRetentionMs), settings.batchSize));
        if (credentials + outboxRows + snapshots + oidcState + signingKeys + events + webhookDeliveries > 0) {
          logger.info({ credentials, outbox: outboxRows, snapshots, oidcState, signingKeys, events, webhookDeliveries }, 'sweep removed expired and spent rows, old snapshots, events and deliveries');
        }
        return { credentials, outbox: outboxRows, snapshots, oidcState, signingKeys, events, webhookDeliveries };
      }
      default:
        throw new Error(`the maintenance queue has no job named "${job.name}"`);
    }
  };
}
