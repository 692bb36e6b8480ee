import { randomUUID } from 'node:crypto';
import { deleteRecord } from '../../domain/accounts';
import { BUDGET_KEYS } from '../../domain/budget-keys';
import { insertRecord } from '../records/versions';
import { isCommonPassword } from '../../domain/common-passwords';
import { event, recordSubject } from '../../domain/events';
import { domainOf, isOwner } from '../../domain/organizations';
import { passwordMinimum } from '../../domain/password-minimum';
import { LimitReachedError } from '../../domain/refusal';
import { registrationOpen } from '../../domain/registration';
import { FilterSyntaxError, isObject, keyOf, matches, parseFilter, requiredTerms, type Filter } from '../../domain/scim/filter';
import { applyPatch, ScimPatchError } from '../../domain/scim/patch';
import { MAX_PAGE_SIZE, readResource, SCHEMA, ScimValueError } from '../../domain/scim/schemas';
import type { StoredOrganization } from '../../domain/storage/organizations';
import { DuplicateAttributeError, isDisabled, type UserRecord } from '../../domain/storage/records';
import { MAX_LOOKUP, scimKey, type ScimUserLookup, type StoredScimUser } from '../../domain/storage/scim';
import type { UnitOfWork } from '../../domain/ports';
import { USER_TYPE } from '../../domain/users';
import { vouchedDomains } from '../organizations/domains';
import { join } from '../organizations/members';
import { disableInWork } from '../operators/disable-user';
import { enableInWork } from '../operators/enable-user';
import { writeRecord } from '../records/write-record';
import { ifMatch, notFound, pageOf, projected, ScimError, userResource, type Projection, type ScimCall, type ScimDeps } from './common';
import { rolesFromGroups } from './roles';

/**
 * The users of an organization's directory (docs/scim.md#users): each an account of the
 * application and a member of the organization. Provisioning links the account with the address
 * when one proved it (never a second account), else makes one, verified: the organization's
 * directory vouches only for addresses at the domains the application verified for it.
 * Deactivating suspends the membership and, for an account of no other organization, disables it
 * (every session, token and OpenID grant ended in the same transaction); deleting removes the
 * membership, and the account as the application's `scim_deleted_accounts` says.
 */

/** What a write of a User uses: a new password is hashed, a moved address told from the application's address. */
type UserWrites = Pick<ScimDeps, 'db' | 'clock' | 'work' | 'versions' | 'passwords' | 'baseUrls'>;

/** The reason a disable by an organization's directory carries: only that directory undoes such a disable. */
export const scimDisableReason = (organization: Pick<StoredOrganization, 'organizationId'>): string =>
  `deprovisioned by the directory of organization ${organization.organizationId} (SCIM)`;

const EMAIL = /^[^\s@]{1,64}@[^\s@]{1,253}$/;

/** What a written User says, read against the schemas. */
interface Desired {
  data: Record<string, unknown>; userName: string; externalId: string | null; active: boolean; email: string;
  /** Every address its emails name, with the account's. */
  emails: string[];
  attributes: Record<string, string>; password?: string;
}

function valueError(e: unknown): never {
  if (e instanceof ScimValueError) throw new ScimError(400, e.message, 'invalidValue');
  if (e instanceof ScimPatchError) throw new ScimError(400, e.message, e.scimType);
  throw e;
}

/** The account's address among a User's: its primary address, else its work address, else its first, else its userName when that is an address. */
function addressOf(data: Record<string, unknown>): string | undefined {
  const emails = Array.isArray(data.emails) ? (data.emails as Record<string, unknown>[]) : [];
  const chosen = emails.find((e) => e.primary === true) ?? emails.find((e) => typeof e.type === 'string' && e.type.toLowerCase() === 'work') ?? emails[0];
  const candidate = typeof chosen?.value === 'string' ? chosen.value.trim() : typeof data.userName === 'string' ? data.userName.trim() : undefined;
  return candidate !== undefined && EMAIL.test(candidate) ? candidate : undefined;
}

