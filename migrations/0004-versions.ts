import { DataTypes, QueryTypes, type QueryInterface } from 'sequelize';

const BATCH = 500;

// Frozen, like every migration: it renders the first snapshots as the API showed a record when
// this migration landed, with its own copy of that rendering, so that later changes to the
// application's code never change what it writes.
interface EntityRow {
  id: number; uuid: string; application_id: number; email: string | null; username: string | null; email_verified: Date | string | null;
  attributes: string; created: Date | string; last_updated: Date | string;
}
interface ProfileRow { id: number; entity_id: number; provider: string; identifier: string; data: string; created_at: Date | string }

const asDate = (value: Date | string) => (value instanceof Date ? value : new Date(value));
const pad = (n: number, width = 2) => String(n).padStart(width, '0');
/** `2026-11-21 06:17:52.332000 +0000`, the API's timestamp. */
const timestamp = (date: Date) => `${date.getUTCFullYear()}-${pad(date.getUTCMonth() + 1)}-${pad(date.getUTCDate())} `
  + `${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())}.${pad(date.getUTCMilliseconds() * 1000, 6)} +0000`;
/** A DATETIME(6) literal: a Date would lose its milliseconds on MySQL. */
const sqlTime = (dialect: string, date: Date) => {
  const iso = date.toISOString().replace('T', ' ');
  return dialect === 'sqlite' ? iso.replace('Z', ' +00:00') : iso.replace('Z', '');
};

function rendered(row: EntityRow, profiles: ProfileRow[]): Record<string, unknown> {
  const attributes = JSON.parse(row.attributes) as Record<string, unknown>;
  return {
    id: Number(row.id),
    uuid: row.uuid,
    created: timestamp(asDate(row.created)),
    lastUpdated: timestamp(asDate(row.last_updated)),
    email: row.email,
    emailVerified: row.email_verified ? timestamp(asDate(row.email_verified)) : null,
    ...(row.username !== null && { username: row.username }),
    displayName: null, givenName: null, familyName: null, birthdate: null,
    ...attributes,
    ...(typeof attributes.lastLogin === 'string' && { lastLogin: timestamp(new Date(attributes.lastLogin)) }),
    profiles: profiles.map((p) => {
      let domain: string | null = null;
      try {
        domain = new URL(p.identifier).hostname;
      } catch {
        // an identifier from an external application need not be a URL
      }
      return { id: Number(p.id), identifier: p.identifier, domain, provider: p.provider, profile: JSON.parse(p.data), created: timestamp(asDate(p.created_at)) };
    }),
  };
}

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
    await qi.bulkInsert('entity_versions', rows.map((row) => ({
      application_id: Number(row.application_id), entity_id: Number(row.id), valid_from: sqlTime(db.getDialect(), asDate(row.last_updated)),
      version: 1, deleted: false, entity_uuid: null,
      snapshot: JSON.stringify(rendered(row, profiles.filter((p) => Number(p.entity_id) === Number(row.id)))),
    })));
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
