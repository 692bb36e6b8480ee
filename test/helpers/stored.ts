import { QueryTypes } from 'sequelize';
import type { Database } from '../../src/db';
import { sqlTime } from '../../src/db/models';

/**
 * What storage holds, read beneath its contract: the one place tests of the API and the workers
 * look at rows directly (a password stored only as its hash, a token's lifetime, a count that must
 * not change), and the way the contract suite reads what no store method answers.
 */
export function stored(db: Database) {
  return {
    /** The rows a SELECT answers, its values bound (`?`). */
    rows: <T extends object = Record<string, unknown>>(sql: string, values: unknown[] = []): Promise<T[]> =>
      db.sequelize.query<T>(sql, { replacements: values, type: QueryTypes.SELECT }),
    /** How many rows of `table` match `where`. */
    async count(table: 'entities' | 'credentials' | 'outbox' | 'entity_versions' | 'clients', where = '1 = 1', values: unknown[] = []): Promise<number> {
      const [row] = await db.sequelize.query<{ n: number | string }>(`SELECT COUNT(*) AS n FROM ${table} WHERE ${where}`, { replacements: values, type: QueryTypes.SELECT });
      return Number(row.n);
    },
    /** `date` as this engine's statements write a time. */
    time: (date: Date) => sqlTime(db.sequelize.getDialect(), date),
    /** Runs a statement that changes rows, as a test that plants an old state does. */
    async change(sql: string, values: unknown[] = []): Promise<void> {
      await db.sequelize.query(sql, { replacements: values });
    },
  };
}
