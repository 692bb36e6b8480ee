import { event, type Acting } from '../../domain/events';
import { BUILT_IN_ROLES, isBuiltIn, MAX_DEFINED_ROLES, MAX_PERMISSIONS, permissionProblem, roleNameProblem } from '../../domain/organizations';
import { invalidField, Refusal } from '../../domain/refusal';
import type { Application } from '../../domain/storage/applications';
import type { StoredRole } from '../../domain/storage/organizations';
import type { OrgDeps } from './common';

/**
 * The roles of an application's organizations (docs/organizations.md#the-model): owner, admin and
 * member are built in; the application defines more, and gives any role permissions (what the
 * organization tokens carry in `org_permissions`). The same roles in every organization.
 */

export interface RoleView { name: string; description: string; permissions: string[]; builtIn: boolean }

const onlyTheApplication = (acting: Acting) => {
  if (acting.actor.kind === 'account') throw new Refusal('forbidden', 'roles are defined by the application\'s backend or an operator');
};

/** Defines a role (or gives a built-in one its permissions), replacing what it had. */
export async function defineRole(
  deps: OrgDeps, command: { app: Application; acting: Acting; name: string; description?: string; permissions: readonly string[] },
): Promise<RoleView> {
  onlyTheApplication(command.acting);
  const nameWrong = roleNameProblem(command.name);
  if (nameWrong) throw invalidField('name', nameWrong);
  const description = (command.description ?? '').trim();
  if (description.length > 200) throw invalidField('description', 'is longer than 200 characters');
  const permissions = [...new Set(command.permissions)].sort();
  if (permissions.length > MAX_PERMISSIONS) throw invalidField('permissions', `names more than ${MAX_PERMISSIONS} permissions`);
  const wrong = permissions.map(permissionProblem).find(Boolean);
  if (wrong) throw invalidField('permissions', wrong);
  return deps.work.run(async (uow) => {
    // counted under the application's row, claimed (written) first: parallel definitions never pass the limit
    await deps.db.applications.claim(command.app.id, deps.clock.now(), uow.tx);
    const defined = await deps.db.organizations.listRoles(command.app.id, uow.tx);
    if (!defined.some((r) => r.name === command.name) && defined.length >= MAX_DEFINED_ROLES) {
      throw invalidField('name', `is one role too many: an application defines at most ${MAX_DEFINED_ROLES}; remove one first`);
    }
    const now = deps.clock.now();
    const role = await deps.db.organizations.defineRole(command.app.id, { name: command.name, description, permissions }, now, uow.tx);
    uow.record(event('organization.role_defined', command.app.id, now, command.acting, { kind: 'role', id: role.name }, { role: role.name, permissions }));
    return view(role);
  });
}

const view = (r: Pick<StoredRole, 'name' | 'description' | 'permissions'>): RoleView => ({ name: r.name, description: r.description, permissions: r.permissions, builtIn: isBuiltIn(r.name) });

/** Every role: the built-in ones first, then the defined ones by name. */
export async function listRoles(deps: Pick<OrgDeps, 'db'>, command: { app: Application }): Promise<RoleView[]> {
  const defined = await deps.db.organizations.listRoles(command.app.id);
  const builtIn = BUILT_IN_ROLES.map((name) => defined.find((r) => r.name === name) ?? { name, description: '', permissions: [] });
  return [...builtIn, ...defined.filter((r) => !isBuiltIn(r.name))].map(view);
}

/** Removes a defined role; the members holding it lose it (one left with none becomes a member). Answers how many held it. */
export async function removeRole(deps: OrgDeps, command: { app: Application; acting: Acting; name: string }): Promise<number> {
  onlyTheApplication(command.acting);
  if (isBuiltIn(command.name)) throw invalidField('name', `is built in: ${BUILT_IN_ROLES.join(', ')} are never removed (defining one again changes its permissions)`);
  return deps.work.run(async (uow) => {
    const now = deps.clock.now();
    const members = await deps.db.organizations.removeRole(command.app.id, command.name, 'member', now, uow.tx);
    if (members === undefined) throw invalidField('name', 'is not a role of this application (/organizations/roles/list names them)');
    uow.record(event('organization.role_removed', command.app.id, now, command.acting, { kind: 'role', id: command.name }, { role: command.name, members }));
    return members;
  });
}
