import { sha256Hex } from '../../domain/secrets';
import type { NameIdKind } from '../../domain/saml/identity-provider';
import type { ServiceProviderDescriptor } from '../../domain/saml/metadata';
import { DuplicateEntityError, type SamlStore, type StoredServiceProvider } from '../../domain/storage/saml';
import { asDate } from '../models';
import { DuplicateKeyError, type Sql } from '../sql';

interface Row {
  id: number | string; application_id: number | string; public_id: string; entity_id: string; name: string; metadata: string; descriptor: string;
  name_id_format: string | null; attributes: string | null; persistent_salt: string; created_at: Date | string; updated_at: Date | string;
}

const toServiceProvider = (r: Row): StoredServiceProvider => ({
  id: Number(r.id), applicationId: Number(r.application_id), publicId: r.public_id, entityId: r.entity_id, name: r.name, metadata: r.metadata,
  descriptor: JSON.parse(r.descriptor) as ServiceProviderDescriptor, nameIdFormat: r.name_id_format as NameIdKind | null,
  attributes: r.attributes === null ? null : JSON.parse(r.attributes) as Record<string, string>, persistentSalt: r.persistent_salt,
  createdAt: asDate(r.created_at), updatedAt: asDate(r.updated_at),
});

/** An entity id as its unique key: its SHA-256 (ids are URLs of up to 1,024 characters). */
const entityHash = (entityId: string) => sha256Hex(entityId);

/** SAML service providers (SamlStore of the storage contract) in SQL. */
export function createSamlQueries(sql: Sql): SamlStore {
  const t = sql.time;
  const find: SamlStore['find'] = async (applicationId, publicId, tx) => {
    const [row] = await sql.select<Row>(`SELECT * FROM saml_service_providers WHERE application_id = ? AND public_id = ?${tx ? sql.forUpdate : ''}`, [applicationId, publicId], tx);
    return row ? toServiceProvider(row) : undefined;
  };
  const duplicate = async <T>(work: () => Promise<T>) => {
    try {
      return await work();
    } catch (e) {
      if (e instanceof DuplicateKeyError) throw new DuplicateEntityError();
      throw e;
    }
  };
  return {
    async insert(sp, now, tx) {
      await duplicate(() => sql.change(
        'INSERT INTO saml_service_providers (application_id, public_id, entity_hash, entity_id, name, metadata, descriptor, name_id_format, attributes, persistent_salt, created_at, updated_at) '
        + 'VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
        [sp.applicationId, sp.publicId, entityHash(sp.entityId), sp.entityId, sp.name, sp.metadata, JSON.stringify(sp.descriptor), sp.nameIdFormat,
          sp.attributes === null ? null : JSON.stringify(sp.attributes), sp.persistentSalt, t(now), t(now)], tx,
      ));
      return (await find(sp.applicationId, sp.publicId, tx))!;
    },
    async list(applicationId) {
      return (await sql.select<Row>('SELECT * FROM saml_service_providers WHERE application_id = ? ORDER BY id', [applicationId])).map(toServiceProvider);
    },
    find,
    async findByEntity(applicationId, entityId) {
      const [row] = await sql.select<Row>('SELECT * FROM saml_service_providers WHERE application_id = ? AND entity_hash = ?', [applicationId, entityHash(entityId)]);
      return row ? toServiceProvider(row) : undefined;
    },
    async update(applicationId, publicId, change, now, tx) {
      const sets: string[] = [];
      const values: unknown[] = [];
      const set = (column: string, value: unknown) => { sets.push(`${column} = ?`); values.push(value); };
      if (change.entityId !== undefined) { set('entity_id', change.entityId); set('entity_hash', entityHash(change.entityId)); }
      if (change.name !== undefined) set('name', change.name);
      if (change.metadata !== undefined) set('metadata', change.metadata);
      if (change.descriptor !== undefined) set('descriptor', JSON.stringify(change.descriptor));
      if (change.nameIdFormat !== undefined) set('name_id_format', change.nameIdFormat);
      if (change.attributes !== undefined) set('attributes', change.attributes === null ? null : JSON.stringify(change.attributes));
      set('updated_at', t(now));
      return (await duplicate(() => sql.change(`UPDATE saml_service_providers SET ${sets.join(', ')} WHERE application_id = ? AND public_id = ?`, [...values, applicationId, publicId], tx))) > 0;
    },
    async remove(applicationId, publicId, tx) {
      return (await sql.change('DELETE FROM saml_service_providers WHERE application_id = ? AND public_id = ?', [applicationId, publicId], tx)) > 0;
    },
  };
}
