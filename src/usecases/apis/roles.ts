import { roleNameProblem } from '../../domain/organizations';
import { event, type Acting } from '../../domain/events';
import { invalidField, Refusal } from '../../domain/refusal';
import type { Application } from '../../domain/storage/applications';
import type { StoredApi, StoredAppRole } from '../../domain/storage/apis';
import type { Services } from '../services';

/**
 * The application's roles (docs/openid-connect.md#roles): each gives the accounts holding it
 * scopes of the application's APIs (its permissions). An API with role-based access (`rbac`)
 * issues a person only the scopes their roles give; one with `permissions_in_token` lists them in
 * its tokens' `permissions`. Each change is one use case recorded as an event.
 */

/** At most this many roles per application, permissions per role, roles per account. */
export const MAX_APP_ROLES = 100;
export const MAX_ROLE_PERMISSIONS = 200;
export const MAX_ROLES_PER_ACCOUNT = 50;

/** A role as its owner sees it: its permissions by API identifier (an API removed since is left out). */
export interface AppRoleView { name: string; description: string; permissions: Record<string, string[]> }

type Deps = Pick<Services, 'clock' | 'db' | 'work'>;

const roleView = (role: StoredAppRole, apis: StoredApi[]): AppRoleView => ({
  name: role.name, description: role.description,
  permissions: Object.fromEntries(apis.filter((a) => role.permissions[a.publicId]?.length).map((a) => [a.identifier, role.permissions[a.publicId].filter((s) => a.scopes.includes(s))])),
});

