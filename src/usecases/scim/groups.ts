import { randomUUID } from 'node:crypto';
import { event } from '../../domain/events';
import { FilterSyntaxError, isObject, matches, requiredTerms, type Filter } from '../../domain/scim/filter';
import { applyPatch, ScimPatchError } from '../../domain/scim/patch';
import { MAX_PAGE_SIZE, readResource, SCHEMA, ScimValueError } from '../../domain/scim/schemas';
import { MAX_LOOKUP, type ScimGroupLookup, type StoredScimGroup } from '../../domain/storage/scim';
import type { UnitOfWork } from '../../domain/ports';
import { organizationSubject } from '../organizations/common';
import { groupResource, ifMatch, notFound, pageOf, projected, ScimError, type Projection, type ScimCall, type ScimDeps } from './common';
import { applyGroupRoles } from './roles';
import { parsedFilter, scanBudget, type ListResult } from './users';

/**
 * The groups of an organization's directory (docs/scim.md#groups-and-roles), with their members
 * (the organization's provisioned users). A group gives its members the organization's roles
 * the organization maps it to; every change of its name or members sets its members' roles at once.
 */

/** The most members one group holds. */
export const MAX_GROUP_MEMBERS = 100_000;

/** The most groups a filter no index answers reads. */
export const MAX_SCANNED_GROUPS = 10_000;

interface DesiredGroup { displayName: string; externalId: string | null; members: string[] }

function desiredOf(raw: unknown): DesiredGroup {
  if (!isObject(raw)) throw new ScimError(400, 'the body must be a Group resource (a JSON object)', 'invalidSyntax');
  let data: Record<string, unknown>;
  try {
    data = readResource(raw, 'group').data;
  } catch (e) {
    if (e instanceof ScimValueError) throw new ScimError(400, e.message, 'invalidValue');
    throw e;
  }
  const displayName = typeof data.displayName === 'string' ? data.displayName.trim() : '';
  if (displayName === '' || displayName.length > 255) throw new ScimError(400, 'displayName is required: 1 to 255 characters', 'invalidValue');
  const externalId = typeof data.externalId === 'string' ? data.externalId : null;
  if (externalId !== null && externalId.length > 255) throw new ScimError(400, 'externalId is longer than 255 characters', 'invalidValue');
  const members = (Array.isArray(data.members) ? data.members as Record<string, unknown>[] : []).map((m) => (typeof m.value === 'string' ? m.value.toLowerCase() : ''));
  if (members.some((m) => m === '')) throw new ScimError(400, 'each of members needs a value: a User\'s id', 'invalidValue');
  if (members.length > MAX_GROUP_MEMBERS) throw new ScimError(400, `a group has at most ${MAX_GROUP_MEMBERS} members`, 'invalidValue');
  return { displayName, externalId, members: [...new Set(members)] };
}

const takenName = (name: string) => new ScimError(409, `displayName ${JSON.stringify(name.slice(0, 100))} is taken by another group of this organization (names compare regardless of case)`, 'uniqueness');

/** The users that member ids name (read in batches); 400 naming one that is not a user of the organization. */
async function usersNamed(deps: Pick<ScimDeps, 'db'>, call: ScimCall, ids: string[], uow: UnitOfWork) {
  const valid = ids.filter((id) => /^[0-9a-f-]{36}$/.test(id));
  const users = await deps.db.scim.findUsersByResourceIds(call.organization.id, valid, uow.tx);
  const found = new Set(users.map((u) => u.resourceId));
  const missing = ids.find((id) => !found.has(id));
  if (missing !== undefined) throw new ScimError(400, `members names ${JSON.stringify(missing.slice(0, 64))}, which is not a User of this organization (provision the user first)`, 'invalidValue');
  return users;
}

async function shown(deps: Pick<ScimDeps, 'db'>, call: ScimCall, group: StoredScimGroup, withMembers: boolean, tx?: UnitOfWork['tx']) {
  return groupResource(call, group, withMembers ? (await deps.db.scim.listMembersOf(group.id, MAX_GROUP_MEMBERS, tx)).map((m) => ({ resourceId: m.resourceId, userName: m.userName })) : undefined);
}

/** POST /Groups. */
export async function createGroup(deps: Pick<ScimDeps, 'db' | 'clock' | 'work'>, call: ScimCall, body: unknown): Promise<Record<string, unknown>> {
  const desired = desiredOf(body);
  const { db, clock } = deps;
  return deps.work.run(async (uow) => {
    const now = clock.now();
    await db.organizations.touch(call.organization.id, now, uow.tx);
    const users = await usersNamed(deps, call, desired.members, uow);
    const group = await db.scim.insertGroup({
      applicationId: call.app.id, organizationKey: call.organization.id, resourceId: randomUUID(), displayName: desired.displayName, externalId: desired.externalId,
    }, now, uow.tx);
    if (!group) throw takenName(desired.displayName);
    await db.scim.addMembers(group.id, users.map((u) => u.id), uow.tx);
    await applyGroupRoles(deps, call, uow, users);
    uow.record(event('scim.group_created', call.app.id, now, call.acting, organizationSubject(call.organization), {
      organization: call.organization.organizationId, group: group.resourceId, members: users.length,
    }));
    return shown(deps, call, group, true, uow.tx);
  });
}

