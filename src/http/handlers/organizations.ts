import type { Acting } from '../../domain/events';
import { parseMetadata } from '../../domain/organizations';
import type { ListedMember, Membership, StoredDomain, StoredInvitation, StoredOrganization } from '../../domain/storage/organizations';
import { formatTimestamp } from '../../domain/timestamps';
import { errors } from '../../errors';
import { addDomain, listDomains, removeDomain, setDomainJoinable, verifyDomain } from '../../usecases/organizations/domains';
import { acceptInvitation, createInvitation, listInvitations, revokeInvitation, standingOf } from '../../usecases/organizations/invitations';
import { addMember, listMembers, organizationsOf, removeMember, setMemberRoles, switchOrganization } from '../../usecases/organizations/members';
import { createOrganization, deleteOrganization, getOrganization, listOrganizations, MAX_PAGE, updateOrganization, type OrganizationFields } from '../../usecases/organizations/organizations';
import { defineRole, listRoles, removeRole, type RoleView } from '../../usecases/organizations/roles';
import { asAccount, asClient } from '../../usecases/services';
import type { Handler, RequestContext } from '../context';
import { identifyRecord, namesRecord, recordKey } from '../record';
import { addConnection, listConnections, removeConnection, updateConnection, type ConnectionInput, type ConnectionView } from '../../usecases/organizations/connections';
import { configureScim, createScimToken, listScimTokens, revokeScimToken, scimSettings, type ScimTokenView } from '../../usecases/scim/tokens';
import { SCIM_PATH } from '../../domain/scim/schemas';

/**
 * Organizations for the application's backend (owner or direct_access clients) and for their
 * members (an access token): docs/organizations.md#the-api. Each call one use case; the use case
 * decides what a member may do.
 */

/** Who calls: the client, or the account of the access token. */
function actingOf(ctx: RequestContext): Acting {
  const p = ctx.principal;
  if (p.kind === 'client') return asClient(ctx, p.client);
  if (p.kind === 'entity' && p.token.entityId !== null) return asAccount(ctx, p.token.entityId);
  throw errors.permissionError('organizations need owner or direct_access client credentials, or the access token of a member');
}

/** The account of the access token, where only a person may act (accepting an invitation, switching). */
function signedInAccount(ctx: RequestContext): number {
  const p = ctx.principal;
  if (p.kind === 'entity' && p.token.entityId !== null) return p.token.entityId;
  throw errors.permissionError('this is done by the person: call it with their access token');
}

/**
 * The account a call names (as /entity does), or the access token's own when it names none. A
 * member's token naming no account of the application gets the id of none (the use case then
 * answers as for any account that is not a member): whether an address has an account is not
 * told to every member.
 */
async function namedAccount(ctx: RequestContext): Promise<number> {
  const p = ctx.principal;
  if (p.kind !== 'entity' || p.token.entityId === null) return (await identifyRecord(ctx)).id;
  if (!namesRecord(ctx)) return p.token.entityId;
  const { key } = recordKey(ctx);
  return (await ctx.services.db.records.find(ctx.app.id, key))?.id ?? 0;
}

/** A list of names: a JSON list (`["admin","member"]`), or names separated by commas or spaces. */
function names(ctx: RequestContext, param: string, required: boolean): string[] | undefined {
  const raw = required ? ctx.params.require(param) : ctx.params.get(param);
  if (raw === undefined) return undefined;
  const text = raw.trim();
  if (text.startsWith('[')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw errors.invalidArgument(param, 'is not a JSON list: send ["admin","member"] or admin,member');
    }
    if (!Array.isArray(parsed) || parsed.some((t) => typeof t !== 'string')) throw errors.invalidArgument(param, 'must be a list of names, such as ["admin","member"]');
    return parsed as string[];
  }
  return text.split(/[\s,]+/).filter(Boolean);
}

function bool(ctx: RequestContext, param: string): boolean | undefined {
  const v = ctx.params.get(param);
  if (v === undefined) return undefined;
  if (v === 'true') return true;
  if (v === 'false') return false;
  throw errors.invalidArgument(param, 'must be true or false');
}