/** A written User read; `active` when it says nothing of it (true for a new User; a PUT leaves it as it was). */
function desiredOf(raw: unknown, activeByDefault = true): Desired {
  if (!isObject(raw)) throw new ScimError(400, 'the body must be a User resource (a JSON object)', 'invalidSyntax');
  let read;
  try {
    read = readResource(raw, 'user');
  } catch (e) {
    valueError(e);
  }
  const { data, password } = read;
  const userName = typeof data.userName === 'string' ? data.userName.trim() : '';
  if (userName === '' || userName.length > 255) throw new ScimError(400, 'userName is required: 1 to 255 characters', 'invalidValue');
  data.userName = userName;
  const active = data.active === undefined ? activeByDefault : data.active === true;
  data.active = active;
  const email = addressOf(data);
  if (!email) throw new ScimError(400, 'the User has no email address: give emails (a primary or work address) or a userName that is an address', 'invalidValue');
  const name = isObject(data.name) ? data.name : {};
  const attributes: Record<string, string> = {};
  if (typeof name.givenName === 'string') attributes.givenName = name.givenName;
  if (typeof name.familyName === 'string') attributes.familyName = name.familyName;
  if (typeof data.displayName === 'string') attributes.displayName = data.displayName;
  const externalId = typeof data.externalId === 'string' ? data.externalId : null;
  if (externalId !== null && externalId.length > 255) throw new ScimError(400, 'externalId is longer than 255 characters', 'invalidValue');
  const emails = [email, ...(Array.isArray(data.emails) ? (data.emails as Record<string, unknown>[]).map((e) => e.value).filter((v): v is string => typeof v === 'string') : [])];
  return { data, userName, externalId, active, email, emails, attributes, ...(password !== undefined && { password }) };
}

async function mustVouch(deps: Pick<ScimDeps, 'db'>, organization: StoredOrganization, email: string, tx?: UnitOfWork['tx']): Promise<void> {
  const domains = await vouchedDomains(deps, organization, tx);
  if (!domains.includes(domainOf(email))) {
    throw new ScimError(400, `the organization's directory provisions addresses at the domains the application verified for it only (${domains.join(', ') || 'none yet: /organizations/domains/add with verified=true'}), and ${domainOf(email)} is not one of them`, 'invalidValue');
  }
}

/** A password a directory sets: the application's minimum length, never a common password. */
async function hashedPassword(deps: Pick<ScimDeps, 'passwords'>, call: ScimCall, password: string | undefined): Promise<string | undefined> {
  if (password === undefined) return undefined;
  const minimum = passwordMinimum(call.app.settings);
  if ([...password].length < minimum || password.length > 1024) throw new ScimError(400, `password must be ${minimum} to 1024 characters`, 'invalidValue');
  if (isCommonPassword(password)) throw new ScimError(400, 'password is one of the commonly used passwords: attackers try these first', 'invalidValue');
  return deps.passwords.hash(password);
}

const uniqueness = (detail: string) => new ScimError(409, detail, 'uniqueness');
const takenUserName = (userName: string) => uniqueness(`userName ${JSON.stringify(userName.slice(0, 100))} is taken in this organization (names compare regardless of case)`);

/** The user's resource with its groups. */
async function shown(deps: Pick<ScimDeps, 'db'>, call: ScimCall, user: StoredScimUser, tx?: UnitOfWork['tx']): Promise<Record<string, unknown>> {
  const groups = (await deps.db.scim.listGroupsOfUsers([user.id], tx)).get(user.id) ?? [];
  return userResource(call, user, groups);
}

async function lockedUser(deps: Pick<ScimDeps, 'db'>, call: ScimCall, id: string, uow: UnitOfWork): Promise<StoredScimUser> {
  const [user] = /^[0-9a-f-]{36}$/i.test(id) ? await deps.db.scim.findUser(call.organization.id, { resourceId: id.toLowerCase() }, uow.tx) : [];
  if (!user) throw notFound('User', id);
  return user;
}

/** Disables the account as /entity.disable does, with this directory's reason; false when it was disabled already. */
async function disableAccount(deps: Pick<ScimDeps, 'db' | 'clock'>, call: ScimCall, uow: UnitOfWork, entityId: number): Promise<boolean> {
  const now = deps.clock.now();
  const record = await deps.db.records.findForUpdate(call.app.id, entityId, uow.tx);
  if (!record || isDisabled(record, now)) return false;
  await disableInWork(deps, uow, { app: call.app, entityId, acting: call.acting }, { at: now, until: null, reason: scimDisableReason(call.organization) });
  return true;
}

