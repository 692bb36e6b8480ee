import { asDate } from '../models';
import { DuplicateKeyError, type Sql } from '../sql';
import type { OidcObjectWrite, OidcStateStore, StoredOidcObject } from '../../domain/storage/oidc-state';
import type { Tx } from '../../domain/storage';

interface OidcStateRow {
  model: string; payload: string; grant_id: string | null; entity_id: number | string | null; expires_at: Date | string; consumed_at: Date | string | null;
}

const toObject = (r: OidcStateRow): StoredOidcObject => ({
  model: r.model, payload: JSON.parse(r.payload) as Record<string, unknown>, grantId: r.grant_id,
  entityId: r.entity_id === null ? null : Number(r.entity_id), expiresAt: asDate(r.expires_at), consumedAt: r.consumed_at === null ? null : asDate(r.consumed_at),
});

/** The OpenID provider's other objects (OidcStateStore of the storage contract) in SQL: one short statement per method. */
export function createOidcStateQueries(sql: Sql): OidcStateStore {
  async function save(applicationId: number, o: OidcObjectWrite, tx: Tx | undefined): Promise<void> {
    const values = [o.uidHash, o.grantId, o.entityId, JSON.stringify(o.payload), sql.time(o.expiresAt)];
    const updated = await sql.change(
      'UPDATE oidc_state SET uid_hash = ?, grant_id = ?, entity_id = ?, payload = ?, expires_at = ? WHERE application_id = ? AND model = ? AND id_hash = ?',
      [...values, applicationId, o.model, o.idHash], tx,
    );
    if (updated > 0) return;
    try {
      await sql.insert(
        'INSERT INTO oidc_state (uid_hash, grant_id, entity_id, payload, expires_at, application_id, model, id_hash, consumed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL)',
        [...values, applicationId, o.model, o.idHash], tx,
      );
    } catch (e) {
      // saved by another caller between the two statements: this save replaces it
      if (!(e instanceof DuplicateKeyError)) throw e;
      await sql.change(
        'UPDATE oidc_state SET uid_hash = ?, grant_id = ?, entity_id = ?, payload = ?, expires_at = ? WHERE application_id = ? AND model = ? AND id_hash = ?',
        [...values, applicationId, o.model, o.idHash], tx,
      );
    }
  }

  async function destroy(applicationId: number, model: string, idHash: string, tx: Tx | undefined): Promise<void> {
    await sql.change('DELETE FROM oidc_state WHERE application_id = ? AND model = ? AND id_hash = ?', [applicationId, model, idHash], tx);
  }
  const destroyGrant = (applicationId: number, grantId: string, tx: Tx | undefined): Promise<number> =>
    sql.change('DELETE FROM oidc_state WHERE application_id = ? AND grant_id = ?', [applicationId, grantId], tx);

  return {
    save: (applicationId, o, tx) => save(applicationId, o, tx),
    saveAlone: (applicationId, o) => save(applicationId, o, undefined),
    async saveNewAlone(applicationId, o) {
      try {
        await sql.insert(
          'INSERT INTO oidc_state (uid_hash, grant_id, entity_id, payload, expires_at, application_id, model, id_hash, consumed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL)',
          [o.uidHash, o.grantId, o.entityId, JSON.stringify(o.payload), sql.time(o.expiresAt), applicationId, o.model, o.idHash],
        );
        return true;
      } catch (e) {
        if (e instanceof DuplicateKeyError) return false;
        throw e;
      }
    },
    async find(applicationId, model, idHash, tx) {
      const [row] = await sql.select<OidcStateRow>('SELECT * FROM oidc_state WHERE application_id = ? AND model = ? AND id_hash = ?', [applicationId, model, idHash], tx);
      return row ? toObject(row) : undefined;
    },
    async findByUid(applicationId, model, uidHash) {
      const [row] = await sql.select<OidcStateRow>('SELECT * FROM oidc_state WHERE application_id = ? AND model = ? AND uid_hash = ?', [applicationId, model, uidHash]);
      return row ? toObject(row) : undefined;
    },
    async consumeAlone(applicationId, model, idHash, now) {
      return (await sql.change(
        'UPDATE oidc_state SET consumed_at = ? WHERE application_id = ? AND model = ? AND id_hash = ? AND consumed_at IS NULL', [sql.time(now), applicationId, model, idHash],
      )) === 1;
    },
    destroy: (applicationId, model, idHash, tx) => destroy(applicationId, model, idHash, tx),
    destroyAlone: (applicationId, model, idHash) => destroy(applicationId, model, idHash, undefined),
    destroyGrant: (applicationId, grantId, tx) => destroyGrant(applicationId, grantId, tx),
    destroyGrantAlone: (applicationId, grantId) => destroyGrant(applicationId, grantId, undefined),
    async destroyOfRecord(applicationId, entityId, tx) {
      return sql.change('DELETE FROM oidc_state WHERE application_id = ? AND entity_id = ?', [applicationId, entityId], tx);
    },
    async listOfRecord(applicationId, model, entityId, now, tx) {
      return (await sql.select<OidcStateRow>('SELECT * FROM oidc_state WHERE application_id = ? AND entity_id = ? AND model = ? AND expires_at > ?',
        [applicationId, entityId, model, sql.time(now)], tx)).map(toObject);
    },
    async sweepAlone(before, limit) {
      const rows = await sql.select<{ id: number | string }>('SELECT id FROM oidc_state WHERE expires_at < ? ORDER BY id LIMIT ?', [sql.time(before), limit]);
      if (rows.length === 0) return 0;
      return sql.change(`DELETE FROM oidc_state WHERE id IN (${rows.map(() => '?').join(', ')})`, rows.map((r) => r.id));
    },
  };
}
