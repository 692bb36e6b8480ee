import { randomBytes } from 'node:crypto';
import { event, type Acting } from '../../domain/events';
import { isOwner } from '../../domain/organizations';
import { invalidField, Refusal } from '../../domain/refusal';
import { parseIdentityProviderMetadata } from '../../domain/saml/metadata';
import { SamlInputError } from '../../domain/saml/xml';
import type { Application } from '../../domain/storage/applications';
import type { ConnectionChange, ConnectionMappings, ConnectionSettings, StoredConnection } from '../../domain/storage/connections';
import type { StoredOrganization } from '../../domain/storage/organizations';
import { webhookUrlProblem } from '../../domain/webhooks';
import type { Services } from '../services';
import type { UnitOfWork } from '../unit-of-work';
import { authorityIn, knownRolesOf, organizationOf, organizationSubject, type OrgDeps } from './common';
import { forgetConnections } from '../sso/discovery';

/**
 * An organization's enterprise connections (docs/organizations.md#connections): its own identity
 * provider its people sign in through, SAML (Gatehouse the service provider) or OpenID (Gatehouse
 * the relying party). Made and changed by the application (an owner client, an operator) or an
 * owner of the organization; each change an event.
 */

/** At most this many connections per organization. */
export const MAX_CONNECTIONS = 5;

/** The paths of a connection on the application's address. */
export const connectionPaths = (publicId: string) => ({
  start: `/sso/${publicId}/start`, metadata: `/sso/${publicId}/metadata`, acs: `/sso/${publicId}/acs`, callback: `/sso/${publicId}/callback`,
});

/** A connection's addresses: where sign-in starts, and what its identity provider is given (SAML: the metadata and ACS; OpenID: the redirect URI). */
export function connectionUrls(deps: Pick<Services, 'baseUrls'>, app: Application, publicId: string) {
  const base = deps.baseUrls.of(app.name);
  const paths = connectionPaths(publicId);
  return { startUrl: `${base}${paths.start}`, entityId: `${base}${paths.metadata}`, metadataUrl: `${base}${paths.metadata}`, acsUrl: `${base}${paths.acs}`, redirectUri: `${base}${paths.callback}` };
}

/** A connection as its organization's owners see it: never a secret. */
export interface ConnectionView {
  id: string; organizationId: string; type: 'saml' | 'oidc'; name: string; required: boolean; startUrl: string;
  /** SAML: Gatehouse's metadata for the identity provider, and its ACS URL; the identity provider's entity id; whether unsolicited responses are taken. */
  metadataUrl?: string; acsUrl?: string; idpEntityId?: string; idpInitiated?: boolean;
  /** OpenID: the redirect URI to register at the provider, and its issuer and client id. */
  redirectUri?: string; issuer?: string; clientId?: string;
  attributes?: Record<string, string>; groups?: ConnectionMappings['groups'];
  createdAt: Date; updatedAt: Date;
}

export function connectionView(deps: Pick<Services, 'baseUrls'>, app: Application, organizationId: string, c: StoredConnection): ConnectionView {
  const urls = connectionUrls(deps, app, c.publicId);
  const s = c.settings;
  return {
    id: c.publicId, organizationId, type: s.type, name: c.name, required: c.required, startUrl: urls.startUrl,
    ...(s.type === 'saml' ? { metadataUrl: urls.metadataUrl, acsUrl: urls.acsUrl, idpEntityId: s.idp.entityId, idpInitiated: s.idpInitiated }
      : { redirectUri: urls.redirectUri, issuer: s.issuer, clientId: s.clientId }),
    ...(s.attributes && { attributes: s.attributes }), ...(s.groups && { groups: s.groups }),
    createdAt: c.createdAt, updatedAt: c.updatedAt,
  };
}

/** What a command may say of a connection. */
export interface ConnectionInput {
  type?: string;
  name?: string;
  /** SAML: the identity provider's metadata (XML), or the https URL it is fetched from once. */
  metadata?: string;
  metadataUrl?: string;
  /** Accept responses no request asked for (IdP-initiated). */
  idpInitiated?: boolean;
  /** OpenID: the provider's issuer, and the client registered there. */
  issuer?: string;
  clientId?: string;
  clientSecret?: string;
  required?: boolean;
  /** JSON: record attributes from SAML attributes or claims ({"givenName":"firstName"}). */
  attributes?: string;
  /** JSON: {"attribute":"groups","roles":{"Admins":["admin"]}}. */
  groups?: string;
}

