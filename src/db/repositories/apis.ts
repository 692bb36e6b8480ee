import { sha256Hex } from '../../domain/secrets';
import { DuplicateApiError, type ApiStore, type StoredApi } from '../../domain/storage/apis';
import { asDate } from '../models';
import { DuplicateKeyError, type Sql } from '../sql';

interface Row {
  id: number | string; application_id: number | string; public_id: string; identifier: string; name: string; scopes: string;
  token_seconds: number | string | null; client_scopes: string; created_at: Date | string; updated_at: Date | string;
}

const toApi = (r: Row): StoredApi => ({
  id: Number(r.id), applicationId: Number(r.application_id), publicId: r.public_id, identifier: r.identifier, name: r.name,
  scopes: JSON.parse(r.scopes) as string[], clientScopes: JSON.parse(r.client_scopes) as Record<string, string[]>, tokenSeconds: r.token_seconds === null ? null : Number(r.token_seconds),
  createdAt: asDate(r.created_at), updatedAt: asDate(r.updated_at),
});

/** An identifier as its unique key: its SHA-256 (the index stays narrow whatever the URI's length). */
const identifierHash = (identifier: string) => sha256Hex(identifier);

/** The applications' APIs (ApiStore of the storage contract) in SQL. */
export function createApiQueries(sql: Sql): ApiStore {
  const t = sql.time;
  const find: ApiStore['find'] = async (applicationId, publicId, tx) => {
    const [row] = await sql.select<Row>(`SELECT * FROM apis WHERE application_id = ? AND public_id = ?${tx ? sql.forUpdate : ''}`, [applicationId, publicId], tx);
    return row ? toApi(row) : undefined;
  };
  return {
    async insert(api, now, tx) {
      try {
        await sql.change(
          'INSERT INTO apis (application_id, public_id, identifier_hash, identifier, name, scopes, client_scopes, token_seconds, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
          [api.applicationId, api.publicId, identifierHash(api.identifier), api.identifier, api.name, JSON.stringify(api.scopes), JSON.stringify(api.clientScopes), api.tokenSeconds, t(now), t(now)], tx,
        );
      } catch (e) {
        if (e instanceof DuplicateKeyError) throw new DuplicateApiError();
        throw e;
      }
      return (await find(api.applicationId, api.publicId, tx))!;
    },
    async list(applicationId, tx) {
      return (await sql.select<Row>('SELECT * FROM apis WHERE application_id = ? ORDER BY id', [applicationId], tx)).map(toApi);
    },
    find,
    async findByIdentifier(applicationId, identifier) {
      const [row] = await sql.select<Row>('SELECT * FROM apis WHERE application_id = ? AND identifier_hash = ?', [applicationId, identifierHash(identifier)]);
      return row && row.identifier === identifier ? toApi(row) : undefined;
    },
    async update(applicationId, publicId, change, now, tx) {
      const sets: string[] = [];
      const values: unknown[] = [];
      const set = (column: string, value: unknown) => { sets.push(`${column} = ?`); values.push(value); };
      if (change.name !== undefined) set('name', change.name);
      if (change.scopes !== undefined) set('scopes', JSON.stringify(change.scopes));
      if (change.tokenSeconds !== undefined) set('token_seconds', change.tokenSeconds);
      if (change.clientScopes !== undefined) set('client_scopes', JSON.stringify(change.clientScopes));
      set('updated_at', t(now));
      return (await sql.change(`UPDATE apis SET ${sets.join(', ')} WHERE application_id = ? AND public_id = ?`, [...values, applicationId, publicId], tx)) > 0;
    },
    async remove(applicationId, publicId, tx) {
      return (await sql.change('DELETE FROM apis WHERE application_id = ? AND public_id = ?', [applicationId, publicId], tx)) > 0;
    },
  };
}