/** `{"https://api.example.com/": ["read:orders"]}` as stored: by API public id, each scope one the API defines. */
function permissionsOf(raw: string, apis: StoredApi[]): Record<string, string[]> {
  let parsed: unknown;
  try {
    parsed = raw.trim() === '' ? {} : JSON.parse(raw);
  } catch {
    throw invalidField('permissions', 'is not JSON: send an object of API identifiers to scopes, such as {"https://api.example.com/":["read:orders"]}');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw invalidField('permissions', 'must be a JSON object of API identifiers to lists of scopes');
  const stored: Record<string, string[]> = {};
  let count = 0;
  for (const [identifier, scopes] of Object.entries(parsed as Record<string, unknown>)) {
    const api = apis.find((a) => a.identifier === identifier);
    if (!api) throw invalidField('permissions', `names ${JSON.stringify(identifier.slice(0, 255))}, which is not an API of this application (/apis/list names them)`);
    if (!Array.isArray(scopes) || scopes.some((s) => typeof s !== 'string')) throw invalidField('permissions', `gives ${identifier} something that is not a list of scopes`);
    const undefinedScopes = (scopes as string[]).filter((s) => !api.scopes.includes(s));
    if (undefinedScopes.length > 0) throw invalidField('permissions', `gives ${undefinedScopes.slice(0, 5).join(', ')} of ${identifier}, which it does not define (it defines ${api.scopes.join(' ') || 'none'})`);
    const unique = [...new Set(scopes as string[])].sort();
    count += unique.length;
    if (unique.length > 0) stored[api.publicId] = unique;
  }
  if (count > MAX_ROLE_PERMISSIONS) throw invalidField('permissions', `gives more than ${MAX_ROLE_PERMISSIONS} permissions`);
  return stored;
}

const unknownRole = (field: string, name: string) => invalidField(field, `names ${JSON.stringify(name.slice(0, 64))}, which is not a role of this application (/roles/list names them)`);

/** Defines a role, or replaces its description and permissions; answers it. */
export async function defineAppRole(
  deps: Deps, command: { app: Application; acting: Acting; name: string; description?: string; permissions: string },
): Promise<AppRoleView> {
  const nameWrong = roleNameProblem(command.name);
  if (nameWrong) throw invalidField('name', nameWrong);
  const description = (command.description ?? '').trim();
  if (description.length > 200) throw invalidField('description', 'is longer than 200 characters');
  return deps.work.run(async (uow) => {
    // counted under the application's row, claimed (written) first: parallel definitions never pass the limit
    await deps.db.applications.claim(command.app.id, deps.clock.now(), uow.tx);
    const apis = await deps.db.apis.list(command.app.id, uow.tx);
    const permissions = permissionsOf(command.permissions, apis);
    const defined = await deps.db.roles.list(command.app.id, uow.tx);
    if (!defined.some((r) => r.name === command.name) && defined.length >= MAX_APP_ROLES) {
      throw invalidField('name', `is one role too many: an application defines at most ${MAX_APP_ROLES}; remove one first`);
    }
    const now = deps.clock.now();
    const role = await deps.db.roles.define(command.app.id, { name: command.name, description, permissions }, now, uow.tx);
    const view = roleView(role, apis);
    uow.record(event('role.defined', command.app.id, now, command.acting, { kind: 'app_role', id: role.name }, { role: role.name, permissions: view.permissions }));
    return view;
  });
}

/** The application's roles by name. */
export async function listAppRoles(deps: Pick<Services, 'db'>, command: { app: Application }): Promise<AppRoleView[]> {
  const [roles, apis] = await Promise.all([deps.db.roles.list(command.app.id), deps.db.apis.list(command.app.id)]);
  return roles.map((r) => roleView(r, apis));
}

/** Removes a role: the accounts holding it lose it. Answers how many held it. */
export async function removeAppRole(deps: Deps, command: { app: Application; acting: Acting; name: string }): Promise<number> {
  return deps.work.run(async (uow) => {
    const held = await deps.db.roles.remove(command.app.id, command.name, uow.tx);
    if (held === undefined) throw unknownRole('name', command.name);
    uow.record(event('role.removed', command.app.id, deps.clock.now(), command.acting, { kind: 'app_role', id: command.name }, { role: command.name, held }));
    return held;
  });
}

/**
 * Gives an account roles (`add`) or takes them (`take`), in one unit of work with its event
 * (account.roles_changed, naming what changed); answers the roles it holds after.
 */
export async function changeAccountRoles(
  deps: Deps, command: { app: Application; acting: Acting; entityId: number; add?: readonly string[]; take?: readonly string[] },
): Promise<AppRoleView[]> {
  const names = [...new Set([...(command.add ?? []), ...(command.take ?? [])])];
  if (names.length === 0) throw invalidField('roles', 'names no role');
  return deps.work.run(async (uow) => {
    // the account's row locked: its roles change one call at a time, and the limit holds under parallel calls
    const record = await deps.db.records.findForUpdate(command.app.id, command.entityId, uow.tx);
    if (!record) throw new Refusal('gone', 'the account is gone');
    // and claimed: on a Galera cluster the lock holds on one node only (docs/scaling.md)
    await deps.db.records.claim(command.entityId, deps.clock.now(), uow.tx);
    const roles: StoredAppRole[] = [];
    for (const name of names) {
      const role = await deps.db.roles.find(command.app.id, name, uow.tx);
      if (!role) throw unknownRole('roles', name);
      roles.push(role);
    }
    const toAdd = roles.filter((r) => command.add?.includes(r.name));
    const toTake = roles.filter((r) => command.take?.includes(r.name));
    const now = deps.clock.now();
    const added = await deps.db.roles.assign(command.app.id, command.entityId, toAdd, now, uow.tx);
    const removed = await deps.db.roles.unassign(command.app.id, command.entityId, toTake, uow.tx);
    const held = await deps.db.roles.listOf(command.app.id, command.entityId, uow.tx);
    if (held.length > MAX_ROLES_PER_ACCOUNT) throw invalidField('roles', `would give the account more than ${MAX_ROLES_PER_ACCOUNT} roles`);
    if (added.length > 0 || removed.length > 0) {
      uow.record(event('account.roles_changed', command.app.id, now, command.acting, { kind: 'record', id: String(command.entityId) }, { added, removed }));
    }
    const apis = await deps.db.apis.list(command.app.id, uow.tx);
    return held.map((r) => roleView(r, apis));
  });
}

/** The roles an account holds. */
export async function accountRoles(deps: Pick<Services, 'db'>, command: { app: Application; entityId: number }): Promise<AppRoleView[]> {
  const [held, apis] = await Promise.all([deps.db.roles.listOf(command.app.id, command.entityId), deps.db.apis.list(command.app.id)]);
  return held.map((r) => roleView(r, apis));
}

/** The scopes of an API (by public id) an account's roles give it, sorted: what `rbac` limits its token to and `permissions` lists. */
export async function apiPermissionsOf(deps: Pick<Services, 'db'>, command: { app: Application; entityId: number; apiId: string; scopes: readonly string[] }): Promise<string[]> {
  return permissionsGiven(await deps.db.roles.listOf(command.app.id, command.entityId), command.apiId, command.scopes);
}

/** The same for an account by its uuid (as the provider names it), in one read: none for an account that is gone. */
export async function apiPermissionsOfAccount(deps: Pick<Services, 'db'>, command: { app: Application; accountUuid: string; apiId: string; scopes: readonly string[] }): Promise<string[]> {
  return permissionsGiven(await deps.db.roles.listOfAccount(command.app.id, command.accountUuid), command.apiId, command.scopes);
}

/** The scopes of an API (by public id) that roles give, of those it defines now, sorted. */
const permissionsGiven = (held: StoredAppRole[], apiId: string, scopes: readonly string[]) =>
  [...new Set(held.flatMap((r) => r.permissions[apiId] ?? []))].filter((s) => scopes.includes(s)).sort();