type Deps = OrgDeps & Pick<Services, 'baseUrls' | 'box' | 'webhooks'>;

/** Whether who acts may name an address of the service's own network: the application (its backend, an operator), or anyone where WEBHOOKS_ALLOW_PRIVATE is on. */
const privateAllowed = (deps: Pick<Services, 'webhooks'>, acting: Acting) => acting.actor.kind !== 'account' || deps.webhooks.allowPrivate;

/** The most bytes of metadata fetched from a URL. */
const MAX_METADATA_BYTES = 1024 * 1024;

/**
 * Fetches an identity provider's metadata from an https URL, once, within 10 seconds and 1 MB,
 * never from a loopback or private address (WEBHOOKS_ALLOW_PRIVATE, as for webhooks): whatever
 * went wrong is one answer, so the URL probes nothing.
 */
async function fetchMetadata(url: string, allowPrivate: boolean): Promise<string> {
  if (!/^https:\/\//i.test(url)) throw invalidField('metadataUrl', 'must be https');
  const problem = webhookUrlProblem(url, allowPrivate);
  if (problem) throw invalidField('metadataUrl', 'must be an https address outside the service\'s own network (no loopback, private or link-local address)');
  const failed = () => invalidField('metadataUrl', 'could not be fetched (an https answer of at most 1 MB within 10 seconds, with no redirect); give the metadata itself with metadata instead');
  try {
    const res = await fetch(url, { redirect: 'error', signal: AbortSignal.timeout(10_000) });
    if (!res.ok || !res.body) throw failed();
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      size += chunk.byteLength;
      if (size > MAX_METADATA_BYTES) throw failed();
      chunks.push(Buffer.from(chunk));
    }
    return Buffer.concat(chunks).toString('utf8');
  } catch (e) {
    if (e instanceof Refusal) throw e;
    throw failed();
  }
}

function jsonObject(raw: string | undefined, field: string): Record<string, unknown> | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw invalidField(field, 'is not JSON');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw invalidField(field, 'must be a JSON object');
  return parsed as Record<string, unknown>;
}

const ATTRIBUTE = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;

async function mappingsOf(deps: Pick<Services, 'db'>, app: Application, input: ConnectionInput): Promise<ConnectionMappings> {
  const out: ConnectionMappings = {};
  const attributes = jsonObject(input.attributes, 'attributes');
  if (attributes) {
    if (Object.keys(attributes).length > 30) throw invalidField('attributes', 'maps more than 30 attributes');
    for (const [to, from] of Object.entries(attributes)) {
      if (!ATTRIBUTE.test(to) || ['email', 'password', 'uuid', 'id', 'emailVerified'].includes(to)) throw invalidField('attributes', `cannot set ${JSON.stringify(to.slice(0, 40))}: name an attribute of the record such as givenName (the address comes from the identity provider as it is)`);
      if (typeof from !== 'string' || from.length === 0 || from.length > 256) throw invalidField('attributes', `maps ${to} from something that is not an attribute or claim name`);
    }
    out.attributes = attributes as Record<string, string>;
  }
  const groups = jsonObject(input.groups, 'groups');
  if (groups) {
    const { attribute, roles } = groups as { attribute?: unknown; roles?: unknown };
    if (typeof attribute !== 'string' || attribute.length === 0 || attribute.length > 256) throw invalidField('groups', 'needs "attribute": the SAML attribute or claim that lists the person\'s groups');
    if (roles === null || typeof roles !== 'object' || Array.isArray(roles)) throw invalidField('groups', 'needs "roles": an object of group names to lists of the organization\'s roles');
    const mapped: Record<string, string[]> = {};
    for (const [group, list] of Object.entries(roles as Record<string, unknown>).slice(0, 50)) {
      if (!Array.isArray(list) || list.some((r) => typeof r !== 'string')) throw invalidField('groups', `maps ${JSON.stringify(group.slice(0, 40))} to something that is not a list of roles`);
      mapped[group] = await knownRolesOf(deps, app, list as string[], 'groups');
    }
    out.groups = { attribute, roles: mapped };
  }
  return out;
}

