import type { Tx } from '../../domain/storage/transactions';
import type {
  InvitationState, JoinedBy, ListedMember, Membership, NewInvitation, NewOrganization, OrganizationStore, StoredDomain, StoredInvitation, StoredMember, StoredOrganization, StoredRole,
} from '../../domain/storage/organizations';
import { asDate } from '../models';
import { DuplicateKeyError, type Sql } from '../sql';

type Id = number | string;
type Time = Date | string;

interface OrganizationRow {
  id: Id; application_id: Id; organization_id: string; name: string; slug: string; logo_url: string | null; metadata: string;
  join_by_domain: number | boolean | string; default_roles: string; created_at: Time; updated_at: Time;
}
const list = (raw: string): string[] => {
  const parsed = JSON.parse(raw) as unknown;
  return Array.isArray(parsed) ? parsed.filter((x): x is string => typeof x === 'string') : [];
};
const flag = (v: number | boolean | string) => v === true || Number(v) === 1;
const toOrganization = (r: OrganizationRow): StoredOrganization => ({
  id: Number(r.id), applicationId: Number(r.application_id), organizationId: r.organization_id, name: r.name, slug: r.slug, logoUrl: r.logo_url,
  metadata: JSON.parse(r.metadata) as Record<string, unknown>, joinByDomain: flag(r.join_by_domain), defaultRoles: list(r.default_roles),
  createdAt: asDate(r.created_at), updatedAt: asDate(r.updated_at),
});

interface MemberRow { id: Id; organization_id: Id; entity_id: Id; joined_by: string; active_at: Time | null; created_at: Time }
const toMember = (r: MemberRow, roles: string[]): StoredMember => ({
  id: Number(r.id), organizationKey: Number(r.organization_id), entityId: Number(r.entity_id),
  roles, joinedBy: r.joined_by as JoinedBy, activeAt: asDate(r.active_at), createdAt: asDate(r.created_at),
});

interface InvitationRow {
  id: Id; application_id: Id; organization_id: Id; invitation_id: string; email: string; roles: string; inviter_entity_id: Id | null; inviter: string; locale: string;
  token_hash: string; state: string; expires_at: Time; accepted_by: Id | null; finished_at: Time | null; created_at: Time;
}
const toInvitation = (r: InvitationRow): StoredInvitation => ({
  id: Number(r.id), applicationId: Number(r.application_id), organizationKey: Number(r.organization_id), invitationId: r.invitation_id, email: r.email, roles: list(r.roles),
  inviterEntityId: r.inviter_entity_id === null ? null : Number(r.inviter_entity_id), inviter: r.inviter, locale: r.locale, tokenHash: r.token_hash,
  state: r.state as InvitationState, expiresAt: asDate(r.expires_at), acceptedBy: r.accepted_by === null ? null : Number(r.accepted_by),
  finishedAt: asDate(r.finished_at), createdAt: asDate(r.created_at),
});

/** A membership with its organization's columns (prefixed o_), as one row. */
type MembershipRow = MemberRow & { [k: `o_${string}`]: unknown };
const MEMBERSHIPS = 'SELECT m.*, '
  + 'o.id AS o_id, o.application_id AS o_application_id, o.organization_id AS o_organization_id, o.name AS o_name, o.slug AS o_slug, '
  + 'o.logo_url AS o_logo_url, o.metadata AS o_metadata, o.join_by_domain AS o_join_by_domain, o.default_roles AS o_default_roles, o.created_at AS o_created_at, o.updated_at AS o_updated_at '
  + 'FROM organization_members m JOIN organizations o ON o.id = m.organization_id';
const toMembership = (r: MembershipRow, roles: string[]): Membership => {
  const o = Object.fromEntries(Object.entries(r).filter(([k]) => k.startsWith('o_')).map(([k, v]) => [k.slice(2), v])) as unknown as OrganizationRow;
  return { organization: toOrganization(o), member: toMember(r, roles) };
};

