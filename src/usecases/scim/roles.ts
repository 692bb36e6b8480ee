import { event, recordSubject } from '../../domain/events';
import { isOwner } from '../../domain/organizations';
import type { UnitOfWork } from '../../domain/ports';
import { scimKey, type StoredScimUser } from '../../domain/storage/scim';
import type { ScimCall, ScimDeps } from './common';

/**
 * The organization's roles its directory's groups give (docs/scim.md#groups-and-roles): where the
 * organization maps groups to roles, a provisioned member holds the roles of its mapped groups, or
 * the organization's default roles when it is in none; where it maps none, groups give no role.
 */

/** The roles each user's groups give, by the user's key; empty when the organization maps no group. */
export async function rolesFromGroups(deps: Pick<ScimDeps, 'db'>, call: ScimCall, users: StoredScimUser[], uow: UnitOfWork): Promise<Map<number, string[]>> {
  const out = new Map<number, string[]>();
  const mapping = await deps.db.scim.findGroupRoles(call.organization.id, uow.tx);
  const byName = new Map(Object.entries(mapping).map(([group, roles]) => [scimKey(group), roles]));
  if (byName.size === 0 || users.length === 0) return out;
  const groups = await deps.db.scim.listGroupsOfUsers(users.map((u) => u.id), uow.tx);
  for (const user of users) {
    const roles = [...new Set((groups.get(user.id) ?? []).flatMap((g) => byName.get(scimKey(g.displayName)) ?? []))].sort();
    out.set(user.id, roles.length > 0 ? roles : [...call.organization.defaultRoles].sort());
  }
  return out;
}

/** Each active member among `users` given the roles its groups give (an organization's last owner keeps `owner`). */
export async function applyGroupRoles(deps: Pick<ScimDeps, 'db' | 'clock'>, call: ScimCall, uow: UnitOfWork, users: StoredScimUser[]): Promise<void> {
  const roles = await rolesFromGroups(deps, call, users.filter((u) => u.active), uow);
  const { organization } = call;
  const byKey = new Map(users.map((u) => [u.id, u]));
  // the organization's owners, counted once and kept as roles change
  let owners: number | undefined;
  for (const [userKey, given] of roles) {
    const user = byKey.get(userKey)!;
    const member = await deps.db.organizations.findMember(organization.id, user.entityId, uow.tx);
    if (!member) continue;
    let next = given;
    if (isOwner(member.roles) && !isOwner(next)) {
      owners ??= await deps.db.organizations.countWithRole(organization.id, 'owner', uow.tx);
      if (owners <= 1) next = [...new Set([...next, 'owner'])].sort();
      else owners--;
    } else if (!isOwner(member.roles) && isOwner(next) && owners !== undefined) owners++;
    if (next.join(' ') === member.roles.join(' ')) continue;
    await deps.db.organizations.setRoles(member, next, deps.clock.now(), uow.tx);
    uow.record(event('organization.member_roles_changed', call.app.id, deps.clock.now(), call.acting, recordSubject(user.entityId), { organization: organization.organizationId, roles: next }));
  }
}
