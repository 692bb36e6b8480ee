import { Op } from 'sequelize';
import type { Models } from '../models';

export interface ActiveCredential {
  id: number;
  applicationId: number;
  kind: string;
  entityId: number | null;
  clientId: number | null;
  forClientId: number | null;
  expiresAt: Date;
}

export function createCredentialQueries({ Credential }: Models) {
  return {
    /** A credential of `kind` with this hash in this application that is neither spent nor expired. */
    async findActive(applicationId: number, kind: string, valueHash: string, now: Date): Promise<ActiveCredential | undefined> {
      const row = await Credential.findOne({
        where: { value_hash: valueHash, application_id: applicationId, kind, used_at: null, expires_at: { [Op.gt]: now } },
        raw: true,
      });
      if (!row) return undefined;
      return {
        id: Number(row.id),
        applicationId: Number(row.application_id),
        kind: row.kind,
        entityId: row.entity_id === null ? null : Number(row.entity_id),
        clientId: row.client_id === null ? null : Number(row.client_id),
        forClientId: row.for_client_id === null ? null : Number(row.for_client_id),
        expiresAt: row.expires_at,
      };
    },
    /**
     * Deletes up to `limit` rows that expired, or were spent, before `before`. Bounded batches keep
     * every delete short, so the sweep never holds locks that requests wait on.
     */
    async sweep(before: Date, limit: number): Promise<number> {
      const rows = await Credential.findAll({
        attributes: ['id'],
        where: { [Op.or]: [{ expires_at: { [Op.lt]: before } }, { used_at: { [Op.lt]: before } }] },
        limit,
        raw: true,
      });
      if (rows.length === 0) return 0;
      return Credential.destroy({ where: { id: rows.map((r) => r.id) } });
    },
  };
}
export type CredentialQueries = ReturnType<typeof createCredentialQueries>;
