import { event, recordSubject, type Acting } from '../../domain/events';
import { isOwner, limitOf } from '../../domain/organizations';
import { invalidField, LimitReachedError, Refusal } from '../../domain/refusal';
import type { Application } from '../../domain/storage/applications';
import type { JoinedBy, ListedMember, Membership, Page, StoredMember, StoredOrganization } from '../../domain/storage/organizations';
import type { UnitOfWork } from '../unit-of-work';
import { authorityIn, currentSettings, knownRolesOf, mustManage, mustOwnToTouchOwners, organizationOf, unknownAccount, type OrgDeps } from './common';
import { MAX_PAGE } from './organizations';

/**
 * An organization's members (docs/organizations.md#the-model): added by the application's backend
 * (or an invitation, or their address's domain), their roles changed and removed by the backend or
 * the organization's owners and admins; an organization always keeps an owner, whatever runs in
 * parallel (its row is written first in each change: see OrganizationStore).
 */

const notMember = () => invalidField('account', 'is not a member of this organization');
const lastOwner = (field: string) => invalidField(field, 'would leave the organization without an owner: give another member the owner role first');

/**
 * The account joins `organization` with `roles` in the unit of work `uow`, within the limits;
 * undefined when it is a member already. The organization is locked and written first.
 */
export async function join(
  deps: Pick<OrgDeps, 'db' | 'clock'>, uow: UnitOfWork,
  command: { app: Application; acting: Acting; organization: StoredOrganization; entityId: number; roles: string[]; by: JoinedBy; invitation?: string },
): Promise<StoredMember | undefined> {
  const { app, organization, entityId } = command;
  const now = deps.clock.now();
  await deps.db.organizations.touch(organization.id, now, uow.tx);
  if (!(await deps.db.records.findForUpdate(app.id, entityId, uow.tx))) throw unknownAccount();
  // the account claimed: its memberships are counted below, on every Galera node (docs/scaling.md)
  await deps.db.records.claim(entityId, now, uow.tx);
  if (await deps.db.organizations.findMember(organization.id, entityId, uow.tx)) return undefined;
  const settings = await currentSettings(deps, app, uow.tx);
  const maxMembers = limitOf(settings, 'organization_max_members');
  if ((await deps.db.organizations.countMembers(organization.id, uow.tx)) >= maxMembers) {
    throw new LimitReachedError(3600, `members in this organization (at most ${maxMembers}: setting organization_max_members)`);
  }
  const maxPerAccount = limitOf(settings, 'organization_max_per_account');
  if ((await deps.db.organizations.countMembershipsOf(entityId, uow.tx)) >= maxPerAccount) {
    throw new LimitReachedError(3600, `organizations for this account (at most ${maxPerAccount}: setting organization_max_per_account)`);
  }
  const member = await deps.db.organizations.insertMember(organization, entityId, command.roles, command.by, now, uow.tx);
  if (!member) return undefined;
  uow.record(event('organization.member_added', app.id, now, command.acting, recordSubject(entityId), {
    organization: organization.organizationId, roles: member.roles, by: command.by, ...(command.invitation !== undefined && { invitation: command.invitation }),
  }));
  return member;
}

/** The application's backend (or an operator) adds an account to an organization with `roles`. */
export async function addMember(
  deps: OrgDeps, command: { app: Application; acting: Acting; organizationId: string; entityId: number; roles: readonly string[] },
): Promise<StoredMember> {
  const roles = await knownRolesOf(deps, command.app, command.roles);
  return deps.work.run(async (uow) => {
    const organization = await organizationOf(deps, command.app, command.organizationId, uow.tx);
    if ((await authorityIn(deps, organization, command.acting, uow.tx)).kind === 'member') {
      throw new Refusal('forbidden', 'members join by invitation (/organizations/invitations/create); the application\'s backend adds them directly');
    }
    const member = await join(deps, uow, { app: command.app, acting: command.acting, organization, entityId: command.entityId, roles, by: 'api' });
    if (!member) throw invalidField('account', 'is a member of this organization already: /organizations/members/set_roles changes its roles');
    return member;
  });
}

/** An organization's members, oldest first: for the backend, an operator, or one of its members. */
export async function listMembers(
  deps: Pick<OrgDeps, 'db'>, command: { app: Application; acting: Acting; organizationId: string; after: number | null; limit: number },
): Promise<Page<ListedMember>> {
  const organization = await organizationOf(deps, command.app, command.organizationId);
  await authorityIn(deps, organization, command.acting);
  return deps.db.organizations.listMembersPage(organization.id, command.after, Math.min(MAX_PAGE, Math.max(1, command.limit)));
}