/** One page's place: `max_results` (1 to 200, 50 by default) after `cursor` (a previous page's next_cursor). */
function page(ctx: RequestContext): { after: number | null; limit: number } {
  const max = ctx.params.get('max_results');
  if (max !== undefined && (!/^\d{1,3}$/.test(max) || Number(max) < 1 || Number(max) > MAX_PAGE)) throw errors.invalidArgument('max_results', `must be a whole number from 1 to ${MAX_PAGE}`);
  const cursor = ctx.params.get('cursor');
  if (cursor !== undefined && !/^[1-9]\d{0,17}$/.test(cursor)) throw errors.invalidArgument('cursor', 'must be the next_cursor of a previous page, as it was given');
  return { after: cursor === undefined ? null : Number(cursor), limit: max === undefined ? 50 : Number(max) };
}
const paged = <T>(p: { items: T[]; next: number | null }, shown: (item: T) => unknown) => ({ results: p.items.map(shown), next_cursor: p.next === null ? null : String(p.next) });

/** The fields of create and update, as sent. */
function fields(ctx: RequestContext): OrganizationFields {
  const metadata = ctx.params.get('metadata');
  let parsed: Record<string, unknown> | undefined;
  if (metadata !== undefined) {
    const outcome = parseMetadata(metadata);
    if ('problem' in outcome) throw errors.invalidArgument('metadata', outcome.problem);
    parsed = outcome.metadata;
  }
  const logo = ctx.params.get('logo_url');
  return {
    name: ctx.params.get('name'), slug: ctx.params.get('slug'),
    ...(logo !== undefined && { logoUrl: logo === '' ? null : logo }), ...(parsed !== undefined && { metadata: parsed }),
    joinByDomain: bool(ctx, 'join_by_domain'), defaultRoles: names(ctx, 'default_roles', false),
  };
}

/** An organization on the wire (the CLI prints it so too). */
export const shownOrganization = (o: StoredOrganization) => ({
  id: o.organizationId, name: o.name, slug: o.slug, logo_url: o.logoUrl, metadata: o.metadata, join_by_domain: o.joinByDomain, default_roles: o.defaultRoles,
  created: formatTimestamp(o.createdAt), updated: formatTimestamp(o.updatedAt),
});
export const shownMember = (m: ListedMember) => ({
  user_id: m.uuid, email: m.email, username: m.username, roles: m.roles, joined_by: m.joinedBy, joined: formatTimestamp(m.createdAt),
});
export const shownMembership = (m: Membership, active: boolean, forMember = false) => {
  const { metadata, join_by_domain: joinByDomain, default_roles: defaultRoles, ...own } = shownOrganization(m.organization);
  return {
    ...own, ...(!forMember && { metadata, join_by_domain: joinByDomain, default_roles: defaultRoles }),
    roles: m.member.roles, joined: formatTimestamp(m.member.createdAt), active,
  };
};
export const shownInvitation = (i: StoredInvitation, now: Date) => ({
  id: i.invitationId, email: i.email, roles: i.roles, state: standingOf(i, now), inviter: i.inviter, locale: i.locale,
  expires: formatTimestamp(i.expiresAt), created: formatTimestamp(i.createdAt), finished: i.finishedAt ? formatTimestamp(i.finishedAt) : null,
});
export const shownRole = (r: RoleView) => ({ name: r.name, description: r.description, permissions: r.permissions, built_in: r.builtIn });
export const shownDomain = (d: StoredDomain) => ({ domain: d.domain, verified: d.verifiedAt !== null, verified_by: d.verifiedBy, verified_at: d.verifiedAt ? formatTimestamp(d.verifiedAt) : null, joinable: d.joinableAt !== null });

const organizationId = (ctx: RequestContext) => ctx.params.require('organization_id');