/** Enables an account this organization's directory disabled (never one an operator, the application or another organization's directory disabled). */
const enableAccount = (deps: Pick<ScimDeps, 'db' | 'clock'>, call: ScimCall, uow: UnitOfWork, record: UserRecord): Promise<boolean> =>
  enableInWork(deps, uow, { app: call.app, entityId: record.id, acting: call.acting }, (disabled) => disabled?.reason === scimDisableReason(call.organization));

/** The account joins the organization, or the directory is told the organization's limit (a setting an operator raises, not a rate to wait out). */
async function joined(deps: Pick<ScimDeps, 'db' | 'clock'>, call: ScimCall, uow: UnitOfWork, entityId: number, roles: string[]): Promise<void> {
  try {
    await join(deps, uow, { app: call.app, acting: call.acting, organization: call.organization, entityId, roles, by: 'scim' });
  } catch (e) {
    if (e instanceof LimitReachedError) throw new ScimError(403, `the organization cannot take this person: too many ${e.what}; an operator raises the setting before more people are provisioned`);
    throw e;
  }
}

const lastOwner = () => new ScimError(400, 'this person is the organization\'s last owner, and an organization keeps an owner: give another member the owner role first', 'mutability');

/** The membership suspended (its roles kept), and the account disabled where it belongs to no other organization. */
async function suspend(deps: Pick<ScimDeps, 'db' | 'clock'>, call: ScimCall, uow: UnitOfWork, user: StoredScimUser): Promise<{ roles: string[]; account: 'kept' | 'disabled' }> {
  const { organization } = call;
  // the person's memberships claimed before one is removed: two directories removing one person
  // at once take them in one order (the second waits), and count each other's removal below (a
  // count in a transaction reads as committed now)
  await deps.db.organizations.claimMembershipsOf(user.entityId, deps.clock.now(), uow.tx);
  const member = await deps.db.organizations.findMember(organization.id, user.entityId, uow.tx);
  let roles = organization.defaultRoles;
  if (member) {
    if (isOwner(member.roles) && (await deps.db.organizations.countWithRole(organization.id, 'owner', uow.tx)) <= 1) throw lastOwner();
    roles = member.roles;
    await deps.db.organizations.removeMember(organization.id, user.entityId, deps.clock.now(), uow.tx);
    uow.record(event('organization.member_removed', call.app.id, deps.clock.now(), call.acting, recordSubject(user.entityId), { organization: organization.organizationId, by: 'deprovisioned' }));
  }
  if ((await deps.db.organizations.countMembershipsOf(user.entityId, uow.tx)) > 0) return { roles, account: 'kept' };
  await disableAccount(deps, call, uow, user.entityId);
  // (disabled now, or already)
  return { roles, account: 'disabled' };
}

/** The membership back (with the roles it had, or those its groups give), and the account enabled where the directory disabled it. */
async function resume(deps: Pick<ScimDeps, 'db' | 'clock'>, call: ScimCall, uow: UnitOfWork, user: StoredScimUser, record: UserRecord): Promise<'kept' | 'enabled'> {
  const roles = await rolesFromGroups(deps, call, [user], uow);
  const given = roles.get(user.id) ?? user.suspendedRoles ?? call.organization.defaultRoles;
  await joined(deps, call, uow, user.entityId, given);
  return (await enableAccount(deps, call, uow, record)) ? 'enabled' : 'kept';
}

