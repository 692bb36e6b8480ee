import { event, type Acting } from '../../domain/events';
import { domainOf, domainProblem, isOwner, joinableProblem, MAX_DOMAINS } from '../../domain/organizations';
import { invalidField, LimitReachedError, Refusal } from '../../domain/refusal';
import type { Application } from '../../domain/storage/applications';
import type { StoredDomain, StoredMember, StoredOrganization } from '../../domain/storage/organizations';
import type { Tx } from '../../domain/storage/transactions';
import type { UnitOfWork } from '../unit-of-work';
import { authorityIn, organizationOf, organizationSubject, type Authority, type DomainDeps, type OrgDeps } from './common';
import { join } from './members';

/**
 * The email domains an organization claims (docs/organizations.md#domains), and the accounts that
 * join by them. A claim is verified by the application (its backend or an operator says so) or by
 * a member: an owner whose own address at the domain is verified. Nobody else's say-so verifies
 * one. Whether accounts at a domain join is the application's decision alone, per domain: a claim
 * a member made or verified takes nobody in until the application makes it joinable, and a mail
 * provider anyone can have an address at is never joinable.
 */

function checkDomain(domain: string): string {
  const d = domain.trim().toLowerCase();
  const wrong = domainProblem(d);
  if (wrong) throw invalidField('domain', wrong);
  return d;
}

/** How `authority` verifies a claim of `domain`: as the application, as an owner with a verified address there, or not at all. */
async function verifierOf(deps: Pick<OrgDeps, 'db'>, app: Application, authority: Authority, domain: string, tx: Tx): Promise<'operator' | 'member' | null> {
  if (authority.kind === 'application') return 'operator';
  const record = await deps.db.records.find(app.id, { id: authority.member.entityId }, tx);
  return record?.email && record.emailVerified && domainOf(record.email) === domain ? 'member' : null;
}

const mustOwn = (authority: Authority) => {
  if (authority.kind === 'member' && !isOwner(authority.member.roles)) throw new Refusal('forbidden', 'only the organization\'s owners claim its domains');
};

/** A change of an organization's domains, by one of its owners or the application: the organization locked, and how `domain` would be verified by who acts. */
async function ownersChange(deps: Pick<OrgDeps, 'db'>, uow: UnitOfWork, command: { app: Application; acting: Acting; organizationId: string }, domain: string) {
  const organization = await organizationOf(deps, command.app, command.organizationId, uow.tx);
  const authority = await authorityIn(deps, organization, command.acting, uow.tx);
  mustOwn(authority);
  return { organization, authority, verifier: await verifierOf(deps, command.app, authority, domain, uow.tx) };
}

/** Only the application lets accounts join by a domain, and never by a mail provider's. */
function mayMakeJoinable(authority: Authority, domain: string): void {
  if (authority.kind !== 'application') {
    throw new Refusal('forbidden', 'only the application (its backend or an operator) lets accounts at a domain join an organization; ask it to');
  }
  const shared = joinableProblem(domain);
  if (shared) throw invalidField('domain', shared);
}

/**
 * Claims a domain: verified at once when the application claims it with `verified`, or an owner
 * whose verified address is at it. The application's verified claim is joinable too (unless
 * `joinable` is false, or the domain is a mail provider's); a member's never is.
 */
export async function addDomain(
  deps: DomainDeps, command: { app: Application; acting: Acting; organizationId: string; domain: string; verified?: boolean; joinable?: boolean },
): Promise<StoredDomain> {
  const domain = checkDomain(command.domain);
  return deps.work.run(async (uow) => {
    const { organization, authority, verifier } = await ownersChange(deps, uow, command, domain);
    if (command.joinable) mayMakeJoinable(authority, domain);
    const verifiedBy = authority.kind === 'application' ? (command.verified || command.joinable ? verifier : null) : verifier;
    const joinable = authority.kind === 'application' && verifiedBy !== null && command.joinable !== false && joinableProblem(domain) === undefined;
    const now = deps.clock.now();
    await deps.db.organizations.touch(organization.id, now, uow.tx);
    if ((await deps.db.organizations.listDomains(organization.id, uow.tx)).length >= MAX_DOMAINS) {
      throw invalidField('domain', `is one too many: an organization claims at most ${MAX_DOMAINS} domains; remove one first`);
    }
    if (!(await deps.db.organizations.insertDomain(organization, domain, verifiedBy, joinable, now, uow.tx))) throw invalidField('domain', 'is claimed by this organization already');
    uow.record(event('organization.domain_added', command.app.id, now, command.acting, organizationSubject(organization), {
      organization: organization.organizationId, domain, verified: verifiedBy !== null,
    }));
    if (joinable) uow.record(event('organization.domain_joinable', command.app.id, now, command.acting, organizationSubject(organization), { organization: organization.organizationId, domain, joinable }));
    return { domain, verifiedBy, verifiedAt: verifiedBy ? now : null, joinableAt: joinable ? now : null, createdAt: now };
  }).finally(() => deps.joinableDomains.forget(command.app.id));
}

/**
 * Verifies a claimed domain: the application (which makes it joinable too, unless it is a mail
 * provider's), or an owner whose own verified address is at it (joinable only once the application says so).
 */