export const create: Handler = async (ctx) => {
  const given = fields(ctx);
  const ownerUuid = ctx.params.get('owner_uuid');
  let owner: number | undefined;
  if (ownerUuid !== undefined) {
    const record = /^[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}$/i.test(ownerUuid) ? await ctx.services.db.records.find(ctx.app.id, { uuid: ownerUuid }) : undefined;
    if (!record) throw errors.invalidArgument('owner_uuid', 'is not the uuid of an account of this application');
    owner = record.id;
  }
  const made = await createOrganization(ctx.services, {
    app: ctx.app, acting: actingOf(ctx), fields: { ...given, name: ctx.params.require('name'), slug: ctx.params.require('slug') }, owner,
  });
  return { id: made.organizationId, result: shownOrganization(made) };
};

export const get: Handler = async (ctx) => {
  const slug = ctx.params.get('slug');
  const id = ctx.params.get('organization_id');
  if ((slug === undefined) === (id === undefined)) throw errors.invalidArgument(id === undefined ? 'organization_id' : 'slug', 'name the organization by organization_id or by slug: exactly one');
  return { result: shownOrganization(await getOrganization(ctx.services, slug !== undefined ? { app: ctx.app, slug } : { app: ctx.app, organizationId: id! })) };
};

export const list: Handler = async (ctx) => paged(await listOrganizations(ctx.services, { app: ctx.app, ...page(ctx) }), shownOrganization);

export const update: Handler = async (ctx) => ({
  result: shownOrganization(await updateOrganization(ctx.services, { app: ctx.app, acting: actingOf(ctx), organizationId: organizationId(ctx), fields: fields(ctx) })),
});

export const remove: Handler = async (ctx) => {
  await deleteOrganization(ctx.services, { app: ctx.app, acting: actingOf(ctx), organizationId: organizationId(ctx) });
  return {};
};

export const membersAdd: Handler = async (ctx) => {
  const [id, roles] = [organizationId(ctx), names(ctx, 'roles', true)!];
  const entityId = (await identifyRecord(ctx)).id;
  const member = await addMember(ctx.services, { app: ctx.app, acting: actingOf(ctx), organizationId: id, entityId, roles });
  return { roles: member.roles };
};

export const membersList: Handler = async (ctx) => paged(await listMembers(ctx.services, { app: ctx.app, acting: actingOf(ctx), organizationId: organizationId(ctx), ...page(ctx) }), shownMember);

export const membersSetRoles: Handler = async (ctx) => {
  const [id, roles] = [organizationId(ctx), names(ctx, 'roles', true)!];
  const entityId = await namedAccount(ctx);
  const member = await setMemberRoles(ctx.services, { app: ctx.app, acting: actingOf(ctx), organizationId: id, entityId, roles });
  return { roles: member.roles };
};

export const membersRemove: Handler = async (ctx) => {
  const id = organizationId(ctx);
  await removeMember(ctx.services, { app: ctx.app, acting: actingOf(ctx), organizationId: id, entityId: await namedAccount(ctx) });
  return {};
};

/**
 * An account's organizations, the active one first: the one a backend names, or the access token's
 * own (a member sees its own only, and not what the application keeps of each: metadata, how
 * accounts join it).
 */
export const of: Handler = async (ctx) => {
  const entityId = await namedAccount(ctx);
  const p = ctx.principal;
  const member = p.kind === 'entity';
  if (member && entityId !== p.token.entityId) throw errors.permissionError('an access token reads its own account\'s organizations only');
  const memberships = await organizationsOf(ctx.services, { app: ctx.app, entityId });
  return { results: memberships.map((m, i) => shownMembership(m, i === 0 && m.member.activeAt !== null, member)) };
};

export const switchTo: Handler = async (ctx) => {
  const id = organizationId(ctx);
  const entityId = signedInAccount(ctx);
  await switchOrganization(ctx.services, { app: ctx.app, acting: asAccount(ctx, entityId) as Acting & { actor: { kind: 'account' } }, organizationId: id });
  return {};
};

const LOCALE = /^[a-z]{2,3}(-[A-Z][A-Za-z]{1,3})?$/;