/** POST /Users: provisions a person. */
export async function createUser(deps: Pick<ScimDeps, 'db' | 'clock' | 'work' | 'versions' | 'passwords'>, call: ScimCall, body: unknown): Promise<Record<string, unknown>> {
  const desired = desiredOf(body);
  await mustVouch(deps, call.organization, desired.email);
  const passwordHash = await hashedPassword(deps, call, desired.password);
  const { db, clock } = deps;
  const { app, organization } = call;
  return deps.work.run(async (uow) => {
    const now = clock.now();
    // one change of the organization's people at a time (its row), so uniqueness holds under parallel requests
    await db.organizations.touch(organization.id, now, uow.tx);
    if ((await db.scim.findUser(organization.id, { userName: desired.userName }, uow.tx)).length > 0) throw takenUserName(desired.userName);
    const holder = await db.records.find(app.id, { email: desired.email }, uow.tx);
    let record: UserRecord;
    let owned: boolean;
    if (holder) {
      if (await db.scim.findUserOfAccount(organization.id, holder.id, uow.tx)) throw uniqueness(`the account with the address ${desired.email} is provisioned already as another user of this organization`);
      // an account at that address is linked once it proved the address; never one a stranger registered unverified
      if (!holder.emailVerified) {
        throw uniqueness(`an account with the address ${desired.email} exists but never proved it: it must verify its address (or an operator verify it) before the directory can provision it`);
      }
      const locked = await db.records.findForUpdate(app.id, holder.id, uow.tx);
      if (!locked) throw uniqueness('the account with this address was deleted meanwhile: send the request again');
      record = locked;
      owned = false;
    } else {
      if (!registrationOpen(app)) throw new ScimError(403, 'this application takes no registrations, and no account has this address: an operator makes the account first, then the directory links it');
      try {
        record = (await insertRecord(deps, uow, {
          applicationId: app.id, typeName: USER_TYPE, uuid: randomUUID(), email: desired.email, username: null, passwordHash: passwordHash ?? null, emailVerified: now, attributes: desired.attributes,
        }, call.acting)).written.record;
      } catch (e) {
        if (e instanceof DuplicateAttributeError) throw uniqueness(`an account with the address ${desired.email} was made meanwhile: send the request again`);
        throw e;
      }
      uow.record(event('account.registered', app.id, now, call.acting, recordSubject(record.id), { method: 'scim' }));
      owned = true;
    }
    const user = await db.scim.insertUser({
      applicationId: app.id, organizationKey: organization.id, entityId: record.id, resourceId: record.uuid, userName: desired.userName, externalId: desired.externalId,
      emailKey: scimKey(desired.email), active: desired.active, data: desired.data, owned, suspendedRoles: null,
    }, desired.emails, now, uow.tx);
    if (!user) throw takenUserName(desired.userName);
    uow.record(event('scim.user_provisioned', app.id, now, call.acting, recordSubject(record.id), {
      organization: organization.organizationId, resource: user.resourceId, linked: !owned, active: desired.active,
    }));
    if (desired.active) {
      if (!(await db.organizations.findMember(organization.id, record.id, uow.tx))) {
        await joined(deps, call, uow, record.id, organization.defaultRoles);
      }
      await enableAccount(deps, call, uow, record);
    } else {
      const { roles } = await suspend(deps, call, uow, user);
      await db.scim.updateUser(user, { suspendedRoles: roles }, now, uow.tx);
    }
    return shown(deps, call, (await db.scim.findUser(organization.id, { resourceId: user.resourceId }, uow.tx))[0], uow.tx);
  });
}

/** GET /Users/{id}. */
export async function getUser(deps: Pick<ScimDeps, 'db'>, call: ScimCall, id: string): Promise<{ resource: Record<string, unknown>; version: number }> {
  const [user] = /^[0-9a-f-]{36}$/i.test(id) ? await deps.db.scim.findUser(call.organization.id, { resourceId: id.toLowerCase() }) : [];
  if (!user) throw notFound('User', id);
  return { resource: await shown(deps, call, user), version: user.version };
}

/** The names of the top-level attributes that differ between two resources' data. */
function changedAttributes(before: Record<string, unknown>, after: Record<string, unknown>): string[] {
  const names = new Set([...Object.keys(before), ...Object.keys(after)]);
  return [...names].filter((n) => JSON.stringify(before[n]) !== JSON.stringify(after[n])).sort();
}