/** A member's roles are now `roles`: the backend, an operator, or an owner or admin (only an owner gives or takes `owner`). */
export async function setMemberRoles(
  deps: OrgDeps, command: { app: Application; acting: Acting; organizationId: string; entityId: number; roles: readonly string[] },
): Promise<StoredMember> {
  const roles = await knownRolesOf(deps, command.app, command.roles);
  return deps.work.run(async (uow) => {
    const organization = await organizationOf(deps, command.app, command.organizationId, uow.tx);
    const authority = await authorityIn(deps, organization, command.acting, uow.tx);
    mustManage(authority, 'change the roles of members');
    const now = deps.clock.now();
    await deps.db.organizations.touch(organization.id, now, uow.tx);
    const member = await deps.db.organizations.findMember(organization.id, command.entityId, uow.tx);
    if (!member) throw notMember();
    mustOwnToTouchOwners(authority, member.roles, roles);
    // an owner's roles are changed by an owner (or the application) only
    if (authority.kind === 'member' && isOwner(member.roles) && !isOwner(authority.member.roles)) throw new Refusal('forbidden', 'only an owner of the organization changes the roles of an owner');
    if (JSON.stringify(member.roles) === JSON.stringify(roles)) return member;
    if (isOwner(member.roles) && !isOwner(roles) && (await deps.db.organizations.countWithRole(organization.id, 'owner', uow.tx)) <= 1) throw lastOwner('roles');
    await deps.db.organizations.setRoles(member, roles, now, uow.tx);
    uow.record(event('organization.member_roles_changed', command.app.id, now, command.acting, recordSubject(member.entityId), { organization: organization.organizationId, roles }));
    return { ...member, roles };
  });
}

/**
 * Removes a member: the backend, an operator, an owner or admin (an owner only by an owner), or
 * the member itself (leaving). The last owner is never removed.
 */
export async function removeMember(deps: OrgDeps, command: { app: Application; acting: Acting; organizationId: string; entityId: number }): Promise<void> {
  await deps.work.run(async (uow) => {
    const organization = await organizationOf(deps, command.app, command.organizationId, uow.tx);
    const authority = await authorityIn(deps, organization, command.acting, uow.tx);
    const leaving = authority.kind === 'member' && authority.member.entityId === command.entityId;
    if (!leaving) mustManage(authority, 'remove members');
    const now = deps.clock.now();
    await deps.db.organizations.touch(organization.id, now, uow.tx);
    const member = await deps.db.organizations.findMember(organization.id, command.entityId, uow.tx);
    if (!member) throw notMember();
    if (isOwner(member.roles)) {
      if (!leaving) mustOwnToTouchOwners(authority, member.roles, []);
      if ((await deps.db.organizations.countWithRole(organization.id, 'owner', uow.tx)) <= 1) throw lastOwner('account');
    }
    await deps.db.organizations.removeMember(organization.id, member.entityId, now, uow.tx);
    uow.record(event('organization.member_removed', command.app.id, now, command.acting, recordSubject(member.entityId), {
      organization: organization.organizationId, by: leaving ? 'left' : 'removed',
    }));
  });
}

/** An account's organizations with its roles in each, the active one first. */
export async function organizationsOf(deps: Pick<OrgDeps, 'db'>, command: { app: Application; entityId: number }): Promise<Membership[]> {
  return deps.db.organizations.listMembershipsOf(command.app.id, command.entityId, limitOf(command.app.settings, 'organization_max_per_account'));
}

/** The account makes one of its organizations its active one. */
export async function switchOrganization(deps: OrgDeps, command: { app: Application; acting: Acting & { actor: { kind: 'account' } }; organizationId: string }): Promise<void> {
  await deps.work.run(async (uow) => {
    const organization = await organizationOf(deps, command.app, command.organizationId, uow.tx);
    const authority = await authorityIn(deps, organization, command.acting, uow.tx);
    if (authority.kind !== 'member') return;
    const now = deps.clock.now();
    await deps.db.organizations.setActive(authority.member, now, uow.tx);
    uow.record(event('organization.switched', command.app.id, now, command.acting, recordSubject(authority.member.entityId), { organization: organization.organizationId }));
  });
}