/** GET /Groups/{id} (its members unless excluded). */
export async function getGroup(deps: Pick<ScimDeps, 'db'>, call: ScimCall, id: string, projection: Projection): Promise<{ resource: Record<string, unknown>; version: number }> {
  const [group] = /^[0-9a-f-]{36}$/i.test(id) ? await deps.db.scim.findGroup(call.organization.id, { resourceId: id.toLowerCase() }) : [];
  if (!group) throw notFound('Group', id);
  return { resource: projected(await shown(deps, call, group, wantsMembers(projection)), projection, SCHEMA.group), version: group.version };
}

/** Whether a projection shows members (a large group's are not read when excluded). */
const wantsMembers = (p: Projection) => !(p.excluded?.some((e) => e === 'members' || e.startsWith('members.'))) && !(p.attributes && !p.attributes.some((a) => a === 'members' || a.startsWith('members.')));

async function writeGroup(deps: Pick<ScimDeps, 'db' | 'clock' | 'work'>, call: ScimCall, id: string, ifMatchHeader: string | undefined, make: (current: DesiredGroup) => DesiredGroup): Promise<Record<string, unknown>> {
  const { db, clock } = deps;
  return deps.work.run(async (uow) => {
    const now = clock.now();
    await db.organizations.touch(call.organization.id, now, uow.tx);
    const [group] = /^[0-9a-f-]{36}$/i.test(id) ? await db.scim.findGroup(call.organization.id, { resourceId: id.toLowerCase() }, uow.tx) : [];
    if (!group) throw notFound('Group', id);
    if (!ifMatch(ifMatchHeader, group.version)) throw new ScimError(412, 'the Group changed since the version If-Match names: read it again');
    const before = await db.scim.listMembersOf(group.id, MAX_GROUP_MEMBERS, uow.tx);
    const desired = make({ displayName: group.displayName, externalId: group.externalId, members: before.map((m) => m.resourceId) });
    const renamed = desired.displayName !== group.displayName;
    if (renamed || desired.externalId !== group.externalId) {
      if (!(await db.scim.updateGroup(group, { displayName: desired.displayName, externalId: desired.externalId }, now, uow.tx))) throw takenName(desired.displayName);
    }
    const had = new Set(before.map((m) => m.resourceId));
    const wanted = new Set(desired.members);
    const added = await usersNamed(deps, call, desired.members.filter((m) => !had.has(m)), uow);
    const removedKeys = before.filter((m) => !wanted.has(m.resourceId)).map((m) => m.userKey);
    await db.scim.addMembers(group.id, added.map((u) => u.id), uow.tx);
    await db.scim.removeMembers(group.id, removedKeys, uow.tx);
    if (!renamed && desired.externalId === group.externalId && (added.length > 0 || removedKeys.length > 0)) await db.scim.bumpGroups([group.id], now, uow.tx);
    // whom it touched: its members when renamed (their groups' names and roles), else those added and removed
    const touchedKeys = renamed ? [...new Set([...before.map((m) => m.userKey), ...added.map((u) => u.id)])] : [...added.map((u) => u.id), ...removedKeys];
    await db.scim.bumpUsers(touchedKeys, now, uow.tx);
    await applyGroupRoles(deps, call, uow, await db.scim.findUsersByKeys(touchedKeys, uow.tx));
    if (renamed || added.length > 0 || removedKeys.length > 0 || desired.externalId !== group.externalId) {
      uow.record(event('scim.group_updated', call.app.id, now, call.acting, organizationSubject(call.organization), {
        organization: call.organization.organizationId, group: group.resourceId, added: added.length, removed: removedKeys.length, renamed,
      }));
    }
    const [after] = await db.scim.findGroup(call.organization.id, { resourceId: group.resourceId }, uow.tx);
    return shown(deps, call, after, true, uow.tx);
  });
}

/** PUT /Groups/{id}. */
export function replaceGroup(deps: Pick<ScimDeps, 'db' | 'clock' | 'work'>, call: ScimCall, id: string, body: unknown, ifMatchHeader?: string): Promise<Record<string, unknown>> {
  const desired = desiredOf(body);
  return writeGroup(deps, call, id, ifMatchHeader, () => desired);
}