/** A user written anew (PUT, or PATCH's result): the account and the membership follow. */
async function writeUser(
  deps: UserWrites, call: ScimCall, id: string, ifMatchHeader: string | undefined, make: (current: StoredScimUser) => Desired, passwordOf?: (d: Desired) => string | undefined,
): Promise<Record<string, unknown>> {
  const { db, clock } = deps;
  const { app, organization } = call;
  // a new password is hashed before the transaction (argon2 runs outside every row lock)
  let passwordHash: string | undefined;
  if (passwordOf) {
    const [current] = /^[0-9a-f-]{36}$/i.test(id) ? await db.scim.findUser(organization.id, { resourceId: id.toLowerCase() }) : [];
    if (current?.owned) passwordHash = await hashedPassword(deps, call, passwordOf(make(current)));
  }
  return deps.work.run(async (uow) => {
    const now = clock.now();
    await db.organizations.touch(organization.id, now, uow.tx);
    const user = await lockedUser(deps, call, id, uow);
    if (!ifMatch(ifMatchHeader, user.version)) throw new ScimError(412, 'the User changed since the version If-Match names: read it again');
    const desired = make(user);
    if (scimKey(desired.userName) !== scimKey(user.userName) && (await db.scim.findUser(organization.id, { userName: desired.userName }, uow.tx)).length > 0) throw takenUserName(desired.userName);
    const record = await db.records.findForUpdate(app.id, user.entityId, uow.tx);
    if (!record) throw notFound('User', id);
    const emailMoved = scimKey(desired.email) !== user.emailKey;
    if (emailMoved) await mustVouch(deps, organization, desired.email, uow.tx);
    // the account the directory made follows what it says; one it found by its address keeps its own profile
    if (user.owned) {
      const attributes = { ...record.attributes };
      for (const name of ['givenName', 'familyName', 'displayName']) {
        if (desired.attributes[name] !== undefined) attributes[name] = desired.attributes[name];
        else delete attributes[name];
      }
      const recordMoved = (record.email === null ? '' : scimKey(record.email)) !== scimKey(desired.email);
      const differs = recordMoved || JSON.stringify(attributes) !== JSON.stringify(record.attributes) || passwordHash !== undefined;
      if (differs) {
        try {
          await writeRecord(deps, uow, {
            app, entityId: record.id, role: 'client', channel: 'api', acting: call.acting,
            change: () => ({ change: { attributes, ...(recordMoved && { email: desired.email, emailVerified: now }) } }),
            ...(passwordHash !== undefined && { passwordHash }),
            notice: () => ({ app, baseUrl: deps.baseUrls.of(app.name), locale: 'en', clientId: null }),
          });
        } catch (e) {
          if (e instanceof DuplicateAttributeError) throw uniqueness(`another account has the address ${desired.email}`);
          throw e;
        }
      }
    }
    let suspendedRoles = user.suspendedRoles;
    if (user.active && !desired.active) {
      const { roles, account } = await suspend(deps, call, uow, user);
      suspendedRoles = roles;
      uow.record(event('scim.user_deactivated', app.id, now, call.acting, recordSubject(user.entityId), { organization: organization.organizationId, resource: user.resourceId, account }));
    } else if (!user.active && desired.active) {
      const account = await resume(deps, call, uow, user, (await db.records.findForUpdate(app.id, user.entityId, uow.tx))!);
      suspendedRoles = null;
      uow.record(event('scim.user_reactivated', app.id, now, call.acting, recordSubject(user.entityId), { organization: organization.organizationId, resource: user.resourceId, account }));
    }
    const changed = changedAttributes({ ...user.data, userName: user.userName, active: user.active }, { ...desired.data, userName: desired.userName, active: desired.active });
    // a write that changes nothing is no new version
    if (changed.length === 0 && passwordHash === undefined && !emailMoved) return shown(deps, call, user, uow.tx);
    const written = await db.scim.updateUser(user, {
      userName: desired.userName, externalId: desired.externalId, emailKey: scimKey(desired.email), active: desired.active, data: desired.data, suspendedRoles,
    }, now, uow.tx, desired.emails);
    if (!written) throw takenUserName(desired.userName);
    if (changed.length > 0 || passwordHash !== undefined) {
      uow.record(event('scim.user_updated', app.id, now, call.acting, recordSubject(user.entityId), {
        organization: organization.organizationId, resource: user.resourceId, attributes: [...changed, ...(passwordHash !== undefined ? ['password'] : [])],
      }));
    }
    return shown(deps, call, (await db.scim.findUser(organization.id, { resourceId: user.resourceId }, uow.tx))[0], uow.tx);
  });
}

/** PUT /Users/{id}: the resource replaced (what it does not say is gone; `id`, `meta` and `groups` are not the client's). */
export function replaceUser(deps: UserWrites, call: ScimCall, id: string, body: unknown, ifMatchHeader?: string): Promise<Record<string, unknown>> {
  // refused before any read when it is not a User at all
  desiredOf(body);
  return writeUser(deps, call, id, ifMatchHeader, (current) => desiredOf(body, current.active), (d) => d.password);
}

