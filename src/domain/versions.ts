import type { Storage, Tx } from './storage';
import type { UserRecord } from './storage/records';
import type { StoredProfile } from './storage/social';
import type { SnapshotPayload } from './storage/versions';
import { renderUser, renderWithProfiles } from './users';

/** A record as one change left it: as the API shows it, and the snapshot its history keeps (carried by the change's event). */
export interface Written {
  record: UserRecord;
  rendered: Record<string, unknown>;
  snapshot: SnapshotPayload;
}

/**
 * Version snapshots (docs/versions.md). Every change of a record carries, in its event, the record
 * as that change commits it; the history subscriber writes it to the outbox in the same transaction
 * and the versions worker copies it into entity_versions. A lookup reads both, so it never waits
 * for the worker.
 */
export function createRecordVersions(deps: { db: Storage }) {
  const { db } = deps;
  const snapshotOf = (record: UserRecord, rendered: Record<string, unknown>): Written => ({
    record,
    rendered,
    snapshot: { entityId: record.id, uuid: record.uuid, version: record.version, validFrom: record.lastUpdated.toISOString(), snapshot: rendered },
  });
  const withProfiles = (record: UserRecord, profiles: StoredProfile[]): Written => snapshotOf(record, renderWithProfiles(record, profiles));

  return {
    /** A record inserted in this transaction, with no identity linked yet: its first snapshot. */
    created(record: UserRecord): Written {
      return snapshotOf(record, renderUser(record));
    },

    /** A record as a write in `tx` left it, with its identities as `tx` sees them: the snapshot of what commits. */
    async written(record: UserRecord, tx: Tx): Promise<Written> {
      return withProfiles(record, await db.social.profiles.forEntity(record.applicationId, record.id, tx));
    },

    /** The snapshot of `record` with `profiles`, its identities as the write that commits it has them. */
    withProfiles,

    /** A record deleted in this transaction (locked before the deletion): its tombstone. */
    deleted(locked: UserRecord, now: Date): SnapshotPayload {
      const at = now > locked.lastUpdated ? now : locked.lastUpdated;
      return { entityId: locked.id, uuid: locked.uuid, version: locked.version + 1, validFrom: at.toISOString(), snapshot: null };
    },

    /**
     * The record as it was at `at` (as the API showed it then); undefined before it existed or
     * after it was deleted. Read from a replica when there is one: a time within the replica's lag
     * may not show the last change yet.
     */
    async at(applicationId: number, key: { id: number } | { uuid: string }, at: Date): Promise<Record<string, unknown> | undefined> {
      const history = db.lagTolerant.versions;
      const entityId = 'id' in key
        ? key.id
        : await history.entityId(applicationId, key.uuid) ?? await history.deletedEntityId(applicationId, key.uuid);
      if (entityId === undefined) return undefined;
      return (await history.at(applicationId, entityId, at))?.snapshot ?? undefined;
    },
  };
}
export type RecordVersions = ReturnType<typeof createRecordVersions>;
