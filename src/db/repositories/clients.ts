import type { Transaction } from 'sequelize';
import type { Transact } from '..';
import type { ClientRow, Models } from '../models';

/** A client as stored: the secret is still sealed (see domain/secrets.ts). */
export interface StoredClient {
  id: number;
  applicationId: number;
  clientId: string;
  secretSealed: string;
  description: string;
  features: string[];
  settings: Record<string, string>;
}

const toClient = (row: ClientRow): StoredClient => ({
  id: Number(row.id),
  applicationId: Number(row.application_id),
  clientId: row.client_id,
  secretSealed: row.secret_sealed,
  description: row.description,
  features: JSON.parse(row.features),
  settings: JSON.parse(row.settings),
});

export function createClientQueries({ Client }: Models, transact: Transact) {
  return {
    async insert(
      c: Omit<StoredClient, 'id'>,
      now: Date,
      transaction?: Transaction,
    ): Promise<StoredClient> {
      const row = await Client.create(
        {
          application_id: c.applicationId,
          client_id: c.clientId,
          secret_sealed: c.secretSealed,
          description: c.description,
          features: JSON.stringify(c.features),
          settings: JSON.stringify(c.settings),
          created_at: now,
          updated_at: now,
        },
        { transaction },
      );
      return toClient(row.get({ plain: true }));
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
    ): Promise<StoredClient | undefined> {
      return transact(async (transaction) => {
        const row = await Client.findOne({
          where: { application_id: applicationId, client_id: clientId },
          lock: transaction.LOCK.UPDATE,
          transaction,
          raw: true,
        });
        if (!row) return undefined;
        const current = toClient(row);
        const next = { ...current, ...change(current) };
        await Client.update(
          {
            features: JSON.stringify(next.features),
            settings: JSON.stringify(next.settings),
            secret_sealed: next.secretSealed,
            updated_at: now,
          },
          { where: { id: current.id }, transaction },
        );
        return next;
      });
    },
    async remove(applicationId: number, clientId: string): Promise<boolean> {
      return (await Client.destroy({ where: { application_id: applicationId, client_id: clientId } })) === 1;
    },
  };
}
export type ClientQueries = ReturnType<typeof createClientQueries>;