/** PATCH /Users/{id}: the operations applied to the resource as it is. */
export function patchUser(deps: UserWrites, call: ScimCall, id: string, body: unknown, ifMatchHeader?: string): Promise<Record<string, unknown>> {
  const patched = (user: StoredScimUser) => {
    let after: Record<string, unknown>;
    try {
      after = applyPatch({ ...user.data, userName: user.userName, active: user.active, ...(user.externalId !== null && { externalId: user.externalId }) }, body, 'user');
    } catch (e) {
      valueError(e);
    }
    return desiredOf(after);
  };
  // a patch that sets a password names it in its operations: read it from them
  return writeUser(deps, call, id, ifMatchHeader, patched, (d) => d.password);
}

/** DELETE /Users/{id}: the membership removed; the account kept (it has other organizations), disabled, or deleted (scim_deleted_accounts=delete, one the directory made). */
export async function deleteUser(deps: Pick<ScimDeps, 'db' | 'clock' | 'work' | 'versions'>, call: ScimCall, id: string, ifMatchHeader?: string): Promise<void> {
  const { db, clock } = deps;
  const { app, organization } = call;
  await deps.work.run(async (uow) => {
    const now = clock.now();
    await db.organizations.touch(organization.id, now, uow.tx);
    const user = await lockedUser(deps, call, id, uow);
    if (!ifMatch(ifMatchHeader, user.version)) throw new ScimError(412, 'the User changed since the version If-Match names: read it again');
    // (claimed first, as a suspension does)
    await db.organizations.claimMembershipsOf(user.entityId, now, uow.tx);
    const member = await db.organizations.findMember(organization.id, user.entityId, uow.tx);
    if (member && isOwner(member.roles) && (await db.organizations.countWithRole(organization.id, 'owner', uow.tx)) <= 1) throw lastOwner();
    if (member) {
      await db.organizations.removeMember(organization.id, user.entityId, now, uow.tx);
      uow.record(event('organization.member_removed', app.id, now, call.acting, recordSubject(user.entityId), { organization: organization.organizationId, by: 'deprovisioned' }));
    }
    // the groups it was in change too (their members)
    await db.scim.bumpGroups(((await db.scim.listGroupsOfUsers([user.id], uow.tx)).get(user.id) ?? []).map((g) => g.groupKey), now, uow.tx);
    await db.scim.removeUser(user, uow.tx);
    let account: 'kept' | 'disabled' | 'deleted' = 'kept';
    if ((await db.organizations.countMembershipsOf(user.entityId, uow.tx)) === 0) {
      if (user.owned && app.settings.scim_deleted_accounts === 'delete') {
        uow.record(event('scim.user_deprovisioned', app.id, now, call.acting, recordSubject(user.entityId), { organization: organization.organizationId, resource: user.resourceId, account: 'deleted' }));
        await deleteRecord(deps, uow, call.acting, app.id, user.entityId);
        return;
      }
      const record = await db.records.findForUpdate(app.id, user.entityId, uow.tx);
      if (record && (await disableAccount(deps, call, uow, user.entityId) || isDisabled(record, now))) account = 'disabled';
    }
    uow.record(event('scim.user_deprovisioned', app.id, now, call.acting, recordSubject(user.entityId), { organization: organization.organizationId, resource: user.resourceId, account }));
  });
}

/** The most users a filter no index answers reads (an organization past it filters on userName, externalId, emails or id). */
export const MAX_SCANNED = 100_000;

/** Lists no index answers, per token per minute: each reads the organization's resources whole. */
export const SCANS_PER_MINUTE = 30;

/** Takes one of the token's scans (429 past SCANS_PER_MINUTE a minute). */
export async function scanBudget(deps: Pick<ScimDeps, 'rateLimiter'>, call: ScimCall): Promise<void> {
  const who = call.acting.actor.kind === 'scim' ? call.acting.actor.tokenId : 'caller';
  await deps.rateLimiter.take([[BUDGET_KEYS.scimScan(call.app.id, who), { max: SCANS_PER_MINUTE, windowSeconds: 60 }]]);
}

