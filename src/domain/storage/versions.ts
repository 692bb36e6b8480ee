
/**
 * The payload of a versions outbox row: the record as one committed change left it (as the API
 * shows it, never a password hash), or `snapshot: null` for its deletion (a tombstone).
 */
export interface SnapshotPayload {
  entityId: number;
  uuid: string;
  version: number;
  /** ISO 8601: the record's lastUpdated after the change (the deletion time for a tombstone). */
  validFrom: string;
  snapshot: Record<string, unknown> | null;
}

/** One snapshot a lookup may answer with. */
export interface Snapshot {
  version: number;
  validFrom: Date;
  /** null: the record was deleted. */
  snapshot: Record<string, unknown> | null;
}

/** Names of the versions jobs: a record written, a record deleted. */
export const SNAPSHOT_JOB = 'snapshot';
export const TOMBSTONE_JOB = 'tombstone';

/** Snapshots of records as committed changes left them (docs/versions.md). */
export interface VersionStore {
  /**
   * Records pending snapshot rows in one transaction of its own (READ COMMITTED: its locks cover its
   * rows, not the index gaps where api pods insert new ones): the row `ownId` and up to
   * `limit - 1` others, oldest first, skipping rows another worker holds. `own` is false when the
   * job's own row was no longer pending or is being recorded by another worker.
   */
  drainAlone(ownId: string | undefined, limit: number, now: Date): Promise<{ own: boolean; recorded: number }>;
  /** Records one outbox row alone. */
  recordOneAlone(id: string, now: Date): Promise<boolean>;
  /** The record's snapshot at `at`, recorded or still pending. */
  at(applicationId: number, entityId: number, at: Date): Promise<Snapshot | undefined>;
  /** The record's snapshots, recorded or still pending, oldest first: every one, or the newest `limit`. */
  history(applicationId: number, entityId: number, limit?: number): Promise<Snapshot[]>;
  /** The id of a deleted record by its uuid, from its tombstone. */
  deletedEntityId(applicationId: number, uuid: string): Promise<number | undefined>;
  /**
   * Converts history kept one row per sign-in into runs, about `limit` rows from where the last
   * call stopped; the rows merged away, or -1 once every record is converted.
   */
  compactAlone(limit: number): Promise<number>;
  /** Deletes at most `limit` snapshots older than `cutoff` that a newer one before it replaces. */
  pruneAlone(cutoff: Date, limit: number): Promise<number>;
}
