import {
  MAX_LOOKUP, scimKey, type ScimGroupLookup, type ScimStore, type ScimUserLookup, type StoredScimGroup, type StoredScimToken, type StoredScimUser,
} from '../../domain/storage/scim';
import { asDate } from '../models';
import type { Tx } from '../../domain/storage/transactions';
import { DuplicateKeyError, type Sql } from '../sql';

interface TokenRow {
  id: number | string; application_id: number | string; organization_id: number | string; public_id: string; description: string; token_hash: string;
  created_by: string; created_at: Date | string; last_used_at: Date | string | null; revoked_at: Date | string | null; org_public_id?: string;
}
interface UserRow {
  id: number | string; application_id: number | string; organization_id: number | string; entity_id: number | string; resource_id: string; user_name: string;
  external_id: string | null; email_key: string | null; active: number | boolean | string; data: string; version: number | string; owned: number | boolean | string;
  suspended_roles: string | null; created_at: Date | string; updated_at: Date | string;
}
interface GroupRow {
  id: number | string; application_id: number | string; organization_id: number | string; resource_id: string; display_name: string; external_id: string | null;
  version: number | string; created_at: Date | string; updated_at: Date | string;
}

const bool = (v: number | boolean | string) => v === true || Number(v) === 1;
const maybeDate = (v: Date | string | null) => (v === null ? null : asDate(v));

const toToken = (r: TokenRow): StoredScimToken => ({
  id: Number(r.id), applicationId: Number(r.application_id), organizationKey: Number(r.organization_id), publicId: r.public_id, description: r.description,
  tokenHash: r.token_hash, createdBy: r.created_by, createdAt: asDate(r.created_at), lastUsedAt: maybeDate(r.last_used_at), revokedAt: maybeDate(r.revoked_at),
});
const toUser = (r: UserRow): StoredScimUser => ({
  id: Number(r.id), applicationId: Number(r.application_id), organizationKey: Number(r.organization_id), entityId: Number(r.entity_id), resourceId: r.resource_id,
  userName: r.user_name, externalId: r.external_id, emailKey: r.email_key, active: bool(r.active), data: JSON.parse(r.data) as Record<string, unknown>,
  version: Number(r.version), owned: bool(r.owned), suspendedRoles: r.suspended_roles === null ? null : JSON.parse(r.suspended_roles) as string[],
  createdAt: asDate(r.created_at), updatedAt: asDate(r.updated_at),
});
const toGroup = (r: GroupRow): StoredScimGroup => ({
  id: Number(r.id), applicationId: Number(r.application_id), organizationKey: Number(r.organization_id), resourceId: r.resource_id, displayName: r.display_name,
  externalId: r.external_id, version: Number(r.version), createdAt: asDate(r.created_at), updatedAt: asDate(r.updated_at),
});

const placeholders = (n: number) => Array.from({ length: n }, () => '?').join(', ');