export async function verifyDomain(deps: DomainDeps, command: { app: Application; acting: Acting; organizationId: string; domain: string }): Promise<void> {
  const domain = checkDomain(command.domain);
  await deps.work.run(async (uow) => {
    const { organization, verifier: by } = await ownersChange(deps, uow, command, domain);
    if (!by) throw invalidField('domain', 'is verified by a verified address of yours at it, or by the application');
    const now = deps.clock.now();
    if (!(await deps.db.organizations.verifyDomain(organization.id, domain, by, now, uow.tx))) throw invalidField('domain', 'is not an unverified claim of this organization');
    uow.record(event('organization.domain_verified', command.app.id, now, command.acting, organizationSubject(organization), { organization: organization.organizationId, domain, by }));
    if (by === 'operator' && joinableProblem(domain) === undefined) {
      await deps.db.organizations.setDomainJoinable(organization.id, domain, true, now, uow.tx);
      uow.record(event('organization.domain_joinable', command.app.id, now, command.acting, organizationSubject(organization), { organization: organization.organizationId, domain, joinable: true }));
    }
  }).finally(() => deps.joinableDomains.forget(command.app.id));
}

/**
 * The application lets accounts at a claimed domain join the organization (verifying the claim as
 * its own if it was not), or no longer: never a member, never a mail provider anyone can use.
 */
export async function setDomainJoinable(deps: DomainDeps, command: { app: Application; acting: Acting; organizationId: string; domain: string; joinable: boolean }): Promise<void> {
  const domain = checkDomain(command.domain);
  await deps.work.run(async (uow) => {
    const { organization, authority } = await ownersChange(deps, uow, command, domain);
    if (command.joinable) mayMakeJoinable(authority, domain);
    else if (authority.kind !== 'application') throw new Refusal('forbidden', 'only the application (its backend or an operator) decides who joins by a domain');
    const now = deps.clock.now();
    if (!(await deps.db.organizations.setDomainJoinable(organization.id, domain, command.joinable, now, uow.tx))) throw invalidField('domain', 'is not claimed by this organization');
    uow.record(event('organization.domain_joinable', command.app.id, now, command.acting, organizationSubject(organization), { organization: organization.organizationId, domain, joinable: command.joinable }));
  }).finally(() => deps.joinableDomains.forget(command.app.id));
}

export async function removeDomain(deps: DomainDeps, command: { app: Application; acting: Acting; organizationId: string; domain: string }): Promise<void> {
  const domain = checkDomain(command.domain);
  await deps.work.run(async (uow) => {
    const organization = await organizationOf(deps, command.app, command.organizationId, uow.tx);
    mustOwn(await authorityIn(deps, organization, command.acting, uow.tx));
    if (!(await deps.db.organizations.removeDomain(organization.id, domain, uow.tx))) throw invalidField('domain', 'is not claimed by this organization');
    uow.record(event('organization.domain_removed', command.app.id, deps.clock.now(), command.acting, organizationSubject(organization), { organization: organization.organizationId, domain }));
  }).finally(() => deps.joinableDomains.forget(command.app.id));
}

export async function listDomains(deps: Pick<OrgDeps, 'db'>, command: { app: Application; acting: Acting; organizationId: string }): Promise<StoredDomain[]> {
  const organization = await organizationOf(deps, command.app, command.organizationId);
  await authorityIn(deps, organization, command.acting);
  return deps.db.organizations.listDomains(organization.id);
}

/**
 * Just-in-time membership: the account, signed in with a verified address, joins every
 * organization that verified its address's domain and lets accounts join by it, with the
 * organization's default roles. An unverified address joins none. Answers the memberships made.
 */
export async function joinByDomain(
  deps: DomainDeps, command: { app: Application; acting: Acting; record: { id: number; email: string | null; emailVerified: Date | null } },
): Promise<{ organization: StoredOrganization; member: StoredMember }[]> {
  const { record } = command;
  // a mail provider anyone can use takes nobody in, whatever a claim made before this rule says
  if (!record.email || !record.emailVerified || joinableProblem(domainOf(record.email)) !== undefined) return [];
  if (!(await deps.joinableDomains.has(command.app.id, domainOf(record.email)))) return [];
  const joinable = await deps.db.organizations.listJoinableByDomain(command.app.id, domainOf(record.email));
  // (a departure is checked in each join's transaction)
  const joined: { organization: StoredOrganization; member: StoredMember }[] = [];
  const domain = domainOf(record.email);
  for (const candidate of joinable) {
    if (await deps.db.organizations.findMember(candidate.id, record.id)) continue;
    const member = await deps.work.run(async (uow) => {
      const organization = await deps.db.organizations.findByKey(candidate.id, uow.tx);
      if (!organization?.joinByDomain) return undefined;
      // as it is now: the claim still verified and joinable, and the account never left (or was removed)
      if (!(await deps.db.organizations.listDomains(organization.id, uow.tx)).some((d) => d.domain === domain && d.verifiedAt !== null && d.joinableAt !== null)) return undefined;
      if (await deps.db.organizations.findDeparture(organization.id, record.id, uow.tx)) return undefined;
      try {
        return await join(deps, uow, { app: command.app, acting: command.acting, organization, entityId: record.id, roles: organization.defaultRoles, by: 'domain' });
      } catch (e) {
        // a full organization is not joined; the sign-in goes on
        if (e instanceof LimitReachedError) return undefined;
        throw e;
      }
    });
    if (member) joined.push({ organization: candidate, member });
  }
  return joined;
}

/**
 * The domains the application itself verified for the organization, never a mail provider's: the
 * only addresses its identity provider (a connection) or its directory (SCIM) vouches for; an
 * owner's own verification by an address at a domain does not make that domain's people theirs.
 */
export async function vouchedDomains(deps: Pick<OrgDeps, 'db'>, organization: Pick<StoredOrganization, 'id'>, tx?: Tx): Promise<string[]> {
  return (await deps.db.organizations.listDomains(organization.id, tx)).filter((d) => d.verifiedBy === 'operator' && joinableProblem(d.domain) === undefined).map((d) => d.domain);
}
