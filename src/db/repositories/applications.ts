import type { Transaction } from 'sequelize';
import type { Transact } from '..';
import type { Models, ApplicationRow } from '../models';

export interface Application { id: number; name: string; settings: Record<string, string> }

const toApplication = (row: ApplicationRow): Application => ({ id: Number(row.id), name: row.name, settings: JSON.parse(row.settings) });

export function createApplicationQueries({ Application }: Models, transact: Transact) {
  return {
    async findByName(name: string): Promise<Application | undefined> {
      const row = await Application.findOne({ where: { name }, raw: true });
      return row ? toApplication(row) : undefined;
    },
    async create(name: string, now: Date, transaction?: Transaction): Promise<Application> {
      const row = await Application.create({ name, settings: '{}', created_at: now, updated_at: now }, { transaction });
      return toApplication(row.get({ plain: true }));
    },
    async findById(id: number): Promise<Application | undefined> {
      const row = await Application.findOne({ where: { id }, raw: true });
      return row ? toApplication(row) : undefined;
    },
    /** Read-modify-write of the application-wide default settings under a row lock. */
    async mutateSettings(
      id: number,
      change: (settings: Record<string, string>) => Record<string, string>,
      now: Date,
    ): Promise<void> {
      await transact(async (transaction) => {
        const row = await Application.findOne({ where: { id }, lock: transaction.LOCK.UPDATE, transaction, raw: true });
        if (!row) throw new Error(`application ${id} does not exist`);
        const settings = change(JSON.parse(row.settings));
        await Application.update({ settings: JSON.stringify(settings), updated_at: now }, { where: { id }, transaction });
      });
    },
  };
}
export type ApplicationQueries = ReturnType<typeof createApplicationQueries>;
