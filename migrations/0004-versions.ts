import { DataTypes, QueryTypes, type QueryInterface } from 'sequelize';
import { sqlTime, type EntityRow, type ProfileRow } from '../src/db/models';
import { toRecord } from '../src/db/repositories/entities';
import { toProfile } from '../src/db/repositories/social';
import { renderWithProfiles } from '../src/domain/users';

const BATCH = 500;

/**
 * Version snapshots (docs/versions.md).
 * - `entities.version` counts a record's committed changes: every write adds one under the row
 *   lock, so version order is commit order.
 * - `entity_versions` rows carry that version (two changes in one millisecond keep two snapshots;
 *   the unique key makes a snapshot job that runs twice record one row), a tombstone flag, and the
 *   uuid of a deleted record (the legacy lookup by uuid still finds a record deleted since).
 * - `outbox.entity_id` names the record of a pending snapshot, so a lookup also sees changes whose
 *   snapshot the worker has not recorded yet.
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.addColumn('entities', 'version', { type: DataTypes.INTEGER, allowNull: false, defaultValue: 1 });

  await qi.addColumn('entity_versions', 'version', { type: DataTypes.INTEGER, allowNull: false, defaultValue: 1 });
  await qi.addColumn('entity_versions', 'deleted', { type: DataTypes.BOOLEAN, allowNull: false, defaultValue: false });
  await qi.addColumn('entity_versions', 'entity_uuid', { type: DataTypes.STRING(36) });
  await qi.removeIndex('entity_versions', 'entity_versions_entity_time');
  // "the latest snapshot at or before T": one backward range read
  await qi.addIndex('entity_versions', ['entity_id', 'valid_from', 'version'], { unique: true, name: 'entity_versions_lookup' });
  // on the uuid alone: an index led by application_id would take over the foreign key's index on MySQL
  await qi.addIndex('entity_versions', ['entity_uuid'], { name: 'entity_versions_uuid' });
  // retention deletes by age
  await qi.addIndex('entity_versions', ['valid_from'], { name: 'entity_versions_valid_from' });

  await qi.addColumn('outbox', 'entity_id', { type: DataTypes.BIGINT });
  await qi.addIndex('outbox', ['entity_id'], { name: 'outbox_entity' });

  await snapshotExistingRecords(qi);
}

/**
 * Records that exist already get their first snapshot, as of their lastUpdated, so that lookups
 * at any time since then answer (earlier times answer 310: there is no history from before).
 */
async function snapshotExistingRecords(qi: QueryInterface): Promise<void> {
  const db = qi.sequelize;
  for (let after = 0; ;) {
    const rows = await db.query<EntityRow>('SELECT * FROM entities WHERE id > $1 ORDER BY id LIMIT $2', { bind: [after, BATCH], type: QueryTypes.SELECT });
    if (rows.length === 0) return;
    const ids = rows.map((r) => Number(r.id));
    const profiles = await db.query<ProfileRow>(`SELECT * FROM profiles WHERE entity_id IN (${ids.map((_, n) => `$${n + 1}`).join(', ')}) ORDER BY id`, {
      bind: ids, type: QueryTypes.SELECT,
    });
    await qi.bulkInsert('entity_versions', rows.map((row) => {
      const record = toRecord(row);
      return {
        // a string: a Date would lose its milliseconds on MySQL
        application_id: record.applicationId, entity_id: record.id, valid_from: sqlTime(db.getDialect(), record.lastUpdated), version: 1, deleted: false, entity_uuid: null,
        snapshot: JSON.stringify(renderWithProfiles(record, profiles.filter((p) => Number(p.entity_id) === record.id).map(toProfile))),
      };
    }));
    after = ids[ids.length - 1];
  }
}

/** Back to the schema before snapshots: the code of that time neither writes nor reads them, so they go. */
export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.bulkDelete('entity_versions', {});
  await qi.bulkDelete('outbox', { queue: 'versions' });
  await qi.removeIndex('outbox', 'outbox_entity');
  await qi.removeColumn('outbox', 'entity_id');
  await qi.removeIndex('entity_versions', 'entity_versions_valid_from');
  await qi.removeIndex('entity_versions', 'entity_versions_uuid');
  await qi.removeIndex('entity_versions', 'entity_versions_lookup');
  await qi.removeColumn('entity_versions', 'entity_uuid');
  await qi.removeColumn('entity_versions', 'deleted');
  await qi.removeColumn('entity_versions', 'version');
  await qi.addIndex('entity_versions', ['entity_id', 'valid_from'], { unique: true, name: 'entity_versions_entity_time' });
  await qi.removeColumn('entities', 'version');
}