async function samlSettingsOf(input: ConnectionInput, mappings: ConnectionMappings, allowPrivate: boolean, before?: ConnectionSettings): Promise<ConnectionSettings> {
  let metadata = input.metadata;
  if (metadata === undefined && input.metadataUrl !== undefined) metadata = await fetchMetadata(input.metadataUrl, allowPrivate);
  if (metadata === undefined) {
    if (before?.type === 'saml') return { ...before, ...mappings, ...(input.idpInitiated !== undefined && { idpInitiated: input.idpInitiated }) };
    throw invalidField('metadata', 'is missing: give the identity provider\'s SAML metadata (XML), or metadata_url');
  }
  try {
    const idp = parseIdentityProviderMetadata(metadata);
    return {
      type: 'saml', metadata, ...(input.metadataUrl !== undefined && { metadataUrl: input.metadataUrl }), idp,
      idpInitiated: input.idpInitiated ?? (before?.type === 'saml' ? before.idpInitiated : false), ...mappings,
    };
  } catch (e) {
    if (e instanceof SamlInputError) throw invalidField(input.metadata !== undefined ? 'metadata' : 'metadataUrl', e.message);
    throw e;
  }
}

function oidcSettingsOf(input: ConnectionInput, mappings: ConnectionMappings, allowPrivate: boolean, before?: ConnectionSettings): ConnectionSettings {
  const issuer = input.issuer ?? (before?.type === 'oidc' ? before.issuer : undefined);
  const clientId = input.clientId ?? (before?.type === 'oidc' ? before.clientId : undefined);
  if (!issuer) throw invalidField('issuer', 'is missing: the OpenID provider\'s issuer, such as https://login.example.com');
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    throw invalidField('issuer', 'is not a URL');
  }
  const loopback = ['localhost', '127.0.0.1'].includes(url.hostname);
  // an organization's owner names no address of the service's own network (the application may: a provider beside it)
  const problem = allowPrivate ? undefined : webhookUrlProblem(issuer, false);
  if (problem) throw invalidField('issuer', problem);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) throw invalidField('issuer', 'must be https (http only for localhost)');
  if (!clientId || clientId.length > 512) throw invalidField('clientId', 'is missing: the client registered at the OpenID provider');
  const kept = before?.type === 'oidc' ? { attributes: before.attributes, groups: before.groups } : {};
  return { type: 'oidc', issuer, clientId, ...kept, ...mappings };
}

/** Who may change an organization's connections: the application, or an owner. */
async function ownersChange(deps: Pick<Services, 'db'>, uow: UnitOfWork, command: { app: Application; acting: Acting; organizationId: string }): Promise<StoredOrganization> {
  const organization = await organizationOf(deps, command.app, command.organizationId, uow.tx);
  const authority = await authorityIn(deps, organization, command.acting, uow.tx);
  if (authority.kind === 'member' && !isOwner(authority.member.roles)) throw new Refusal('forbidden', 'only the organization\'s owners change its connections');
  return organization;
}

const nameOf = (raw: string | undefined, fallback: string) => {
  const name = (raw ?? fallback).trim();
  if (name.length === 0 || name.length > 200) throw invalidField('name', 'must be 1 to 200 characters');
  return name;
};

/** Adds a connection to an organization; answers it (with the addresses its identity provider is given). */
export async function addConnection(deps: Deps, command: { app: Application; acting: Acting; organizationId: string } & ConnectionInput): Promise<ConnectionView> {
  if (command.type !== 'saml' && command.type !== 'oidc') throw invalidField('type', 'must be saml or oidc');
  const mappings = await mappingsOf(deps, command.app, command);
  const allowPrivate = privateAllowed(deps, command.acting);
  const settings = command.type === 'saml' ? await samlSettingsOf(command, mappings, allowPrivate) : oidcSettingsOf(command, mappings, allowPrivate);
  if (settings.type === 'oidc' && !command.clientSecret) throw invalidField('clientSecret', 'is missing: the secret of the client registered at the OpenID provider');
  const publicId = `con_${randomBytes(12).toString('hex')}`;
  return deps.work.run(async (uow) => {
    const organization = await ownersChange(deps, uow, command);
    const now = deps.clock.now();
    await deps.db.organizations.touch(organization.id, now, uow.tx);
    if ((await deps.db.connections.listOf(organization.id, uow.tx)).length >= MAX_CONNECTIONS) {
      throw invalidField('type', `is one too many: an organization has at most ${MAX_CONNECTIONS} connections; remove one first`);
    }
    const stored = await deps.db.connections.insert({
      applicationId: command.app.id, organizationKey: organization.id, publicId, settings, required: command.required === true,
      name: nameOf(command.name, settings.type === 'saml' ? settings.idp.entityId.slice(0, 200) : settings.issuer.slice(0, 200)),
      secretSealed: command.clientSecret ? deps.box.seal(command.clientSecret, `connection secret\n${publicId}`) : null,
    }, now, uow.tx);
    uow.record(event('organization.connection_added', command.app.id, now, command.acting, organizationSubject(organization), {
      organization: organization.organizationId, connection: publicId, type: settings.type, required: stored.required,
    }));
    return connectionView(deps, command.app, organization.organizationId, stored);
  }).finally(() => forgetConnections(command.app.id));
}