export const invitationsCreate: Handler = async (ctx) => {
  const locale = ctx.params.get('locale') ?? 'en-US';
  if (!LOCALE.test(locale)) throw errors.invalidArgument('locale', 'must be a language tag, such as en-US or fr-FR: the language of the email and of the page that accepts');
  const invitation = await createInvitation(ctx.services, {
    app: ctx.app, acting: actingOf(ctx), organizationId: organizationId(ctx), email: ctx.params.require('email'), roles: names(ctx, 'roles', false) ?? ['member'], locale,
  });
  return { id: invitation.invitationId, result: shownInvitation(invitation, ctx.services.clock.now()) };
};

export const invitationsList: Handler = async (ctx) => {
  const now = ctx.services.clock.now();
  return paged(await listInvitations(ctx.services, { app: ctx.app, acting: actingOf(ctx), organizationId: organizationId(ctx), ...page(ctx) }), (i) => shownInvitation(i, now));
};

export const invitationsRevoke: Handler = async (ctx) => {
  await revokeInvitation(ctx.services, { app: ctx.app, acting: actingOf(ctx), organizationId: organizationId(ctx), invitationId: ctx.params.require('invitation_id') });
  return {};
};

/** The person accepts an invitation with the secret of its link (`token`). */
export const invitationsAccept: Handler = async (ctx) => {
  const secret = ctx.params.require('token');
  const entityId = signedInAccount(ctx);
  const { organization, member } = await acceptInvitation(ctx.services, { app: ctx.app, acting: asAccount(ctx, entityId), entityId, secret });
  return { organization_id: organization.organizationId, roles: member.roles };
};

export const rolesDefine: Handler = async (ctx) => ({
  result: shownRole(await defineRole(ctx.services, {
    app: ctx.app, acting: actingOf(ctx), name: ctx.params.require('name'), description: ctx.params.get('description'), permissions: names(ctx, 'permissions', false) ?? [],
  })),
});

export const rolesList: Handler = async (ctx) => ({ results: (await listRoles(ctx.services, { app: ctx.app })).map(shownRole) });

export const rolesRemove: Handler = async (ctx) => ({ members: await removeRole(ctx.services, { app: ctx.app, acting: actingOf(ctx), name: ctx.params.require('name') }) });

export const domainsAdd: Handler = async (ctx) => ({
  result: shownDomain(await addDomain(ctx.services, {
    app: ctx.app, acting: actingOf(ctx), organizationId: organizationId(ctx), domain: ctx.params.require('domain'), verified: bool(ctx, 'verified'), joinable: bool(ctx, 'joinable'),
  })),
});

export const domainsJoinable: Handler = async (ctx) => {
  const [id, domain] = [organizationId(ctx), ctx.params.require('domain')];
  const joinable = bool(ctx, 'joinable');
  if (joinable === undefined) throw errors.missingArgument('joinable');
  await setDomainJoinable(ctx.services, { app: ctx.app, acting: actingOf(ctx), organizationId: id, domain, joinable });
  return {};
};

export const domainsVerify: Handler = async (ctx) => {
  await verifyDomain(ctx.services, { app: ctx.app, acting: actingOf(ctx), organizationId: organizationId(ctx), domain: ctx.params.require('domain') });
  return {};
};

export const domainsRemove: Handler = async (ctx) => {
  await removeDomain(ctx.services, { app: ctx.app, acting: actingOf(ctx), organizationId: organizationId(ctx), domain: ctx.params.require('domain') });
  return {};
};

export const domainsList: Handler = async (ctx) => ({
  results: (await listDomains(ctx.services, { app: ctx.app, acting: actingOf(ctx), organizationId: organizationId(ctx) })).map(shownDomain),
});

/** A connection on the wire (docs/organizations.md#connections): never its client secret. */
export const shownConnection = (c: ConnectionView) => ({
  id: c.id, organization_id: c.organizationId, type: c.type, name: c.name, required: c.required, start_url: c.startUrl,
  ...(c.type === 'saml'
    ? { metadata_url: c.metadataUrl, acs_url: c.acsUrl, idp_entity_id: c.idpEntityId, idp_initiated: c.idpInitiated }
    : { redirect_uri: c.redirectUri, issuer: c.issuer, client_id: c.clientId }),
  attributes: c.attributes ?? null, groups: c.groups ?? null, created: formatTimestamp(c.createdAt), updated: formatTimestamp(c.updatedAt),
});

