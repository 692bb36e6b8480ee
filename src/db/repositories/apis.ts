import { sha256Hex } from '../../domain/secrets';
import { DuplicateApiError, type ApiStore, type RoleStore, type StoredApi, type StoredAppRole } from '../../domain/storage/apis';
import { asDate } from '../models';
import { DuplicateKeyError, type Sql } from '../sql';

interface Row {
  id: number | string; application_id: number | string; public_id: string; identifier: string; name: string; scopes: string;
  token_seconds: number | string | null; client_scopes: string; rbac: number | boolean; permissions_in_token: number | boolean; created_at: Date | string; updated_at: Date | string;
}

const toApi = (r: Row): StoredApi => ({
  id: Number(r.id), applicationId: Number(r.application_id), publicId: r.public_id, identifier: r.identifier, name: r.name,
  scopes: JSON.parse(r.scopes) as string[], clientScopes: JSON.parse(r.client_scopes) as Record<string, string[]>, tokenSeconds: r.token_seconds === null ? null : Number(r.token_seconds), rbac: Boolean(r.rbac), permissionsInToken: Boolean(r.permissions_in_token),
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
          'INSERT INTO apis (application_id, public_id, identifier_hash, identifier, name, scopes, client_scopes, token_seconds, rbac, permissions_in_token, created_at, updated_at) '
          + 'VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
          [api.applicationId, api.publicId, identifierHash(api.identifier), api.identifier, api.name, JSON.stringify(api.scopes), JSON.stringify(api.clientScopes), api.tokenSeconds,
            api.rbac, api.permissionsInToken, t(now), t(now)], tx,
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
      if (change.rbac !== undefined) set('rbac', change.rbac);
      if (change.permissionsInToken !== undefined) set('permissions_in_token', change.permissionsInToken);
      set('updated_at', t(now));
      return (await sql.change(`UPDATE apis SET ${sets.join(', ')} WHERE application_id = ? AND public_id = ?`, [...values, applicationId, publicId], tx)) > 0;
    },
    async remove(applicationId, publicId, tx) {
      return (await sql.change('DELETE FROM apis WHERE application_id = ? AND public_id = ?', [applicationId, publicId], tx)) > 0;
    },
  };
}

interface RoleRow { id: number | string; application_id: number | string; name: string; description: string; permissions: string; created_at: Date | string; updated_at: Date | string }

const toRole = (r: RoleRow): StoredAppRole => ({
  id: Number(r.id), applicationId: Number(r.application_id), name: r.name, description: r.description,
  permissions: JSON.parse(r.permissions) as Record<string, string[]>, createdAt: asDate(r.created_at), updatedAt: asDate(r.updated_at),
});

/** The application's roles and who holds them (RoleStore of the storage contract) in SQL. */
export function createRoleQueries(sql: Sql): RoleStore {
  const t = sql.time;
  const find: RoleStore['find'] = async (applicationId, name, tx) => {
    const [row] = await sql.select<RoleRow>(`SELECT * FROM app_roles WHERE application_id = ? AND name = ?${tx ? sql.forUpdate : ''}`, [applicationId, name], tx);
    return row ? toRole(row) : undefined;
  };
  const listOf: RoleStore['listOf'] = async (applicationId, entityId, tx) => (await sql.select<RoleRow>(
    'SELECT r.* FROM account_roles a JOIN app_roles r ON r.id = a.role_id WHERE a.entity_id = ? AND a.application_id = ? ORDER BY r.name', [entityId, applicationId], tx,
  )).map(toRole);
  return {
    async define(applicationId, role, now, tx) {
      const permissions = JSON.stringify(role.permissions);
      // (found first: MariaDB counts an UPDATE that writes what is there already as no row changed)
      if (await find(applicationId, role.name, tx)) {
        await sql.change('UPDATE app_roles SET description = ?, permissions = ?, updated_at = ? WHERE application_id = ? AND name = ?',
          [role.description, permissions, t(now), applicationId, role.name], tx);
      } else {
        await sql.change('INSERT INTO app_roles (application_id, name, description, permissions, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)',
          [applicationId, role.name, role.description, permissions, t(now), t(now)], tx);
      }
      return (await find(applicationId, role.name, tx))!;
    },
    async list(applicationId, tx) {
      return (await sql.select<RoleRow>('SELECT * FROM app_roles WHERE application_id = ? ORDER BY name', [applicationId], tx)).map(toRole);
    },
    find,
    async remove(applicationId, name, tx) {
      const role = await find(applicationId, name, tx);
      if (!role) return undefined;
      const held = await sql.change('DELETE FROM account_roles WHERE role_id = ?', [role.id], tx);
      await sql.change('DELETE FROM app_roles WHERE id = ?', [role.id], tx);
      return held;
    },
    async assign(applicationId, entityId, roles, now, tx) {
      // a role the account holds already (given by a parallel call too) is left as it is
      const ignore = sql.dialect === 'mysql' ? ' ON DUPLICATE KEY UPDATE role_id = role_id' : ' ON CONFLICT DO NOTHING';
      const added: string[] = [];
      for (const role of roles) {
        const inserted = await sql.change(`INSERT INTO account_roles (entity_id, role_id, application_id, created_at) VALUES (?, ?, ?, ?)${ignore}`,
          [entityId, role.id, applicationId, t(now)], tx);
        if (inserted === 1) added.push(role.name);
      }
      return added;
    },
    async unassign(applicationId, entityId, roles, tx) {
      const taken: string[] = [];
      for (const role of roles) {
        if (await sql.change('DELETE FROM account_roles WHERE entity_id = ? AND role_id = ? AND application_id = ?', [entityId, role.id, applicationId], tx) > 0) taken.push(role.name);
      }
      return taken;
    },
    listOf,
    async listOfAccount(applicationId, uuid) {
      return (await sql.select<RoleRow>(
        'SELECT r.* FROM entities e JOIN account_roles a ON a.entity_id = e.id JOIN app_roles r ON r.id = a.role_id '
        + 'WHERE e.application_id = ? AND e.uuid = ? ORDER BY r.name', [applicationId, uuid],
      )).map(toRole);
    },
  };
}
