import { DataTypes, QueryTypes, type QueryInterface } from 'sequelize';

/**
 * Compact history (docs/versions.md#compact-history).
 * - `entity_versions.sign_ins`: the run of sign-ins after a stored version, each as its time
 *   (milliseconds after the version's, base 36, each after a comma); the versions of a run follow
 *   the stored one's. NULL: no run. Adding a NULL column changes no row.
 * - `upkeep_marks`: how far an upkeep task that walks a table has gone; `history` is the
 *   conversion of the history kept before this release (one stored version per sign-in) into runs,
 *   done online by the maintenance worker in bounded batches (-1: done); `history-run` where it is
 *   within a record with more rows than a batch.
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.addColumn('entity_versions', 'sign_ins', { type: DataTypes.TEXT, allowNull: true });
  await qi.createTable('upkeep_marks', {
    name: { type: DataTypes.STRING(32), primaryKey: true, allowNull: false },
    position: { type: DataTypes.BIGINT, allowNull: false },
  }, { charset: 'utf8mb4', collate: 'utf8mb4_bin' });
  // `history-run`: within a record with more rows than a batch, the run the last window ended with (0: none)
  await qi.bulkInsert('upkeep_marks', [{ name: 'history', position: 0 }, { name: 'history-run', position: 0 }]);
}

// Frozen, like every migration: its own copy of how a sign-in sets the record's times.
const pad = (n: number, width = 2) => String(n).padStart(width, '0');
const timestamp = (date: Date) => `${date.getUTCFullYear()}-${pad(date.getUTCMonth() + 1)}-${pad(date.getUTCDate())} `
  + `${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())}:${pad(date.getUTCSeconds())}.${pad(date.getUTCMilliseconds() * 1000, 6)} +0000`;
const sqlTime = (dialect: string, date: Date) => {
  const iso = date.toISOString().replace('T', ' ');
  return dialect === 'sqlite' ? iso.replace('Z', ' +00:00') : iso.replace('Z', '');
};
const asDate = (value: Date | string) => (value instanceof Date ? value : new Date(value));

/**
 * Back to one stored version per sign-in: every run is written out as the rows the code before
 * it kept, in batches, then the column goes. Run it with the workers of the release before (which
 * write no runs) or none.
 */
export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  const db = qi.sequelize;
  const dialect = db.getDialect();
  for (let last = 0; ;) {
    const rows = await db.query<{ id: number; application_id: number; entity_id: number; valid_from: Date | string; version: number; snapshot: string; sign_ins: string | null }>(
      'SELECT id, application_id, entity_id, valid_from, version, snapshot, sign_ins FROM entity_versions WHERE id > $1 ORDER BY id LIMIT 500',
      { bind: [last], type: QueryTypes.SELECT },
    );
    if (rows.length === 0) break;
    last = Number(rows[rows.length - 1].id);
    for (const row of rows.filter((r) => r.sign_ins)) {
      const base = JSON.parse(row.snapshot) as Record<string, unknown>;
      const from = asDate(row.valid_from).getTime();
      const versions = row.sign_ins!.split(',').slice(1).map((part, i) => {
        const at = new Date(from + parseInt(part, 36));
        const snapshot = Object.fromEntries(Object.entries(base).map(([k, v]) => [k, k === 'lastLogin' || k === 'lastUpdated' ? timestamp(at) : v]));
        return { application_id: Number(row.application_id), entity_id: Number(row.entity_id), valid_from: sqlTime(dialect, at), version: Number(row.version) + i + 1, deleted: false, entity_uuid: null, snapshot: JSON.stringify(snapshot) };
      });
      await db.transaction(async (transaction) => {
        if (versions.length > 0) await qi.bulkInsert('entity_versions', versions, { transaction });
        await db.query('UPDATE entity_versions SET sign_ins = NULL WHERE id = $1', { bind: [row.id], transaction });
      });
    }
  }
  await qi.dropTable('upkeep_marks');
  // (a plain DROP COLUMN: SQLite's removeColumn rebuilds the table and loses its indexes)
  await db.query('ALTER TABLE entity_versions DROP COLUMN sign_ins');
}