/** PATCH /Groups/{id}. */
export function patchGroup(deps: Pick<ScimDeps, 'db' | 'clock' | 'work'>, call: ScimCall, id: string, body: unknown, ifMatchHeader?: string): Promise<Record<string, unknown>> {
  return writeGroup(deps, call, id, ifMatchHeader, (current) => {
    let after: Record<string, unknown>;
    try {
      after = applyPatch({
        displayName: current.displayName, ...(current.externalId !== null && { externalId: current.externalId }), members: current.members.map((value) => ({ value })),
      }, body, 'group');
    } catch (e) {
      if (e instanceof ScimPatchError) throw new ScimError(400, e.message, e.scimType);
      throw e;
    }
    return desiredOf(after);
  });
}

/** DELETE /Groups/{id}: its members lose the roles it gave. */
export async function deleteGroup(deps: Pick<ScimDeps, 'db' | 'clock' | 'work'>, call: ScimCall, id: string, ifMatchHeader?: string): Promise<void> {
  const { db, clock } = deps;
  await deps.work.run(async (uow) => {
    const now = clock.now();
    await db.organizations.touch(call.organization.id, now, uow.tx);
    const [group] = /^[0-9a-f-]{36}$/i.test(id) ? await db.scim.findGroup(call.organization.id, { resourceId: id.toLowerCase() }, uow.tx) : [];
    if (!group) throw notFound('Group', id);
    if (!ifMatch(ifMatchHeader, group.version)) throw new ScimError(412, 'the Group changed since the version If-Match names: read it again');
    const memberKeys = (await db.scim.listMembersOf(group.id, MAX_GROUP_MEMBERS, uow.tx)).map((m) => m.userKey);
    await db.scim.removeGroup(group, uow.tx);
    await db.scim.bumpUsers(memberKeys, now, uow.tx);
    await applyGroupRoles(deps, call, uow, await db.scim.findUsersByKeys(memberKeys, uow.tx));
    uow.record(event('scim.group_deleted', call.app.id, now, call.acting, organizationSubject(call.organization), { organization: call.organization.organizationId, group: group.resourceId }));
  });
}

function lookupOf(filter: Filter): ScimGroupLookup | undefined {
  for (const term of requiredTerms(filter)) {
    if (term.op !== 'eq' || typeof term.value !== 'string' || term.path.sub !== undefined) continue;
    if (term.path.attr === 'displayname') return { displayName: term.value };
    if (term.path.attr === 'externalid') return { externalId: term.value };
    if (term.path.attr === 'id') return { resourceId: term.value.toLowerCase() };
  }
  return undefined;
}

/** GET /Groups and POST /Groups/.search. */
export async function listGroups(
  deps: Pick<ScimDeps, 'db' | 'rateLimiter'>, call: ScimCall, query: { filter?: unknown; startIndex?: unknown; count?: unknown; projection: Projection },
): Promise<ListResult> {
  const filter = parsedFilter(query.filter);
  const page = pageOf(query.startIndex, query.count, MAX_PAGE_SIZE);
  const org = call.organization.id;
  // members are read when shown or filtered on
  const needsMembers = wantsMembers(query.projection) || (query.filter !== undefined && /members/i.test(String(query.filter)));
  const render = async (groups: StoredScimGroup[]) => Promise.all(groups.map((g) => shown(deps, call, g, needsMembers)));
  const schemas = { core: SCHEMA.group, extensions: [] };
  let matched: Record<string, unknown>[] = [];
  const lookup = filter && lookupOf(filter);
  const found = lookup && await deps.db.scim.findGroup(org, lookup);
  if (found && found.length < MAX_LOOKUP) matched = await render(found);
  else {
    if (filter) {
      if ((await deps.db.scim.countGroups(org)) > MAX_SCANNED_GROUPS) {
        throw new ScimError(400, `the organization has more than ${MAX_SCANNED_GROUPS} groups: filter with an eq on displayName, externalId or id`, 'tooMany');
      }
      await scanBudget(deps, call);
    }
    for (let after = 0; ;) {
      const batch = await deps.db.scim.listGroups(org, after, 200);
      if (batch.length === 0) break;
      after = batch[batch.length - 1].id;
      matched.push(...await render(batch));
      if (!filter && matched.length >= page.start - 1 + page.count) break;
    }
  }
  if (filter) {
    try {
      matched = matched.filter((r) => matches(filter, r, schemas));
    } catch (e) {
      if (e instanceof FilterSyntaxError) throw new ScimError(400, e.message, 'invalidFilter');
      throw e;
    }
  }
  const total = filter ? matched.length : await deps.db.scim.countGroups(org);
  const slice = matched.slice(page.start - 1, page.start - 1 + page.count);
  return { totalResults: total, startIndex: page.start, itemsPerPage: slice.length, Resources: slice.map((r) => projected(r, query.projection, SCHEMA.group)) };
}

