import { event, recordSubject, type Acting } from '../../domain/events';
import { limitOf, logoUrlProblem, nameProblem, newOrganizationId, slugProblem } from '../../domain/organizations';
import { invalidField, LimitReachedError, Refusal } from '../../domain/refusal';
import type { Application } from '../../domain/storage/applications';
import type { OrganizationChange, Page, StoredOrganization } from '../../domain/storage/organizations';
import { authorityIn, currentSettings, knownRolesOf, organizationOf, organizationSubject, unknownAccount, type DomainDeps, type OrgDeps } from './common';

/**
 * An application's organizations (docs/organizations.md): made, read, changed and deleted by its
 * backend or an operator; changed by their owners too. Each change one event.
 */

/** What makes or changes an organization (the metadata parsed and checked by the adapter: parseMetadata). */
export interface OrganizationFields {
  name?: string; slug?: string; logoUrl?: string | null; metadata?: Record<string, unknown>; joinByDomain?: boolean; defaultRoles?: readonly string[];
}

const slugTaken = (slug: string) => invalidField('slug', `${JSON.stringify(slug)} is taken by another organization of this application`);

function checkFields(fields: OrganizationFields): void {
  const nameWrong = fields.name === undefined ? undefined : nameProblem(fields.name);
  if (nameWrong) throw invalidField('name', nameWrong);
  const slugWrong = fields.slug === undefined ? undefined : slugProblem(fields.slug);
  if (slugWrong) throw invalidField('slug', slugWrong);
  const logoWrong = fields.logoUrl == null ? undefined : logoUrlProblem(fields.logoUrl);
  if (logoWrong) throw invalidField('logoUrl', logoWrong);
}

/** A new organization; `owner` (an account of the application) joins it as its owner. */
export async function createOrganization(
  deps: OrgDeps, command: { app: Application; acting: Acting; fields: OrganizationFields & { name: string; slug: string }; owner?: number },
): Promise<StoredOrganization> {
  const { app, acting, fields } = command;
  checkFields(fields);
  const defaultRoles = fields.defaultRoles === undefined ? ['member'] : await knownRolesOf(deps, app, fields.defaultRoles, 'defaultRoles');
  return deps.work.run(async (uow) => {
    const now = deps.clock.now();
    if (command.owner !== undefined) {
      if (!(await deps.db.records.findForUpdate(app.id, command.owner, uow.tx))) throw unknownAccount();
      await deps.db.records.claim(command.owner, now, uow.tx);
      if ((await deps.db.organizations.countMembershipsOf(command.owner, uow.tx)) >= limitOf(await currentSettings(deps, app, uow.tx), 'organization_max_per_account')) {
        throw new LimitReachedError(3600, 'organizations for this account (setting organization_max_per_account)');
      }
    }
    const organization = await deps.db.organizations.insert({
      applicationId: app.id, organizationId: newOrganizationId(), name: fields.name.trim(), slug: fields.slug, logoUrl: fields.logoUrl ?? null,
      metadata: fields.metadata ?? {}, joinByDomain: fields.joinByDomain === true, defaultRoles,
    }, now, uow.tx);
    if (!organization) throw slugTaken(fields.slug);
    uow.record(event('organization.created', app.id, now, acting, organizationSubject(organization), { organization: organization.organizationId, slug: organization.slug }));
    if (command.owner !== undefined) {
      await deps.db.organizations.insertMember(organization, command.owner, ['owner'], 'created', now, uow.tx);
      uow.record(event('organization.member_added', app.id, now, acting, recordSubject(command.owner), { organization: organization.organizationId, roles: ['owner'], by: 'created' }));
    }
    return organization;
  });
}

/** One organization, by its id (or its slug, `bySlug`). */
export async function getOrganization(deps: Pick<OrgDeps, 'db'>, command: { app: Application; organizationId: string } | { app: Application; slug: string }): Promise<StoredOrganization> {
  if ('slug' in command) {
    const found = await deps.db.organizations.findBySlug(command.app.id, command.slug);
    if (!found) throw invalidField('slug', 'is not the slug of an organization of this application');
    return found;
  }
  return organizationOf(deps, command.app, command.organizationId);
}

