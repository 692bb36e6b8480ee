import type { Services } from '../services';

/**
 * Records version snapshots (docs/versions.md): the versions worker's use case. An outbox row is
 * recorded together with other pending snapshot rows, oldest first, in batches of one transaction
 * each: the row is inserted into entity_versions and marked done in the same transaction, so a
 * worker killed mid-batch leaves the whole batch pending, and a job that runs again finds its row
 * done (and a version already stored as a record's newest, or in its run, is not stored again). A
 * row another batch recorded first is skipped at once. A batch that fails is retried row by row, so
 * one row that cannot be recorded holds up no other.
 */

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

export type SnapshotsRecorded = { kind: 'recorded'; recorded: number } | { kind: 'skipped'; why: string };

/**
 * Records the snapshot of the outbox row `outboxId`, and the backlog behind it for up to
 * `drainMs`. Throws when its own row cannot be recorded (the failure counted on the row; failed
 * for good on the `finalAttempt`).
 */
export async function recordSnapshots(
  deps: Pick<Services, 'db' | 'clock' | 'logger'>,
  command: { outboxId: string; finalAttempt: boolean; settings?: Partial<VersionsSettings> },
): Promise<SnapshotsRecorded> {
  const { db, clock, logger } = deps;
  const { outboxId } = command;
  const settings = { ...DEFAULT_VERSIONS, ...command.settings };
  let first;
  try {
    first = await db.versions.drainAlone(outboxId, settings.batchSize, clock.now());
  } catch (err) {
    logger.warn({ outboxId, err }, 'recording a batch of snapshots failed; recording this job\'s snapshot alone');
    try {
      await db.versions.recordOneAlone(outboxId, clock.now());
    } catch (alone) {
      await db.outbox.recordFailureAlone(outboxId, (alone as Error).message, command.finalAttempt, clock.now());
      throw alone;
    }
    return { kind: 'recorded', recorded: 1 };
  }
  if (!first.own) return { kind: 'skipped', why: 'recorded already' };
  let recorded = first.recorded;
  const until = Date.now() + settings.drainMs;
  for (let last = first.recorded; last === settings.batchSize && Date.now() < until;) {
    last = (await db.versions.drainAlone(undefined, settings.batchSize, clock.now())).recorded;
    recorded += last;
  }
  return { kind: 'recorded', recorded };
}
