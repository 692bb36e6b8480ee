import type { Application } from '../../domain/storage/applications';
import type { Tx } from '../../domain/storage/transactions';
import type { ApplicationRow, Models } from '../models';
import type { Sql } from '../sql';

const toApplication = (row: ApplicationRow): Application => ({ id: Number(row.id), name: row.name, settings: JSON.parse(row.settings) });

export function createApplicationQueries({ Application }: Models, sql: Sql) {
  return {
    async findByName(name: string): Promise<Application | undefined> {
      const row = await Application.findOne({ where: { name }, raw: true });
      return row ? toApplication(row) : undefined;
    },
    async create(name: string, now: Date, transaction: Tx): Promise<Application> {
      const id = await sql.insert('INSERT INTO applications (name, settings, created_at, updated_at) VALUES (?, ?, ?, ?)', [name, '{}', sql.time(now), sql.time(now)], transaction);
      return { id, name, settings: {} };
    },
    async findById(id: number, tx?: Tx): Promise<Application | undefined> {
      if (tx) {
        // read in the caller's transaction (its connection), without locking the row
        const [held] = await sql.select<ApplicationRow>('SELECT * FROM applications WHERE id = ?', [id], tx);
        return held ? toApplication(held) : undefined;
      }
      const row = await Application.findOne({ where: { id }, raw: true });
      return row ? toApplication(row) : undefined;
    },
    async claim(id: number, now: Date, tx: Tx): Promise<void> {
      await sql.change(`UPDATE applications SET updated_at = ${sql.later('updated_at')} WHERE id = ?`, [sql.time(now), id], tx);
    },
    async list(): Promise<Application[]> {
      return (await sql.select<ApplicationRow>('SELECT * FROM applications ORDER BY id', [])).map(toApplication);
    },
    /** Read-modify-write of the application-wide default settings under a row lock. */
    async mutateSettings(
      id: number,
      change: (settings: Record<string, string>) => Record<string, string>,
      now: Date,
      tx: Tx,
    ): Promise<void> {
      {
        const [row] = await sql.select<ApplicationRow>(`SELECT * FROM applications WHERE id = ?${sql.forUpdate}`, [id], tx);
        if (!row) throw new Error(`application ${id} does not exist`);
        const settings = change(JSON.parse(row.settings));
        await sql.change('UPDATE applications SET settings = ?, updated_at = ? WHERE id = ?', [JSON.stringify(settings), sql.time(now), id], tx);
      }
    },
  };
}
export type ApplicationQueries = ReturnType<typeof createApplicationQueries>;