/** An organization's connections, oldest first (any member reads them; the application too). */
export async function listConnections(deps: Pick<Services, 'baseUrls' | 'db'>, command: { app: Application; acting: Acting; organizationId: string }): Promise<ConnectionView[]> {
  const organization = await organizationOf(deps, command.app, command.organizationId);
  await authorityIn(deps, organization, command.acting);
  return (await deps.db.connections.listOf(organization.id)).map((c) => connectionView(deps, command.app, organization.organizationId, c));
}

/** The application's connections, every organization's (the console's list), oldest first: at most 500. */
export async function listApplicationConnections(deps: Pick<Services, 'baseUrls' | 'db'>, command: { app: Application }): Promise<ConnectionView[]> {
  return (await deps.db.connections.listOfApplication(command.app.id, 500)).map((c) => connectionView(deps, command.app, c.organizationId, c.connection));
}

const unknownConnection = () => invalidField('connectionId', 'is not a connection of this organization (/organizations/connections/list names them)');

/** The connection of an organization, locked. */
async function connectionOf(deps: Pick<Services, 'db'>, uow: UnitOfWork, organization: StoredOrganization, connectionId: string): Promise<StoredConnection> {
  const found = await deps.db.connections.find(organization.applicationId, connectionId, uow.tx);
  if (!found || found.organizationKey !== organization.id) throw unknownConnection();
  return found;
}

/** Changes a connection: its metadata (or issuer, client), name, whether it is required, whether it takes unsolicited responses, its mappings. */
export async function updateConnection(deps: Deps, command: { app: Application; acting: Acting; organizationId: string; connectionId: string } & ConnectionInput): Promise<ConnectionView> {
  return deps.work.run(async (uow) => {
    const organization = await ownersChange(deps, uow, command);
    const before = await connectionOf(deps, uow, organization, command.connectionId);
    const mappings = await mappingsOf(deps, command.app, command);
    const change: ConnectionChange = {
      settings: before.settings.type === 'saml' ? await samlSettingsOf(command, mappings, privateAllowed(deps, command.acting), before.settings)
        : oidcSettingsOf(command, mappings, privateAllowed(deps, command.acting), before.settings),
      ...(command.name !== undefined && { name: nameOf(command.name, '') }),
      ...(command.required !== undefined && { required: command.required }),
      ...(command.clientSecret !== undefined && before.settings.type === 'oidc' && { secretSealed: deps.box.seal(command.clientSecret, `connection secret\n${before.publicId}`) }),
    };
    const now = deps.clock.now();
    await deps.db.connections.update(command.app.id, before.publicId, change, now, uow.tx);
    const fields = Object.entries(command).filter(([k, v]) => v !== undefined && !['app', 'acting', 'organizationId', 'connectionId', 'clientSecret'].includes(k)).map(([k]) => k)
      .concat(command.clientSecret !== undefined ? ['clientSecret'] : []);
    uow.record(event('organization.connection_updated', command.app.id, now, command.acting, organizationSubject(organization), {
      organization: organization.organizationId, connection: before.publicId, fields,
    }));
    return connectionView(deps, command.app, organization.organizationId, (await deps.db.connections.find(command.app.id, before.publicId, uow.tx))!);
  }).finally(() => forgetConnections(command.app.id));
}

/** Removes a connection: its sign-ins stop; the accounts it made stay, with their memberships. */
export async function removeConnection(deps: OrgDeps, command: { app: Application; acting: Acting; organizationId: string; connectionId: string }): Promise<void> {
  await deps.work.run(async (uow) => {
    const organization = await ownersChange(deps, uow, command);
    const connection = await connectionOf(deps, uow, organization, command.connectionId);
    await deps.db.connections.remove(command.app.id, connection.publicId, uow.tx);
    uow.record(event('organization.connection_removed', command.app.id, deps.clock.now(), command.acting, organizationSubject(organization), {
      organization: organization.organizationId, connection: connection.publicId,
    }));
  }).finally(() => forgetConnections(command.app.id));
}