/** What a connection's add or update says (each optional here; the use case says what a type needs). */
const connectionInput = (ctx: RequestContext): ConnectionInput => {
  const pick = (param: string) => ctx.params.get(param);
  const input: ConnectionInput = {
    type: pick('type'), name: pick('name'), metadata: pick('metadata'), metadataUrl: pick('metadata_url'), issuer: pick('issuer'), clientId: pick('client_id'),
    clientSecret: pick('client_secret'), attributes: pick('attributes'), groups: pick('groups'), required: bool(ctx, 'required'), idpInitiated: bool(ctx, 'idp_initiated'),
  };
  return Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)) as ConnectionInput;
};

export const connectionsAdd: Handler = async (ctx) => {
  const added = await addConnection(ctx.services, { app: ctx.app, acting: actingOf(ctx), organizationId: organizationId(ctx), ...connectionInput(ctx), type: ctx.params.require('type') });
  const shown = shownConnection(added);
  return { id: added.id, start_url: added.startUrl, ...(added.type === 'saml' ? { metadata_url: added.metadataUrl } : { redirect_uri: added.redirectUri }), result: shown };
};

export const connectionsList: Handler = async (ctx) => ({
  results: (await listConnections(ctx.services, { app: ctx.app, acting: actingOf(ctx), organizationId: organizationId(ctx) })).map(shownConnection),
});

export const connectionsUpdate: Handler = async (ctx) => ({
  result: shownConnection(await updateConnection(ctx.services, {
    app: ctx.app, acting: actingOf(ctx), organizationId: organizationId(ctx), connectionId: ctx.params.require('connection_id'), ...connectionInput(ctx),
  })),
});

export const connectionsRemove: Handler = async (ctx) => {
  await removeConnection(ctx.services, { app: ctx.app, acting: actingOf(ctx), organizationId: organizationId(ctx), connectionId: ctx.params.require('connection_id') });
  return {};
};

// docs/scim.md#tokens: an organization's SCIM tokens and settings

const shownScimToken = (t: ScimTokenView) => ({
  id: t.id, organization_id: t.organizationId, description: t.description, created_by: t.createdBy, created: formatTimestamp(t.createdAt),
  last_used: t.lastUsedAt ? formatTimestamp(t.lastUsedAt) : null, revoked: t.revokedAt ? formatTimestamp(t.revokedAt) : null,
});

/** The SCIM service's address a directory is given (the application's). */
const scimUrl = (ctx: RequestContext) => `${ctx.services.baseUrls.of(ctx.app.name)}${SCIM_PATH}`;

export const scimTokensCreate: Handler = async (ctx) => {
  const made = await createScimToken(ctx.services, { app: ctx.app, acting: actingOf(ctx), organizationId: organizationId(ctx), description: ctx.params.get('description') });
  return { token: made.token, scim_url: scimUrl(ctx), result: shownScimToken(made.view) };
};

export const scimTokensList: Handler = async (ctx) => ({
  scim_url: scimUrl(ctx),
  results: (await listScimTokens(ctx.services, { app: ctx.app, acting: actingOf(ctx), organizationId: organizationId(ctx) })).map(shownScimToken),
});

export const scimTokensRevoke: Handler = async (ctx) => {
  await revokeScimToken(ctx.services, { app: ctx.app, acting: actingOf(ctx), organizationId: organizationId(ctx), tokenId: ctx.params.require('token_id') });
  return {};
};

export const scimConfigure: Handler = async (ctx) => {
  const view = await configureScim(ctx.services, { app: ctx.app, acting: actingOf(ctx), organizationId: organizationId(ctx), groupRoles: ctx.params.require('group_roles') });
  return { organization_id: view.organizationId, group_roles: view.groupRoles };
};

export const scimSettingsGet: Handler = async (ctx) => {
  const view = await scimSettings(ctx.services, { app: ctx.app, acting: actingOf(ctx), organizationId: organizationId(ctx) });
  return { organization_id: view.organizationId, scim_url: scimUrl(ctx), group_roles: view.groupRoles };
};
