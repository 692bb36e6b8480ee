import { asDate } from '../models';
import { DuplicateKeyError, type Sql } from '../sql';
import type { PasskeyDeviceType, PasskeyStore, StoredPasskey } from '../../domain/storage/factors';
import type { Tx } from '../../domain/storage/transactions';

interface PasskeyRow {
  id: number | string; application_id: number | string; entity_id: number | string; credential_id: string; public_key: string;
  counter: number | string; device_type: string; backed_up: number | boolean | string; transports: string; aaguid: string; name: string;
  created_at: Date | string; last_used_at: Date | string | null;
}

const toPasskey = (r: PasskeyRow): StoredPasskey => ({
  id: Number(r.id), applicationId: Number(r.application_id), entityId: Number(r.entity_id), credentialId: r.credential_id, publicKey: r.public_key,
  counter: Number(r.counter), deviceType: r.device_type as PasskeyDeviceType, backedUp: r.backed_up === true || Number(r.backed_up) === 1,
  transports: r.transports ? r.transports.split(',') : [], aaguid: r.aaguid, name: r.name,
  createdAt: asDate(r.created_at), lastUsedAt: r.last_used_at === null ? null : asDate(r.last_used_at),
});

/** The passkeys' store (PasskeyStore of the storage contract) in SQL: each change one statement. */
export function createPasskeyQueries(sql: Sql): PasskeyStore {
  return {
    async list(applicationId: number, entityId: number, tx?: Tx) {
      const rows = await sql.select<PasskeyRow>('SELECT * FROM passkeys WHERE application_id = ? AND entity_id = ? ORDER BY id', [applicationId, entityId], tx);
      return rows.map(toPasskey);
    },
    async byCredential(applicationId: number, credentialId: string, tx?: Tx) {
      const [row] = await sql.select<PasskeyRow>('SELECT * FROM passkeys WHERE application_id = ? AND credential_id = ?', [applicationId, credentialId], tx);
      return row ? toPasskey(row) : undefined;
    },
    async add(p, tx) {
      try {
        return await sql.insert(
          'INSERT INTO passkeys (application_id, entity_id, credential_id, public_key, counter, device_type, backed_up, transports, aaguid, name, created_at, last_used_at) '
          + 'VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)',
          [p.applicationId, p.entityId, p.credentialId, p.publicKey, p.counter, p.deviceType, p.backedUp, p.transports.join(','), p.aaguid, p.name, sql.time(p.createdAt)], tx,
        );
      } catch (e) {
        if (e instanceof DuplicateKeyError) return undefined;
        throw e;
      }
    },
    async useAlone(applicationId, id, seen, counter, backedUp, now) {
      return (await sql.change(
        'UPDATE passkeys SET counter = ?, backed_up = ?, last_used_at = ? WHERE application_id = ? AND id = ? AND counter = ?',
        [counter, backedUp, sql.time(now), applicationId, id, seen],
      )) === 1;
    },
    async rename(applicationId, entityId, id, name, tx) {
      return (await sql.change('UPDATE passkeys SET name = ? WHERE application_id = ? AND entity_id = ? AND id = ?', [name, applicationId, entityId, id], tx)) === 1;
    },
    async remove(applicationId, entityId, id, tx) {
      return (await sql.change('DELETE FROM passkeys WHERE application_id = ? AND entity_id = ? AND id = ?', [applicationId, entityId, id], tx)) === 1;
    },
  };
}
