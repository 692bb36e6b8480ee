import { Transaction, UniqueConstraintError } from 'sequelize';
import type { Models } from '../models';

export interface StoredFlow { name: string; version: number; checksum: string; definition: unknown }

export function createFlowQueries({ Flow }: Models) {
  return {
    /**
     * Stores a definition as the next version of its name. Versions are immutable: a changed
     * definition always gets a new number (a race between two imports retries with the next
     * one); a definition the newest version already holds (same checksum) is that version, with
     * `unchanged` set.
     */
    async insertNextVersion(
      applicationId: number,
      name: string,
      definition: unknown,
      checksum: string,
      now: Date,
      transaction?: Transaction,
    ): Promise<StoredFlow & { unchanged?: true }> {
      for (let attempt = 0; ; attempt++) {
        const latest = (await Flow.max('version', { where: { application_id: applicationId, name }, transaction })) as number | null;
        if (latest !== null) {
          const newest = await Flow.findOne({ where: { application_id: applicationId, name, version: latest }, raw: true, transaction });
          if (newest?.checksum === checksum) return { name, version: latest, checksum, definition: JSON.parse(newest.definition), unchanged: true };
        }
        const version = (latest ?? 0) + 1;
        try {
          await Flow.create(
            { application_id: applicationId, name, version, definition: JSON.stringify(definition), checksum, created_at: now },
            { transaction },
          );
          return { name, version, checksum, definition };
        } catch (e) {
          if (!(e instanceof UniqueConstraintError) || transaction || attempt >= 5) throw e;
        }
      }
    },
    /** The newest version of a flow (what `HEAD` names in a flow document's address). */
    async latestVersion(applicationId: number, name: string): Promise<number | undefined> {
      const latest = (await Flow.max('version', { where: { application_id: applicationId, name } })) as number | null;
      return latest ?? undefined;
    },
    async find(applicationId: number, name: string, version: number): Promise<StoredFlow | undefined> {
      const row = await Flow.findOne({ where: { application_id: applicationId, name, version }, raw: true });
      return row ? { name: row.name, version: row.version, checksum: row.checksum, definition: JSON.parse(row.definition) } : undefined;
    },
  };
}
export type FlowQueries = ReturnType<typeof createFlowQueries>;
