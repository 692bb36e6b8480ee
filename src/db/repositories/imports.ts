import type { Sql } from '../sql';
import type { ImportProgress, ImportStore } from '../../domain/storage/imports';

/** The imports' progress (ImportStore of the storage contract) in SQL: one row per application and key. */
export function createImportQueries(sql: Sql): ImportStore {
  const t = sql.time;
  return {
    async progress(applicationId, key, tx): Promise<ImportProgress> {
      const [row] = await sql.select<{ lines_done: number | string; created: number | string }>(
        `SELECT lines_done, created FROM imports WHERE application_id = ? AND import_key = ?${tx ? sql.forUpdate : ''}`, [applicationId, key], tx,
      );
      return row ? { linesDone: Number(row.lines_done), created: Number(row.created) } : { linesDone: 0, created: 0 };
    },
    async advance(applicationId, key, linesDone, created, now, tx) {
      const changed = await sql.change(
        'UPDATE imports SET lines_done = ?, created = created + ?, updated_at = ? WHERE application_id = ? AND import_key = ?',
        [linesDone, created, t(now), applicationId, key], tx,
      );
      if (changed === 0) {
        await sql.change('INSERT INTO imports (application_id, import_key, lines_done, created, updated_at) VALUES (?, ?, ?, ?, ?)', [applicationId, key, linesDone, created, t(now)], tx);
      }
    },
  };
}