/** The index a filter's required terms allow: an `eq` on userName, externalId, emails(.value) or id. */
function lookupOf(filter: Filter): ScimUserLookup | undefined {
  for (const term of requiredTerms(filter)) {
    if (term.op !== 'eq' || typeof term.value !== 'string' || (term.path.schema !== undefined && term.path.schema !== SCHEMA.user.toLowerCase())) continue;
    const { attr, sub } = term.path;
    if (attr === 'username' && sub === undefined) return { userName: term.value };
    if (attr === 'externalid' && sub === undefined) return { externalId: term.value };
    if (attr === 'id' && sub === undefined) return { resourceId: term.value.toLowerCase() };
    if (attr === 'emails' && (sub === undefined || sub === 'value')) return { email: term.value };
  }
  return undefined;
}

export function parsedFilter(raw: unknown): Filter | undefined {
  if (raw === undefined || raw === null || raw === '') return undefined;
  if (typeof raw !== 'string') throw new ScimError(400, 'filter must be a string', 'invalidFilter');
  try {
    return parseFilter(raw);
  } catch (e) {
    if (e instanceof FilterSyntaxError) throw new ScimError(400, `the filter is not SCIM's filter grammar: ${e.message}`, 'invalidFilter');
    throw e;
  }
}

/** A list of resources (RFC 7644 §3.4.2). */
export interface ListResult { totalResults: number; startIndex: number; itemsPerPage: number; Resources: Record<string, unknown>[] }

/** GET /Users and POST /Users/.search: filtered, one page, projected. */
export async function listUsers(
  deps: Pick<ScimDeps, 'db' | 'rateLimiter'>, call: ScimCall, query: { filter?: unknown; startIndex?: unknown; count?: unknown; projection: Projection },
): Promise<ListResult> {
  const filter = parsedFilter(query.filter);
  const page = pageOf(query.startIndex, query.count, MAX_PAGE_SIZE);
  const { db } = deps;
  const org = call.organization.id;
  const schemas = { core: SCHEMA.user, extensions: [SCHEMA.enterprise] };
  const render = async (users: StoredScimUser[]) => {
    const groups = await db.scim.listGroupsOfUsers(users.map((u) => u.id));
    return users.map((u) => userResource(call, u, groups.get(u.id) ?? []));
  };
  const evaluate = (resources: Record<string, unknown>[]) => {
    try {
      return filter ? resources.filter((r) => matches(filter, r, schemas)) : resources;
    } catch (e) {
      if (e instanceof FilterSyntaxError) throw new ScimError(400, e.message, 'invalidFilter');
      throw e;
    }
  };
  let matched: Record<string, unknown>[];
  let total: number;
  if (!filter) {
    total = await db.scim.countUsers(org);
    // pages by key from the start: startIndex counts resources in the order made
    const rows: StoredScimUser[] = [];
    let after = 0;
    let skip = page.start - 1;
    while (rows.length < page.count) {
      const batch = await db.scim.listUsers(org, after, Math.min(1000, skip + page.count - rows.length));
      if (batch.length === 0) break;
      after = batch[batch.length - 1].id;
      const taken = batch.slice(Math.min(skip, batch.length));
      skip = Math.max(0, skip - batch.length);
      rows.push(...taken.slice(0, page.count - rows.length));
    }
    return { totalResults: total, startIndex: page.start, itemsPerPage: rows.length, Resources: (await render(rows)).map((r) => projected(r, query.projection, SCHEMA.user)) };
  }
  const lookup = lookupOf(filter);
  const found = lookup && await db.scim.findUser(org, lookup);
  if (found && found.length < MAX_LOOKUP) {
    matched = evaluate(await render(found));
  } else {
    if ((await db.scim.countUsers(org)) > MAX_SCANNED) {
      throw new ScimError(400, `the organization has more than ${MAX_SCANNED} users: filter with an eq on userName, externalId, emails.value or id (with and)`, 'tooMany');
    }
    await scanBudget(deps, call);
    matched = [];
    for (let after = 0; ;) {
      const batch = await db.scim.listUsers(org, after, 500);
      if (batch.length === 0) break;
      after = batch[batch.length - 1].id;
      matched.push(...evaluate(await render(batch)));
    }
  }
  total = matched.length;
  const slice = matched.slice(page.start - 1, page.start - 1 + page.count);
  return { totalResults: total, startIndex: page.start, itemsPerPage: slice.length, Resources: slice.map((r) => projected(r, query.projection, SCHEMA.user)) };
}

/** The value of a header-like field of a body read regardless of case (a SearchRequest's). */
export const fieldOf = (body: Record<string, unknown>, name: string): unknown => body[keyOf(body, name) ?? name];
