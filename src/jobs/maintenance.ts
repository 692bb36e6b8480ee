import type { RelayingOutbox } from '../queue/outbox';
import type { Logger } from '../logger';
import type { Job, JobContext } from '../queue/port';
import { ERASE_JOB } from '../domain/payloads';
import type { MailFolder } from '../domain/ports';
import type { Services } from '../usecases/services';
import { finishErasure } from '../usecases/operators/erase-user';
import { sweepExpired, type Retention } from '../usecases/upkeep/sweep-expired';
import { tallyActivity } from '../usecases/upkeep/tally-activity';
import { buildAttributeIndexes } from '../usecases/records/indexed-attributes';

/** Recurring maintenance jobs. The relay also runs on a timer of its own in workers (see workers/main.ts). */
export const MAINTENANCE_SCHEDULE = [
  { name: 'relay-outbox', everyMs: 15_000 },
  { name: 'sweep', everyMs: 60_000 },
  { name: 'tally', everyMs: 60_000 },
  { name: 'index', everyMs: 10_000 },
] as const;

/** How often a worker looks for outbox rows left pending: often enough to relay soon after `relayGraceMs`. */
export const relayEveryMs = (relayGraceMs: number) => Math.max(1_000, Math.min(15_000, Math.floor(relayGraceMs / 2)));

export interface MaintenanceSettings extends Retention {
  /** How long an outbox row may stay pending before the relay enqueues it again. */
  relayGraceMs: number;
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

/** Recurring upkeep: relay outbox stragglers, sweep expired and spent rows, tally the overview's counts, build indexed attributes. Returns what it did. */
export function createMaintenanceProcessor(deps: {
  /** Storage, the clock, and what an erasure's use case takes besides: the key its needles are sealed with, the mail folder of the file transport (none: SMTP). */
  services: Pick<Services, 'db' | 'clock' | 'box'> & { mailFolder?: MailFolder };
  outbox: RelayingOutbox; settings: MaintenanceSettings; logger: Logger;
}) {
  const { outbox, settings, logger } = deps;

  return async (job: Job, context: JobContext): Promise<Record<string, number>> => {
    switch (job.name) {
      case ERASE_JOB: {
        const result = await finishErasure(deps.services, { outboxId: String(job.data.outboxId ?? job.id), finalAttempt: context.finalAttempt });
        return result.kind === 'skipped' ? { skipped: 1 } : result.removed;
      }
      case 'relay-outbox': {
        const relayed = await outbox.relay(settings.relayGraceMs);
        if (relayed > 0) logger.info({ relayed }, 'outbox relay enqueued pending jobs');
        return { relayed };
      }
      case 'sweep': {
        const swept = await sweepExpired(deps.services, { settings });
        if (Object.values(swept).some((n) => n > 0)) logger.info(swept, 'sweep removed expired and spent rows, old snapshots, events and deliveries');
        return swept;
      }
      case 'tally':
        // the console's overview: what happened since the last run, per application and day
        return tallyActivity(deps.services);
      case 'index': {
        // indexed attributes being built: the existing records' values, in batches (docs/entity-filters.md#indexed-attributes)
        const built = await buildAttributeIndexes(deps.services, { batchSize: settings.batchSize, maxBatches: settings.maxBatches });
        for (const ready of built.ready) logger.info(ready, 'an indexed attribute is built: searches use it');
        for (const gone of built.removed) logger.info(gone, 'an indexed attribute\'s index is removed');
        return { records: built.records, ready: built.ready.length, removed: built.removed.length };
      }
      default:
        throw new Error(`the maintenance queue has no job named "${job.name}"`);
    }
  };
}
