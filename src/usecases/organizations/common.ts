import type { Acting, Subject } from '../../domain/events';
import { isOwner, knownRoles, managesMembers, MAX_ROLES } from '../../domain/organizations';
import { invalidField, Refusal } from '../../domain/refusal';
import type { Application } from '../../domain/storage/applications';
import type { StoredMember, StoredOrganization } from '../../domain/storage/organizations';
import type { Tx } from '../../domain/storage/transactions';
import type { Services } from '../services';

/** What the organizations' use cases run with. */
export type OrgDeps = Pick<Services, 'db' | 'clock' | 'work'>;
/** What a use case that changes which domains accounts join by runs with (it tells this process's JoinableDomains). */
export type DomainDeps = OrgDeps & Pick<Services, 'joinableDomains'>;

export const organizationSubject = (o: Pick<StoredOrganization, 'organizationId'>): Subject => ({ kind: 'organization', id: o.organizationId });

export const unknownOrganization = () => invalidField('organizationId', 'is not an organization of this application (/organizations/list names them)');

/** The application's organization by its public id (locked in `tx` when given), or the refusal naming it. */
export async function organizationOf(deps: Pick<Services, 'db'>, app: Application, organizationId: string, tx?: Tx): Promise<StoredOrganization> {
  const found = /^org_[0-9a-f]{24}$/.test(organizationId) ? await deps.db.organizations.find(app.id, organizationId, tx) : undefined;
  if (!found) throw unknownOrganization();
  return found;
}

/**
 * `roles` checked against the application's (built-in and defined): each known, at least one, at
 * most MAX_ROLES; answered sorted, each once. `field` is the command's name for them.
 */
export async function knownRolesOf(deps: Pick<Services, 'db'>, app: Application, roles: readonly string[], field = 'roles'): Promise<string[]> {
  const unique = [...new Set(roles)].sort();
  if (unique.length === 0) throw invalidField(field, 'names no role: give at least one, such as ["member"]');
  if (unique.length > MAX_ROLES) throw invalidField(field, `names more than ${MAX_ROLES} roles`);
  const known = knownRoles(await deps.db.organizations.listRoles(app.id));
  const unknown = unique.find((r) => !known.has(r));
  if (unknown !== undefined) {
    throw invalidField(field, `has ${JSON.stringify(unknown.slice(0, 64))}, which is not a role of this application; its roles are ${[...known.keys()].join(', ')} (/organizations/roles/list)`);
  }
  return unique;
}

/**
 * Who acts, in an organization: the application (its backend, an operator, Gatehouse itself), or
 * a member with its roles. An account that is not a member is refused.
 */
export type Authority = { kind: 'application' } | { kind: 'member'; member: StoredMember };

export async function authorityIn(deps: Pick<Services, 'db'>, organization: StoredOrganization, acting: Acting, tx?: Tx): Promise<Authority> {
  if (acting.actor.kind !== 'account') return { kind: 'application' };
  const member = await deps.db.organizations.findMember(organization.id, acting.actor.accountId, tx);
  if (!member) throw new Refusal('forbidden', 'you are not a member of this organization');
  return { kind: 'member', member };
}

/** Refuses a member who is neither an owner nor an admin of the organization. */
export function mustManage(authority: Authority, what: string): void {
  if (authority.kind === 'member' && !managesMembers(authority.member.roles)) throw new Refusal('forbidden', `only the organization's owners and admins ${what}`);
}

/** Refuses a member who is not an owner, where `owner` is given or taken. */
export function mustOwnToTouchOwners(authority: Authority, before: readonly string[], after: readonly string[]): void {
  if (authority.kind === 'member' && isOwner(before) !== isOwner(after) && !isOwner(authority.member.roles)) {
    throw new Refusal('forbidden', 'only an owner of the organization gives or takes the owner role');
  }
}

/**
 * The application's settings as stored now, for the organizations' limits: a pod's copy of the
 * application may be a few seconds old, and a limit just lowered holds at once.
 */
export async function currentSettings(deps: Pick<Services, 'db'>, app: Application, tx?: Tx): Promise<Record<string, string>> {
  return (await deps.db.applications.findById(app.id, tx))?.settings ?? app.settings;
}

/** An account named by its id that is not a live record of the application. */
export const unknownAccount = () => invalidField('account', 'is not an account of this application');
