import type { Storage } from '../domain/storage';
import { SNAPSHOT_JOB, TOMBSTONE_JOB } from '../domain/storage/versions';
import type { Logger } from '../logger';
import type { Job, JobContext } from '../queue/port';

export interface VersionsSettings {
  /** Snapshots recorded per transaction. */
  batchSize: number;
  /**
   * How long one job keeps recording further batches after its own, draining a backlog (Redis was
   * down, a worker stopped); what is left after that waits for the next job or the relay.
   */
  drainMs: number;
}

export const DEFAULT_VERSIONS: VersionsSettings = { batchSize: 500, drainMs: 10_000 };

/**
 * Records version snapshots (docs/versions.md). A job names one outbox row; the worker records it
 * together with other pending snapshot rows, oldest first, in batches of one transaction each:
 * the row is inserted into entity_versions and marked done in the same transaction, so a worker
 * killed mid-batch leaves the whole batch pending, and a job that runs again finds its row done
 * (the unique key on record, time and version would refuse a second copy anyway). Jobs whose row
 * another batch recorded first finish at once. A batch that fails is retried row by row, so one
 * row that cannot be recorded holds up no other.
 */
export function createVersionsProcessor(deps: { db: Storage; logger: Logger; settings?: Partial<VersionsSettings>; now?: () => Date }) {
  const { db, logger } = deps;
  const settings = { ...DEFAULT_VERSIONS, ...deps.settings };
  const now = deps.now ?? (() => new Date());

  return async (job: Job, context: JobContext): Promise<Record<string, unknown>> => {
    if (job.name !== SNAPSHOT_JOB && job.name !== TOMBSTONE_JOB) throw new Error(`the versions queue has no job named "${job.name}"`);
    const outboxId = String(job.data.outboxId ?? job.id);
    let first;
    try {
      first = await db.versions.drainAlone(outboxId, settings.batchSize, now());
    } catch (err) {
      logger.warn({ outboxId, err }, 'recording a batch of snapshots failed; recording this job\'s snapshot alone');
      try {
        await db.versions.recordOneAlone(outboxId, now());
      } catch (alone) {
        await db.outbox.recordFailureAlone(outboxId, (alone as Error).message, context.finalAttempt, now());
        throw alone;
      }
      return { recorded: 1 };
    }
    if (!first.own) return { skipped: 'recorded already' };
    let recorded = first.recorded;
    const until = Date.now() + settings.drainMs;
    for (let last = first.recorded; last === settings.batchSize && Date.now() < until;) {
      last = (await db.versions.drainAlone(undefined, settings.batchSize, now())).recorded;
      recorded += last;
    }
    return { recorded };
  };
}
