import type { StoredClient } from '../../domain/storage/clients';
import type { Tx } from '../../domain/storage/transactions';
import type { ClientRow, Models } from '../models';
import type { Sql } from '../sql';

const toClient = (row: ClientRow): StoredClient => ({
  id: Number(row.id),
  applicationId: Number(row.application_id),
  clientId: row.client_id,
  secretSealed: row.secret_sealed,
  description: row.description,
  features: JSON.parse(row.features),
  settings: JSON.parse(row.settings),
});

export function createClientQueries({ Client }: Models, sql: Sql) {
  return {
    async insert(c: Omit<StoredClient, 'id'>, now: Date, transaction: Tx): Promise<StoredClient> {
      const id = await sql.insert(
        `INSERT INTO clients (application_id, client_id, secret_sealed, description, features, settings, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
        [c.applicationId, c.clientId, c.secretSealed, c.description, JSON.stringify(c.features), JSON.stringify(c.settings), sql.time(now), sql.time(now)],
        transaction,
      );
      return { ...c, id };
    },
    /** Always scoped to the application: another application's client is never found. */
    async find(applicationId: number, clientId: string): Promise<StoredClient | undefined> {
      const row = await Client.findOne({ where: { application_id: applicationId, client_id: clientId }, raw: true });
      return row ? toClient(row) : undefined;
    },
    /** By its row id (what credentials record as their client), scoped to the application. */
    async findById(applicationId: number, id: number): Promise<StoredClient | undefined> {
      const row = await Client.findOne({ where: { application_id: applicationId, id }, raw: true });
      return row ? toClient(row) : undefined;
    },
    /** The oldest client of any application, or undefined in an empty database (what readiness opens to check SECRET_KEY). */
    async first(): Promise<StoredClient | undefined> {
      const row = await Client.findOne({ order: [['id', 'ASC']], raw: true });
      return row ? toClient(row) : undefined;
    },
    async list(applicationId: number): Promise<StoredClient[]> {
      const rows = await Client.findAll({ where: { application_id: applicationId }, order: [['id', 'ASC']], raw: true });
      return rows.map(toClient);
    },
    /**
     * Read-modify-write of one client under a row lock, so two concurrent settings changes
     * never lose one another. Returns the updated client, or undefined when there is none.
     */
    async mutate(
      applicationId: number,
      clientId: string,
      change: (current: StoredClient) => Partial<Pick<StoredClient, 'features' | 'settings' | 'secretSealed'>>,
      now: Date,
      tx: Tx,
    ): Promise<StoredClient | undefined> {
      {
        const [row] = await sql.select<ClientRow>(`SELECT * FROM clients WHERE application_id = ? AND client_id = ?${sql.forUpdate}`, [applicationId, clientId], tx);
        if (!row) return undefined;
        const current = toClient(row);
        const next = { ...current, ...change(current) };
        await sql.change(
          'UPDATE clients SET features = ?, settings = ?, secret_sealed = ?, updated_at = ? WHERE id = ?',
          [JSON.stringify(next.features), JSON.stringify(next.settings), next.secretSealed, sql.time(now), current.id],
          tx,
        );
        return next;
      }
    },
    async remove(applicationId: number, clientId: string, tx: Tx): Promise<boolean> {
      return (await sql.change('DELETE FROM clients WHERE application_id = ? AND client_id = ?', [applicationId, clientId], tx)) === 1;
    },
  };
}
export type ClientQueries = ReturnType<typeof createClientQueries>;
