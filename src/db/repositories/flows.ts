import type { StoredFlow } from '../../domain/storage/flows';
import type { Tx } from '../../domain/storage/transactions';
import type { FlowRow, Models } from '../models';
import { DuplicateKeyError, type Sql } from '../sql';

export function createFlowQueries(_models: Models, sql: Sql) {
  return {
    /**
     * Stores a definition as the next version of its name. Versions are immutable: a changed
     * definition always gets a new number (concurrent imports of one name are ordered by the
     * locking read, and one that still collides tries the next number); a definition the newest version already holds (same checksum) is that version, with
     * `unchanged` set.
     */
    async insertNextVersion(
      applicationId: number,
      name: string,
      definition: unknown,
      checksum: string,
      now: Date,
      transaction: Tx,
    ): Promise<StoredFlow & { unchanged?: true }> {
      for (let attempt = 0; ; attempt++) {
        // a locking read: it sees the newest version committed, and orders concurrent imports of one name
        const [newest] = await sql.select<FlowRow>(
          `SELECT * FROM flows WHERE application_id = ? AND name = ? ORDER BY version DESC LIMIT 1${sql.forUpdate}`, [applicationId, name], transaction,
        );
        if (newest?.checksum === checksum) return { name, version: Number(newest.version), checksum, definition: JSON.parse(newest.definition), unchanged: true };
        const version = (newest ? Number(newest.version) : 0) + 1;
        try {
          await sql.change(
            'INSERT INTO flows (application_id, name, version, definition, checksum, created_at) VALUES (?, ?, ?, ?, ?, ?)',
            [applicationId, name, version, JSON.stringify(definition), checksum, sql.time(now)],
            transaction,
          );
          return { name, version, checksum, definition };
        } catch (e) {
          // taken by an import that committed meanwhile: the next attempt reads it and takes the next number
          if (!(e instanceof DuplicateKeyError) || attempt >= 5) throw e;
        }
      }
    },
    /** The newest version of a flow (what `HEAD` names in a flow document's address). */
    // latestVersion and find are lag-tolerant reads: statements of sql.ts, bounded in time on a replica
    async latestVersion(applicationId: number, name: string): Promise<number | undefined> {
      const [row] = await sql.select<{ v: number | string | null }>('SELECT MAX(version) AS v FROM flows WHERE application_id = ? AND name = ?', [applicationId, name]);
      return row?.v === null || row?.v === undefined ? undefined : Number(row.v);
    },
    async find(applicationId: number, name: string, version: number): Promise<StoredFlow | undefined> {
      const [row] = await sql.select<FlowRow>('SELECT * FROM flows WHERE application_id = ? AND name = ? AND version = ?', [applicationId, name, version]);
      return row ? { name: row.name, version: Number(row.version), checksum: row.checksum, definition: JSON.parse(row.definition) } : undefined;
    },
    async listNames(applicationId: number): Promise<{ name: string; latest: number }[]> {
      const rows = await sql.select<{ name: string; latest: number | string }>(
        'SELECT name, MAX(version) AS latest FROM flows WHERE application_id = ? GROUP BY name ORDER BY name', [applicationId],
      );
      return rows.map((r) => ({ name: r.name, latest: Number(r.latest) }));
    },
  };
}
export type FlowQueries = ReturnType<typeof createFlowQueries>;