/** Organizations (OrganizationStore of the storage contract) in SQL. */
export function createOrganizationQueries(sql: Sql): OrganizationStore {
  const t = sql.time;
  /**
   * How a read in a transaction reads: locking. A count so sees what is committed now rather than
   * the transaction's first read (every such count follows the lock or claim that puts parallel
   * changes one after another: the organization's row, the account's claim).
   */
  const lock = (tx?: Tx) => (tx ? sql.forUpdate : '');
  /** The roles of each member (sorted), in one read. */
  async function rolesOf(memberIds: number[], tx?: Tx): Promise<Map<number, string[]>> {
    const roles = new Map<number, string[]>(memberIds.map((id) => [id, []]));
    for (let i = 0; i < memberIds.length; i += 500) {
      const ids = memberIds.slice(i, i + 500);
      const rows = await sql.select<{ member_id: Id; role: string }>(
        `SELECT member_id, role FROM organization_member_roles WHERE member_id IN (${ids.map(() => '?').join(', ')}) ORDER BY role`, ids, tx,
      );
      for (const r of rows) roles.get(Number(r.member_id))?.push(r.role);
    }
    return roles;
  }
  /** Rows of members with their roles. */
  async function members<R extends MemberRow>(rows: R[], tx?: Tx): Promise<{ row: R; roles: string[] }[]> {
    const roles = await rolesOf(rows.map((r) => Number(r.id)), tx);
    return rows.map((row) => ({ row, roles: roles.get(Number(row.id)) ?? [] }));
  }
  const findByKey = async (id: number, tx?: Tx) => {
    const [row] = await sql.select<OrganizationRow>(`SELECT * FROM organizations WHERE id = ?${lock(tx)}`, [id], tx);
    return row ? toOrganization(row) : undefined;
  };
  const findMember = async (organizationKey: number, entityId: number, tx?: Tx) => {
    const rows = await sql.select<MemberRow>(`SELECT m.* FROM organization_members m WHERE m.organization_id = ? AND m.entity_id = ?${lock(tx)}`, [organizationKey, entityId], tx);
    const [found] = await members(rows, tx);
    return found ? toMember(found.row, found.roles) : undefined;
  };
  async function insertRoles(member: { id: number; organizationKey: number }, applicationId: number, roles: string[], tx: Tx) {
    for (const role of new Set(roles)) {
      await sql.change('INSERT INTO organization_member_roles (member_id, role, organization_id, application_id) VALUES (?, ?, ?, ?)', [member.id, role, member.organizationKey, applicationId], tx);
    }
  }
  const findInvitationWhere = async (where: string, values: unknown[], tx?: Tx) => {
    const [row] = await sql.select<InvitationRow>(`SELECT * FROM organization_invitations WHERE ${where}${lock(tx)}`, values, tx);
    return row ? toInvitation(row) : undefined;
  };
  return {
    async insert(o: NewOrganization, now, tx) {
      try {
        const id = await sql.insert(
          'INSERT INTO organizations (application_id, organization_id, name, slug, logo_url, metadata, join_by_domain, default_roles, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
          [o.applicationId, o.organizationId, o.name, o.slug, o.logoUrl, JSON.stringify(o.metadata), o.joinByDomain, JSON.stringify(o.defaultRoles), t(now), t(now)], tx,
        );
        return (await findByKey(id, tx))!;
      } catch (e) {
        if (e instanceof DuplicateKeyError) return undefined;
        throw e;
      }
    },
    async find(applicationId, organizationId, tx) {
      const [row] = await sql.select<OrganizationRow>(`SELECT * FROM organizations WHERE application_id = ? AND organization_id = ?${lock(tx)}`, [applicationId, organizationId], tx);
      return row ? toOrganization(row) : undefined;
    },
    findByKey,
    async findBySlug(applicationId, slug) {
      const [row] = await sql.select<OrganizationRow>('SELECT * FROM organizations WHERE application_id = ? AND slug = ?', [applicationId, slug]);
      return row ? toOrganization(row) : undefined;
    },
    async listPage(applicationId, after, limit) {
      const rows = await sql.select<OrganizationRow>('SELECT * FROM organizations WHERE application_id = ? AND id > ? ORDER BY id LIMIT ?', [applicationId, after ?? 0, limit + 1]);
      return { items: rows.slice(0, limit).map(toOrganization), next: rows.length > limit ? Number(rows[limit - 1].id) : null };
    },
    async search(applicationId, text, limit) {
      // (! escapes the patterns' own characters, on both engines)
      const like = (v: string) => v.toLowerCase().replace(/[!%_]/g, (c) => `!${c}`);
      const rows = await sql.select<OrganizationRow>(
        // (SQLite's LOWER folds ASCII only: the name as typed is looked for too)
        "SELECT * FROM organizations WHERE application_id = ? AND (organization_id = ? OR slug LIKE ? ESCAPE '!' OR LOWER(name) LIKE ? ESCAPE '!' OR name LIKE ? ESCAPE '!') ORDER BY name, id LIMIT ?",
        [applicationId, text, `${like(text)}%`, `%${like(text)}%`, `%${text.replace(/[!%_]/g, (c) => `!${c}`)}%`, limit],
      );
      return rows.map(toOrganization);
    },
    async update(o, change, now, tx) {
      const next = { ...o, ...change };
      try {
        await sql.change(
          'UPDATE organizations SET name = ?, slug = ?, logo_url = ?, metadata = ?, join_by_domain = ?, default_roles = ?, updated_at = ? WHERE id = ?',
          [next.name, next.slug, next.logoUrl, JSON.stringify(next.metadata), next.joinByDomain, JSON.stringify(next.defaultRoles), t(now), o.id], tx,
        );
        return true;
      } catch (e) {
        if (e instanceof DuplicateKeyError) return false;
        throw e;
      }
    },
    async remove(o, tx) {
      // the roles of its members first (their rows name the organization without a foreign key), then the rest by cascade
      await sql.change('DELETE FROM organization_member_roles WHERE organization_id = ?', [o.id], tx);
      await sql.change('DELETE FROM organizations WHERE id = ?', [o.id], tx);
    },
    async touch(organizationKey, now, tx) {
      await sql.change('UPDATE organizations SET updated_at = ? WHERE id = ?', [t(now), organizationKey], tx);
    },

    async insertMember(o, entityId, roles, joinedBy, now, tx) {
      let id: number;
      try {
        id = await sql.insert(
          'INSERT INTO organization_members (application_id, organization_id, entity_id, joined_by, active_at, created_at, updated_at) VALUES (?, ?, ?, ?, NULL, ?, ?)',
          [o.applicationId, o.id, entityId, joinedBy, t(now), t(now)], tx,
        );
      } catch (e) {
        if (e instanceof DuplicateKeyError) return undefined;
        throw e;
      }
      await insertRoles({ id, organizationKey: o.id }, o.applicationId, roles, tx);
      // joined on purpose (not by a domain): a departure before no longer counts
      if (joinedBy !== 'domain') await sql.change('DELETE FROM organization_departures WHERE organization_id = ? AND entity_id = ?', [o.id, entityId], tx);
      return (await findMember(o.id, entityId, tx))!;
    },
    findMember,
    async listMembersPage(organizationKey, after, limit) {
      const rows = await sql.select<MemberRow & { uuid: string; email: string | null; username: string | null }>(
        'SELECT m.*, e.uuid, e.email, e.username FROM organization_members m JOIN entities e ON e.id = m.entity_id '
        + 'WHERE m.organization_id = ? AND m.id > ? ORDER BY m.id LIMIT ?', [organizationKey, after ?? 0, limit + 1],
      );
      const items: ListedMember[] = (await members(rows.slice(0, limit))).map(({ row, roles }) => ({ ...toMember(row, roles), uuid: row.uuid, email: row.email, username: row.username }));
      return { items, next: rows.length > limit ? Number(rows[limit - 1].id) : null };
    },
    async countMembers(organizationKey, tx) {
      const [row] = await sql.select<{ n: Id }>(`SELECT COUNT(*) AS n FROM organization_members WHERE organization_id = ?${lock(tx)}`, [organizationKey], tx);
      return Number(row.n);
    },
    async countWithRole(organizationKey, role, tx) {
      const [row] = await sql.select<{ n: Id }>(`SELECT COUNT(*) AS n FROM organization_member_roles WHERE organization_id = ? AND role = ?${lock(tx)}`, [organizationKey, role], tx);
      return Number(row.n);
    },
    async setRoles(member, roles, now, tx) {
      const [o] = await sql.select<{ application_id: Id }>('SELECT application_id FROM organizations WHERE id = ?', [member.organizationKey], tx);
      await sql.change('DELETE FROM organization_member_roles WHERE member_id = ?', [member.id], tx);
      await insertRoles(member, Number(o.application_id), roles, tx);
      await sql.change('UPDATE organization_members SET updated_at = ? WHERE id = ?', [t(now), member.id], tx);
    },
    async removeMember(organizationKey, entityId, now, tx) {
      const member = await findMember(organizationKey, entityId, tx);
      if (!member) return false;
      await sql.change('DELETE FROM organization_member_roles WHERE member_id = ?', [member.id], tx);
      await sql.change('DELETE FROM organization_members WHERE id = ?', [member.id], tx);
      await sql.change('DELETE FROM organization_departures WHERE organization_id = ? AND entity_id = ?', [organizationKey, entityId], tx);
      await sql.change('INSERT INTO organization_departures (organization_id, entity_id, departed_at) VALUES (?, ?, ?)', [organizationKey, entityId, t(now)], tx);
      return true;
    },
    async findDeparture(organizationKey, entityId, tx) {
      const [row] = await sql.select<{ departed_at: Time }>('SELECT departed_at FROM organization_departures WHERE organization_id = ? AND entity_id = ?', [organizationKey, entityId], tx);
      return row ? asDate(row.departed_at) : undefined;
    },
    async setActive(member, now, tx) {
      await sql.change('UPDATE organization_members SET active_at = ? WHERE id = ?', [t(now), member.id], tx);
    },
    async listMembershipsOf(applicationId, entityId, limit) {
      const rows = await sql.select<MembershipRow>(
        `${MEMBERSHIPS} WHERE m.entity_id = ? AND m.application_id = ? `
        // the active one first (NULLs last on both engines), then in the order joined
        + 'ORDER BY CASE WHEN m.active_at IS NULL THEN 1 ELSE 0 END, m.active_at DESC, m.id LIMIT ?', [entityId, applicationId, limit],
      );
      return (await members(rows)).map(({ row, roles }) => toMembership(row, roles));
    },
    async findRolesOf(applicationId, uuid, organizationId) {
      const rows = await sql.select<{ role: string | null; permissions: string | null }>(
        'SELECT r.role, d.permissions FROM organizations o JOIN organization_members m ON m.organization_id = o.id JOIN entities e ON e.id = m.entity_id '
        + 'LEFT JOIN organization_member_roles r ON r.member_id = m.id LEFT JOIN organization_roles d ON d.application_id = o.application_id AND d.name = r.role '
        + 'WHERE o.application_id = ? AND o.organization_id = ? AND e.application_id = ? AND e.uuid = ? ORDER BY r.role', [applicationId, organizationId, applicationId, uuid],
      );
      if (rows.length === 0) return undefined;
      return rows.filter((r) => r.role !== null).map((r) => ({ role: r.role!, permissions: r.permissions === null ? [] : list(r.permissions) }));
    },
    async listOrganizationRolesOf(applicationId, entityId, limit) {
      const rows = await sql.select<{ member: Id; organization_id: string; role: string | null }>(
        'SELECT m.id AS member, o.organization_id, r.role FROM (SELECT id, organization_id FROM organization_members WHERE entity_id = ? AND application_id = ? ORDER BY id LIMIT ?) m '
        + 'JOIN organizations o ON o.id = m.organization_id LEFT JOIN organization_member_roles r ON r.member_id = m.id ORDER BY m.id, r.role', [entityId, applicationId, limit],
      );
      const out: { organizationId: string; roles: string[] }[] = [];
      let last: Id | undefined;
      for (const r of rows) {
        if (r.member !== last) out.push({ organizationId: r.organization_id, roles: [] });
        last = r.member;
        if (r.role !== null) out[out.length - 1].roles.push(r.role);
      }
      return out;
    },
    async countMembershipsOf(entityId, tx) {
      const [row] = await sql.select<{ n: Id }>(`SELECT COUNT(*) AS n FROM organization_members WHERE entity_id = ?${lock(tx)}`, [entityId], tx);
      return Number(row.n);
    },
    async claimMembershipsOf(entityId, now, tx) {
      await sql.change(`UPDATE organization_members SET updated_at = ${sql.later('updated_at')} WHERE entity_id = ?`, [t(now), entityId], tx);
      // a locking read: the rows as committed now, not as the transaction's first read saw them
      const [row] = await sql.select<{ n: Id }>(`SELECT COUNT(*) AS n FROM organization_members WHERE entity_id = ?${sql.forUpdate}`, [entityId], tx);
      return Number(row.n);
    },

    async defineRole(applicationId, role, now, tx) {
      const changed = await sql.change(
        'UPDATE organization_roles SET description = ?, permissions = ?, updated_at = ? WHERE application_id = ? AND name = ?',
        [role.description, JSON.stringify(role.permissions), t(now), applicationId, role.name], tx,
      );
      if (changed === 0) {
        await sql.change(
          'INSERT INTO organization_roles (application_id, name, description, permissions, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)',
          [applicationId, role.name, role.description, JSON.stringify(role.permissions), t(now), t(now)], tx,
        );
      }
      const [row] = await sql.select<{ created_at: Time; updated_at: Time }>('SELECT created_at, updated_at FROM organization_roles WHERE application_id = ? AND name = ?', [applicationId, role.name], tx);
      return { ...role, createdAt: asDate(row.created_at), updatedAt: asDate(row.updated_at) };
    },
    async listRoles(applicationId, tx) {
      const rows = await sql.select<{ name: string; description: string; permissions: string; created_at: Time; updated_at: Time }>(
        'SELECT * FROM organization_roles WHERE application_id = ? ORDER BY name', [applicationId], tx,
      );
      return rows.map((r): StoredRole => ({ name: r.name, description: r.description, permissions: list(r.permissions), createdAt: asDate(r.created_at), updatedAt: asDate(r.updated_at) }));
    },
    async removeRole(applicationId, name, fallback, now, tx) {
      if ((await sql.change('DELETE FROM organization_roles WHERE application_id = ? AND name = ?', [applicationId, name], tx)) === 0) return undefined;
      const holders = await sql.select<{ member_id: Id; organization_id: Id }>(
        'SELECT member_id, organization_id FROM organization_member_roles WHERE application_id = ? AND role = ?', [applicationId, name], tx,
      );
      await sql.change('DELETE FROM organization_member_roles WHERE application_id = ? AND role = ?', [applicationId, name], tx);
      for (const h of holders) {
        const [left] = await sql.select<{ n: Id }>('SELECT COUNT(*) AS n FROM organization_member_roles WHERE member_id = ?', [h.member_id], tx);
        if (Number(left.n) === 0) await insertRoles({ id: Number(h.member_id), organizationKey: Number(h.organization_id) }, applicationId, [fallback], tx);
        await sql.change('UPDATE organization_members SET updated_at = ? WHERE id = ?', [t(now), h.member_id], tx);
      }
      // the organizations' default roles lose it too (none left: the fallback)
      const defaults = await sql.select<{ id: Id; default_roles: string }>(
        'SELECT id, default_roles FROM organizations WHERE application_id = ? AND default_roles LIKE ?', [applicationId, `%${JSON.stringify(name)}%`], tx,
      );
      for (const d of defaults) {
        const kept = list(d.default_roles).filter((r) => r !== name);
        await sql.change('UPDATE organizations SET default_roles = ?, updated_at = ? WHERE id = ?', [JSON.stringify(kept.length > 0 ? kept : [fallback]), t(now), d.id], tx);
      }
      return holders.length;
    },

    async insertInvitation(i: NewInvitation, now, tx) {
      const id = await sql.insert(
        'INSERT INTO organization_invitations (application_id, organization_id, invitation_id, email, roles, inviter_entity_id, inviter, locale, token_hash, state, expires_at, accepted_by, finished_at, created_at) '
        + "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, NULL, NULL, ?)",
        [i.applicationId, i.organizationKey, i.invitationId, i.email, JSON.stringify(i.roles), i.inviterEntityId, i.inviter, i.locale, i.tokenHash, t(i.expiresAt), t(now)], tx,
      );
      return (await findInvitationWhere('id = ?', [id], tx))!;
    },
    findInvitation: (applicationId, invitationId, tx) => findInvitationWhere('application_id = ? AND invitation_id = ?', [applicationId, invitationId], tx),
    findInvitationByToken: (tokenHash, tx) => findInvitationWhere('token_hash = ?', [tokenHash], tx),
    async listInvitationsPage(organizationKey, after, limit) {
      const rows = await sql.select<InvitationRow>(
        `SELECT * FROM organization_invitations WHERE organization_id = ?${after === null ? '' : ' AND id < ?'} ORDER BY id DESC LIMIT ?`,
        after === null ? [organizationKey, limit + 1] : [organizationKey, after, limit + 1],
      );
      return { items: rows.slice(0, limit).map(toInvitation), next: rows.length > limit ? Number(rows[limit - 1].id) : null };
    },
    async countInvitationsSince(scope, since, tx) {
      const [row] = 'organizationKey' in scope
        ? await sql.select<{ n: Id }>(`SELECT COUNT(*) AS n FROM organization_invitations WHERE organization_id = ? AND created_at > ?${lock(tx)}`, [scope.organizationKey, t(since)], tx)
        : await sql.select<{ n: Id }>(`SELECT COUNT(*) AS n FROM organization_invitations WHERE application_id = ? AND inviter = ? AND created_at > ?${lock(tx)}`, [scope.applicationId, scope.inviter, t(since)], tx);
      return Number(row.n);
    },
    async finishInvitation(i, state, acceptedBy, now, tx) {
      return (await sql.change(
        "UPDATE organization_invitations SET state = ?, accepted_by = ?, finished_at = ? WHERE id = ? AND state = 'pending'", [state, acceptedBy, t(now), i.id], tx,
      )) > 0;
    },

    async insertDomain(o, domain, verifiedBy, joinable, now, tx) {
      try {
        await sql.change(
          'INSERT INTO organization_domains (application_id, organization_id, domain, verified_by, verified_at, joinable_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
          [o.applicationId, o.id, domain, verifiedBy, verifiedBy ? t(now) : null, joinable ? t(now) : null, t(now)], tx,
        );
        return true;
      } catch (e) {
        if (e instanceof DuplicateKeyError) return false;
        throw e;
      }
    },
    async listDomains(organizationKey, tx) {
      const rows = await sql.select<{ domain: string; verified_by: string | null; verified_at: Time | null; joinable_at: Time | null; created_at: Time }>(
        'SELECT * FROM organization_domains WHERE organization_id = ? ORDER BY domain', [organizationKey], tx,
      );
      return rows.map((r): StoredDomain => ({
        domain: r.domain, verifiedBy: r.verified_by as StoredDomain['verifiedBy'], verifiedAt: asDate(r.verified_at), joinableAt: asDate(r.joinable_at), createdAt: asDate(r.created_at),
      }));
    },
    async verifyDomain(organizationKey, domain, by, now, tx) {
      return (await sql.change(
        'UPDATE organization_domains SET verified_by = ?, verified_at = ? WHERE organization_id = ? AND domain = ? AND verified_at IS NULL', [by, t(now), organizationKey, domain], tx,
      )) > 0;
    },
    async removeDomain(organizationKey, domain, tx) {
      return (await sql.change('DELETE FROM organization_domains WHERE organization_id = ? AND domain = ?', [organizationKey, domain], tx)) > 0;
    },
    async setDomainJoinable(organizationKey, domain, joinable, now, tx) {
      return (await sql.change(
        joinable
          ? "UPDATE organization_domains SET joinable_at = ?, verified_by = COALESCE(verified_by, 'operator'), verified_at = COALESCE(verified_at, ?) WHERE organization_id = ? AND domain = ?"
          : 'UPDATE organization_domains SET joinable_at = NULL WHERE organization_id = ? AND domain = ?',
        joinable ? [t(now), t(now), organizationKey, domain] : [organizationKey, domain], tx,
      )) > 0;
    },
    async listJoinableDomains(applicationId) {
      const rows = await sql.select<{ domain: string }>(
        'SELECT DISTINCT d.domain FROM organization_domains d JOIN organizations o ON o.id = d.organization_id '
        + 'WHERE d.application_id = ? AND d.verified_at IS NOT NULL AND d.joinable_at IS NOT NULL AND o.join_by_domain = ? ORDER BY d.domain', [applicationId, true],
      );
      return rows.map((r) => r.domain);
    },
    async listJoinableByDomain(applicationId, domain) {
      const rows = await sql.select<OrganizationRow>(
        'SELECT o.* FROM organization_domains d JOIN organizations o ON o.id = d.organization_id '
        + 'WHERE d.application_id = ? AND d.domain = ? AND d.verified_at IS NOT NULL AND d.joinable_at IS NOT NULL AND o.join_by_domain = ? ORDER BY o.id', [applicationId, domain, true],
      );
      return rows.map(toOrganization);
    },
  };
}