/** The most organizations, members or invitations one page holds. */
export const MAX_PAGE = 200;

export async function listOrganizations(deps: Pick<OrgDeps, 'db'>, command: { app: Application; after: number | null; limit: number }): Promise<Page<StoredOrganization>> {
  return deps.db.organizations.listPage(command.app.id, command.after, Math.min(MAX_PAGE, Math.max(1, command.limit)));
}

/** Changes an organization: its backend, an operator, or one of its owners. Answers it as it is now. */
export async function updateOrganization(
  deps: DomainDeps, command: { app: Application; acting: Acting; organizationId: string; fields: OrganizationFields },
): Promise<StoredOrganization> {
  const { app, acting, fields } = command;
  checkFields(fields);
  const defaultRoles = fields.defaultRoles === undefined ? undefined : await knownRolesOf(deps, app, fields.defaultRoles, 'defaultRoles');
  return deps.work.run(async (uow) => {
    const organization = await organizationOf(deps, app, command.organizationId, uow.tx);
    const authority = await authorityIn(deps, organization, acting, uow.tx);
    if (authority.kind === 'member') {
      if (!authority.member.roles.includes('owner')) throw new Refusal('forbidden', 'only the organization\'s owners change it');
      // what the application keeps of it, and whether accounts join it by their address's domain, are the application's
      const applications = (['metadata', 'joinByDomain', 'defaultRoles'] as const).filter((k) => fields[k] !== undefined);
      if (applications.length > 0) throw new Refusal('forbidden', 'metadata, join_by_domain and default_roles are set by the application\'s backend or an operator; owners change the name, slug and logo');
    }
    const change: OrganizationChange = {
      ...(fields.name !== undefined && { name: fields.name.trim() }), ...(fields.slug !== undefined && { slug: fields.slug }),
      ...(fields.logoUrl !== undefined && { logoUrl: fields.logoUrl }), ...(fields.metadata !== undefined && { metadata: fields.metadata }),
      ...(fields.joinByDomain !== undefined && { joinByDomain: fields.joinByDomain }), ...(defaultRoles !== undefined && { defaultRoles }),
    };
    const changed = (Object.keys(change) as (keyof OrganizationChange)[]).filter((k) => JSON.stringify(change[k]) !== JSON.stringify(organization[k]));
    if (changed.length === 0) return organization;
    const now = deps.clock.now();
    if (!(await deps.db.organizations.update(organization, change, now, uow.tx))) throw slugTaken(fields.slug ?? '');
    uow.record(event('organization.updated', app.id, now, acting, organizationSubject(organization), {
      organization: organization.organizationId, fields: changed.map((k) => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)),
    }));
    return { ...organization, ...change, updatedAt: now };
  }).finally(() => deps.joinableDomains.forget(app.id));
}

/** Deletes an organization with its memberships, invitations and domains: its backend or an operator. */
export async function deleteOrganization(deps: DomainDeps, command: { app: Application; acting: Acting; organizationId: string }): Promise<void> {
  await deps.work.run(async (uow) => {
    const organization = await organizationOf(deps, command.app, command.organizationId, uow.tx);
    if ((await authorityIn(deps, organization, command.acting, uow.tx)).kind === 'member') throw new Refusal('forbidden', 'an organization is deleted by the application\'s backend or an operator');
    const members = await deps.db.organizations.countMembers(organization.id, uow.tx);
    await deps.db.organizations.remove(organization, uow.tx);
    uow.record(event('organization.deleted', command.app.id, deps.clock.now(), command.acting, organizationSubject(organization), { organization: organization.organizationId, members }));
  }).finally(() => deps.joinableDomains.forget(command.app.id));
}

/** The application's organizations a text finds (its public id, the beginning of its slug, part of its name), or the first ones; at most `limit`. */
export async function searchOrganizations(deps: Pick<OrgDeps, 'db'>, command: { app: Application; text: string; limit: number }): Promise<StoredOrganization[]> {
  const text = command.text.trim().slice(0, 200);
  const limit = Math.min(MAX_PAGE, Math.max(1, command.limit));
  return text === '' ? (await deps.db.organizations.listPage(command.app.id, null, limit)).items : deps.db.organizations.search(command.app.id, text, limit);
}