/** SCIM provisioning (ScimStore of the storage contract) in SQL. */
export function createScimQueries(sql: Sql): ScimStore {
  const t = sql.time;
  const lock = (tx: unknown) => (tx ? sql.forUpdate : '');
  const userByKey = async (id: number, tx?: Tx) => (await sql.select<UserRow>('SELECT * FROM scim_users WHERE id = ?', [id], tx)).map(toUser)[0];
  const groupByKey = async (id: number, tx?: Tx) => (await sql.select<GroupRow>('SELECT * FROM scim_groups WHERE id = ?', [id], tx)).map(toGroup)[0];
  const userWhere = (lookup: ScimUserLookup): [string, string] => {
    if ('userName' in lookup) return ['user_name_key = ?', scimKey(lookup.userName)];
    if ('externalId' in lookup) return ['external_id = ?', lookup.externalId];
    if ('email' in lookup) return ['id IN (SELECT user_id FROM scim_user_emails WHERE organization_id = scim_users.organization_id AND email_key = ?)', scimKey(lookup.email)];
    return ['resource_id = ?', lookup.resourceId];
  };
  /** Runs `read` over `keys` 500 at a time. */
  const batched = async <K, T>(keys: K[], read: (chunk: K[]) => Promise<T[]>): Promise<T[]> => {
    const out: T[] = [];
    for (let i = 0; i < keys.length; i += 500) out.push(...await read(keys.slice(i, i + 500)));
    return out;
  };
  const setEmails = async (userKey: number, organizationKey: number, emails: string[], tx: Tx) => {
    await sql.change('DELETE FROM scim_user_emails WHERE user_id = ?', [userKey], tx);
    const keys = [...new Set(emails.map(scimKey))].filter((e) => e.length <= 254).slice(0, 50);
    if (keys.length > 0) {
      await sql.change(`INSERT INTO scim_user_emails (user_id, email_key, organization_id) VALUES ${keys.map(() => '(?, ?, ?)').join(', ')}`, keys.flatMap((k) => [userKey, k, organizationKey]), tx);
    }
  };
  const groupWhere = (lookup: ScimGroupLookup): [string, string] => {
    if ('displayName' in lookup) return ['display_name_key = ?', scimKey(lookup.displayName)];
    if ('externalId' in lookup) return ['external_id = ?', lookup.externalId];
    return ['resource_id = ?', lookup.resourceId];
  };
  return {
    async insertToken(token, now, tx) {
      const id = await sql.insert(
        'INSERT INTO scim_tokens (application_id, organization_id, public_id, description, token_hash, created_by, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
        [token.applicationId, token.organizationKey, token.publicId, token.description, token.tokenHash, token.createdBy, t(now)], tx,
      );
      return toToken((await sql.select<TokenRow>('SELECT * FROM scim_tokens WHERE id = ?', [id], tx))[0]);
    },
    async findToken(tokenHash) {
      const [row] = await sql.select<TokenRow>(
        'SELECT s.*, o.organization_id AS org_public_id FROM scim_tokens s JOIN organizations o ON o.id = s.organization_id WHERE s.token_hash = ? AND s.revoked_at IS NULL', [tokenHash],
      );
      return row ? { token: toToken(row), organizationId: row.org_public_id! } : undefined;
    },
    async findTokenById(applicationId, publicId, tx) {
      const [row] = await sql.select<TokenRow>(`SELECT * FROM scim_tokens WHERE application_id = ? AND public_id = ?${lock(tx)}`, [applicationId, publicId], tx);
      return row ? toToken(row) : undefined;
    },
    async listTokensOfApplication(applicationId, limit) {
      const rows = await sql.select<TokenRow>(
        'SELECT s.*, o.organization_id AS org_public_id FROM scim_tokens s JOIN organizations o ON o.id = s.organization_id WHERE s.application_id = ? ORDER BY s.id DESC LIMIT ?', [applicationId, limit],
      );
      return rows.map((r) => ({ token: toToken(r), organizationId: r.org_public_id! }));
    },
    async listTokens(organizationKey, tx) {
      // the live ones first (never more than a few), so none is ever left out of the list
      return (await sql.select<TokenRow>('SELECT * FROM scim_tokens WHERE organization_id = ? ORDER BY CASE WHEN revoked_at IS NULL THEN 0 ELSE 1 END, id DESC LIMIT 100', [organizationKey], tx)).map(toToken);
    },
    async countLiveTokens(organizationKey, tx) {
      const [row] = await sql.select<{ n: number | string }>('SELECT COUNT(*) AS n FROM scim_tokens WHERE organization_id = ? AND revoked_at IS NULL', [organizationKey], tx);
      return Number(row.n);
    },
    async revokeToken(token, now, tx) {
      return (await sql.change('UPDATE scim_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL', [t(now), token.id], tx)) > 0;
    },
    async touchTokenAlone(tokenKey, now) {
      await sql.change('UPDATE scim_tokens SET last_used_at = ? WHERE id = ?', [t(now), tokenKey]);
    },

    async insertUser(u, emails, now, tx) {
      try {
        const id = await sql.insert(
          `INSERT INTO scim_users (application_id, organization_id, entity_id, resource_id, user_name, user_name_key, external_id, email_key, active, data, version, owned, suspended_roles, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?)`,
          [u.applicationId, u.organizationKey, u.entityId, u.resourceId, u.userName, scimKey(u.userName), u.externalId, u.emailKey, u.active, JSON.stringify(u.data), u.owned,
            u.suspendedRoles === null ? null : JSON.stringify(u.suspendedRoles), t(now), t(now)], tx,
        );
        await setEmails(id, u.organizationKey, emails, tx);
        return userByKey(id, tx);
      } catch (e) {
        if (e instanceof DuplicateKeyError) return undefined;
        throw e;
      }
    },
    async findUser(organizationKey, lookup, tx, limit = MAX_LOOKUP) {
      const [where, value] = userWhere(lookup);
      return (await sql.select<UserRow>(`SELECT * FROM scim_users WHERE organization_id = ? AND ${where} ORDER BY id LIMIT ?${lock(tx)}`, [organizationKey, value, limit], tx)).map(toUser);
    },
    async findUsersByResourceIds(organizationKey, resourceIds, tx) {
      return batched([...new Set(resourceIds)], async (ids) => (await sql.select<UserRow>(
        `SELECT * FROM scim_users WHERE organization_id = ? AND resource_id IN (${placeholders(ids.length)}) ORDER BY id`, [organizationKey, ...ids], tx,
      )).map(toUser));
    },
    async findUsersByKeys(userKeys, tx) {
      return batched([...new Set(userKeys)], async (keys) => (await sql.select<UserRow>(`SELECT * FROM scim_users WHERE id IN (${placeholders(keys.length)}) ORDER BY id`, keys, tx)).map(toUser));
    },
    async bumpUsers(userKeys, now, tx) {
      await batched([...new Set(userKeys)], async (keys) => [await sql.change(`UPDATE scim_users SET version = version + 1, updated_at = ? WHERE id IN (${placeholders(keys.length)})`, [t(now), ...keys], tx)]);
    },
    async findUserOfAccount(organizationKey, entityId, tx) {
      const [row] = await sql.select<UserRow>(`SELECT * FROM scim_users WHERE organization_id = ? AND entity_id = ?${lock(tx)}`, [organizationKey, entityId], tx);
      return row ? toUser(row) : undefined;
    },
    async listUsers(organizationKey, after, limit, tx) {
      return (await sql.select<UserRow>('SELECT * FROM scim_users WHERE organization_id = ? AND id > ? ORDER BY id LIMIT ?', [organizationKey, after, limit], tx)).map(toUser);
    },
    async countUsers(organizationKey, tx) {
      const [row] = await sql.select<{ n: number | string }>('SELECT COUNT(*) AS n FROM scim_users WHERE organization_id = ?', [organizationKey], tx);
      return Number(row.n);
    },
    async updateUser(user, change, now, tx, emails) {
      const sets: string[] = [];
      const values: unknown[] = [];
      if (change.userName !== undefined) sets.push('user_name = ?', 'user_name_key = ?'), values.push(change.userName, scimKey(change.userName));
      if (change.externalId !== undefined) sets.push('external_id = ?'), values.push(change.externalId);
      if (change.emailKey !== undefined) sets.push('email_key = ?'), values.push(change.emailKey);
      if (change.active !== undefined) sets.push('active = ?'), values.push(change.active);
      if (change.data !== undefined) sets.push('data = ?'), values.push(JSON.stringify(change.data));
      if (change.suspendedRoles !== undefined) sets.push('suspended_roles = ?'), values.push(change.suspendedRoles === null ? null : JSON.stringify(change.suspendedRoles));
      try {
        await sql.change(`UPDATE scim_users SET ${[...sets, 'version = version + 1', 'updated_at = ?'].join(', ')} WHERE id = ?`, [...values, t(now), user.id], tx);
        if (emails) await setEmails(user.id, user.organizationKey, emails, tx);
        return true;
      } catch (e) {
        if (e instanceof DuplicateKeyError) return false;
        throw e;
      }
    },
    async removeUser(user, tx) {
      await sql.change('DELETE FROM scim_group_members WHERE user_id = ?', [user.id], tx);
      await sql.change('DELETE FROM scim_user_emails WHERE user_id = ?', [user.id], tx);
      await sql.change('DELETE FROM scim_users WHERE id = ?', [user.id], tx);
    },
    async listGroupsOfUsers(userKeys, tx) {
      const out = new Map<number, { groupKey: number; resourceId: string; displayName: string }[]>();
      for (let i = 0; i < userKeys.length; i += 500) {
        const keys = userKeys.slice(i, i + 500);
        const rows = await sql.select<{ user_id: number | string; id: number | string; resource_id: string; display_name: string }>(
          `SELECT m.user_id, g.id, g.resource_id, g.display_name FROM scim_group_members m JOIN scim_groups g ON g.id = m.group_id WHERE m.user_id IN (${placeholders(keys.length)}) ORDER BY g.id`,
          keys, tx,
        );
        for (const r of rows) {
          const list = out.get(Number(r.user_id)) ?? [];
          list.push({ groupKey: Number(r.id), resourceId: r.resource_id, displayName: r.display_name });
          out.set(Number(r.user_id), list);
        }
      }
      return out;
    },

    async insertGroup(g, now, tx) {
      try {
        const id = await sql.insert(
          `INSERT INTO scim_groups (application_id, organization_id, resource_id, display_name, display_name_key, external_id, version, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?)`,
          [g.applicationId, g.organizationKey, g.resourceId, g.displayName, scimKey(g.displayName), g.externalId, t(now), t(now)], tx,
        );
        return groupByKey(id, tx);
      } catch (e) {
        if (e instanceof DuplicateKeyError) return undefined;
        throw e;
      }
    },
    async findGroup(organizationKey, lookup, tx) {
      const [where, value] = groupWhere(lookup);
      return (await sql.select<GroupRow>(`SELECT * FROM scim_groups WHERE organization_id = ? AND ${where} ORDER BY id LIMIT ?${lock(tx)}`, [organizationKey, value, MAX_LOOKUP], tx)).map(toGroup);
    },
    async listGroups(organizationKey, after, limit, tx) {
      return (await sql.select<GroupRow>('SELECT * FROM scim_groups WHERE organization_id = ? AND id > ? ORDER BY id LIMIT ?', [organizationKey, after, limit], tx)).map(toGroup);
    },
    async countGroups(organizationKey, tx) {
      const [row] = await sql.select<{ n: number | string }>('SELECT COUNT(*) AS n FROM scim_groups WHERE organization_id = ?', [organizationKey], tx);
      return Number(row.n);
    },
    async updateGroup(group, change, now, tx) {
      const sets: string[] = [];
      const values: unknown[] = [];
      if (change.displayName !== undefined) sets.push('display_name = ?', 'display_name_key = ?'), values.push(change.displayName, scimKey(change.displayName));
      if (change.externalId !== undefined) sets.push('external_id = ?'), values.push(change.externalId);
      try {
        await sql.change(`UPDATE scim_groups SET ${[...sets, 'version = version + 1', 'updated_at = ?'].join(', ')} WHERE id = ?`, [...values, t(now), group.id], tx);
        return true;
      } catch (e) {
        if (e instanceof DuplicateKeyError) return false;
        throw e;
      }
    },
    async bumpGroups(groupKeys, now, tx) {
      await batched([...new Set(groupKeys)], async (keys) => [await sql.change(`UPDATE scim_groups SET version = version + 1, updated_at = ? WHERE id IN (${placeholders(keys.length)})`, [t(now), ...keys], tx)]);
    },
    async removeGroup(group, tx) {
      await sql.change('DELETE FROM scim_group_members WHERE group_id = ?', [group.id], tx);
      await sql.change('DELETE FROM scim_groups WHERE id = ?', [group.id], tx);
    },
    async listMembersOf(groupKey, limit, tx) {
      const rows = await sql.select<{ id: number | string; resource_id: string; user_name: string }>(
        'SELECT u.id, u.resource_id, u.user_name FROM scim_group_members m JOIN scim_users u ON u.id = m.user_id WHERE m.group_id = ? ORDER BY u.id LIMIT ?', [groupKey, limit], tx,
      );
      return rows.map((r) => ({ userKey: Number(r.id), resourceId: r.resource_id, userName: r.user_name }));
    },
    async countMembersOf(groupKeys, tx) {
      const out = new Map<number, number>();
      if (groupKeys.length === 0) return out;
      const rows = await sql.select<{ group_id: number | string; n: number | string }>(
        `SELECT group_id, COUNT(*) AS n FROM scim_group_members WHERE group_id IN (${placeholders(groupKeys.length)}) GROUP BY group_id`, groupKeys, tx,
      );
      for (const r of rows) out.set(Number(r.group_id), Number(r.n));
      return out;
    },
    async addMembers(groupKey, userKeys, tx) {
      const wanted = [...new Set(userKeys)];
      const present = new Set((await batched(wanted, (keys) => sql.select<{ user_id: number | string }>(
        `SELECT user_id FROM scim_group_members WHERE group_id = ? AND user_id IN (${placeholders(keys.length)})`, [groupKey, ...keys], tx,
      ))).map((r) => Number(r.user_id)));
      const added = wanted.filter((k) => !present.has(k));
      await batched(added, async (keys) => [await sql.change(`INSERT INTO scim_group_members (group_id, user_id) VALUES ${keys.map(() => '(?, ?)').join(', ')}`, keys.flatMap((k) => [groupKey, k]), tx)]);
      return added;
    },
    async removeMembers(groupKey, userKeys, tx) {
      const present = (await batched([...new Set(userKeys)], (keys) => sql.select<{ user_id: number | string }>(
        `SELECT user_id FROM scim_group_members WHERE group_id = ? AND user_id IN (${placeholders(keys.length)})`, [groupKey, ...keys], tx,
      ))).map((r) => Number(r.user_id));
      await batched(present, async (keys) => [await sql.change(`DELETE FROM scim_group_members WHERE group_id = ? AND user_id IN (${placeholders(keys.length)})`, [groupKey, ...keys], tx)]);
      return present;
    },

    async findGroupRoles(organizationKey, tx) {
      const [row] = await sql.select<{ group_roles: string }>('SELECT group_roles FROM scim_settings WHERE organization_id = ?', [organizationKey], tx);
      return row ? JSON.parse(row.group_roles) as Record<string, string[]> : {};
    },
    async setGroupRoles(organizationKey, applicationId, roles, now, tx) {
      const changed = await sql.change('UPDATE scim_settings SET group_roles = ?, updated_at = ? WHERE organization_id = ?', [JSON.stringify(roles), t(now), organizationKey], tx);
      if (changed === 0) {
        await sql.change('INSERT INTO scim_settings (organization_id, application_id, group_roles, updated_at) VALUES (?, ?, ?, ?)', [organizationKey, applicationId, JSON.stringify(roles), t(now)], tx);
      }
    },
  };
}
