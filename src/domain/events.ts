import { randomBytes } from 'node:crypto';
import type { MailRequest } from './mail';
import type { SnapshotPayload } from './storage/versions';
import type { ErasureNeedles } from './storage/erasures';
import type { JoinedBy } from './storage/organizations';
import type { OwedLogouts } from './backchannel-logout';

/**
 * Who made a change (docs/architecture.md#events): the person a record is, through a client (a
 * sign-in, a profile edit with their own token); a client acting for the application (an owner or
 * another client with its secret); an operator at the command line; or Gatehouse itself (a worker,
 * an undo link that anyone holding it may follow).
 */
export type Actor =
  | { kind: 'account'; accountId: number; clientId?: string }
  | { kind: 'client'; clientId: string }
  | { kind: 'operator'; name: string }
  /** An organization's directory, through its SCIM token (docs/scim.md): `tokenId` the token's public id. */
  | { kind: 'scim'; tokenId: string }
  | { kind: 'system' };

/** What a change was made to: a record (by its id), a client (its client_id), a setting, a provider, a flow, the application. */
export interface Subject {
  kind: 'record' | 'client' | 'setting' | 'provider' | 'flow' | 'application' | 'webhook' | 'organization' | 'role' | 'service_provider' | 'attribute' | 'api' | 'app_role';
  id: string;
}

/**
 * Where a change came from (none of it for a worker or the CLI): the request it was made in, the
 * address as the per-address limits count it (one IPv4 address or IPv6 /64, src/domain/addresses.ts),
 * the user agent as the request sent it, and the client the request came through when the actor
 * does not name it (a page of the account client).
 */
export interface Origin { requestId?: string; address?: string; userAgent?: string; clientId?: string }

/** The longest user agent an event keeps, after escaping. */
export const USER_AGENT_MAX = 512;

/**
 * A user agent as an event keeps it: control characters written out as `\u00XX` (so a stored or
 * shown value is one line of text), cut to USER_AGENT_MAX characters, never in the middle of a
 * character; undefined for none.
 */
export function keptUserAgent(raw: string | string[] | undefined): string | undefined {
  const text = Array.isArray(raw) ? raw.join(', ') : raw;
  if (text === undefined || text === '') return undefined;
  // no more of a long value is looked at than can be kept
  const head = text.length > USER_AGENT_MAX * 2 ? text.slice(0, USER_AGENT_MAX * 2) : text;
  // eslint-disable-next-line no-control-regex
  const escaped = head.replace(/[\u0000-\u001f\u007f-\u009f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return Array.from(escaped).slice(0, USER_AGENT_MAX).join('');
}

/**
 * What happens with an event beside what is kept of it: the record as the change left it (the
 * history's snapshot) and the email the change sends (its link holds a one-time code). Subscribers
 * read it while the change commits; it is never stored as part of the event, audited or sent on.
 */
export interface Carried {
  snapshot?: SnapshotPayload;
  mail?: MailRequest;
  /** An erasure's job (docs/lifecycle.md#erase): the record, and what names the person outside its rows (sealed before it is stored). */
  erasure?: { entityId: number; needles: ErasureNeedles };
  /** A record made by an import (users:import, /entity.bulkCreate): the import's own event is its audit entry, not each record's. */
  inImport?: true;
  /** The logout tokens a session's end owes (docs/openid-connect.md#back-channel-logout): the account's public id, and per client its session id and the token's id. */
  logouts?: OwedLogouts;
}

/** The changes Gatehouse records, each with the names of what it is about (never a value that signs anyone in). */
export interface EventData {
  'account.registered': { method: 'password' | 'social' | 'api' | 'email_code' | 'connection' | 'scim' };
  /** `factor`: the second factor that finished it, when one did. */
  'account.signed_in': { method: 'password' | 'social' | 'passkey' | 'email_code' | 'connection'; factor?: 'totp' | 'recovery_code' | 'passkey' };
  /**
   * A sign-in code was asked for (docs/email-codes.md): mailed to the account's address (subject the
   * record), or to an address no account has, to register; or not mailed (no account and no
   * registration by code, or a disabled account). Subject the application but for a mailed account;
   * the address is named nowhere.
   */
  'account.email_code_requested': { registration: boolean; mailed: boolean };
  'account.password_changed': { by: 'form' | 'reset' | 'api' };
  'account.email_verified': Record<string, never>;
  'account.email_changed': { undoable: boolean };
  'account.email_change_undone': Record<string, never>;
  'account.verification_requested': Record<string, never>;
  'account.password_reset_requested': Record<string, never>;
  'account.identity_linked': { provider: string };
  'account.identity_unlinked': { provider: string };
  /** `until`: when the disable ends by itself (ISO 8601); `reason`: the operator's words. */
  'account.disabled': { until?: string; reason?: string };
  'account.enabled': Record<string, never>;
  /** The record's personal data was removed for good (docs/lifecycle.md#erase): only this event and its tombstone name it. */
  'account.erased': Record<string, never>;
  /** An operator or the application's backend took a copy of the account's data (docs/lifecycle.md#export). */
  'account.exported': Record<string, never>;
  'account.signed_out': { tokens: number };
  'account.second_factor_added': { method: 'totp' };
  'account.second_factor_removed': { method: 'totp' };
  /** A passkey (`passkey`: its id among the account's) added, renamed or removed. */
  'account.passkey_added': { passkey: number };
  'account.passkey_renamed': { passkey: number };
  'account.passkey_removed': { passkey: number };
  /** New recovery codes replaced the account's others (`count` of them). */
  'account.recovery_codes_renewed': { count: number };
  'access.issued': { kind: 'access_token' | 'authorization_code' | 'creation_token' | 'verification_code'; attribute?: string };
  'record.created': { attributes: string[] };
  'record.updated': { attributes: string[] };
  'record.replaced': { attributes: string[] };
  'record.deleted': Record<string, never>;
  'client.created': { features: string[] };
  'client.changed': { features: string[] };
  'client.secret_reset': Record<string, never>;
  'client.deleted': Record<string, never>;
  'setting.changed': { key: string; scope: 'client' | 'application'; client?: string; removed: boolean };
  'provider.added': { kind: string };
  'provider.removed': Record<string, never>;
  'application.created': Record<string, never>;
  'flow.imported': { name: string; version: number };
  /** An attribute of the records indexed for /entity.find (built in the background), or its index removed. */
  'attribute.indexed': Record<string, never>;
  'attribute.unindexed': Record<string, never>;
  /** The OpenID provider's signing keys rotated: the keys (`kid`) that sign from now on. */
  'keys.rotated': { signing: string[] };
  /** A refresh token was spent for a new pair in its family (the original token endpoint). */
  'token.refreshed': Record<string, never>;
  /** A spent refresh token came back: it had leaked, and its whole family ended (`revoked` tokens). */
  'token.reuse_detected': { revoked: number };
  /** The person said a sign-in or change was not theirs: every session ended, and a new password is due. */
  'account.activity_disowned': { sessions: number };
  /** The OpenID provider: an app was given the scopes of a grant (`consent`: implied for a login client, or given on the consent page). */
  'oidc.grant_given': { scopes: string[]; consent: 'implied' | 'given' };
  /** The OpenID provider: the person refused an app the scopes it asked for on the consent page. */
  'oidc.consent_refused': { scopes: string[] };
  /** The OpenID provider: an authorization code was exchanged for tokens. */
  'oidc.code_redeemed': Record<string, never>;
  /** A device's code gave its tokens (the device authorization grant, polled once the person confirmed). */
  'oidc.device_code_redeemed': Record<string, never>;
  /** The OpenID provider: a refresh token was spent for new tokens of its grant. */
  'oidc.token_refreshed': Record<string, never>;
  /** The OpenID provider: an app revoked a grant's tokens (the revocation endpoint), `revoked` of them. */
  'oidc.grant_revoked': { revoked: number };
  /** The OpenID provider: the person signed out of the provider from an app (RP-initiated logout). */
  'oidc.logout': Record<string, never>;
  /**
   * Sessions of the account at the provider ended, and the apps among them with a back-channel
   * logout address are told (docs/openid-connect.md#back-channel-logout): `clients`, those owed a logout token.
   */
  'oidc.backchannel_logout': { clients: string[] };
  /** The OpenID provider: a client got an access token for itself (client_credentials), for `scopes`. */
  'oidc.client_credentials_issued': { scopes: string[] };
  /** A webhook endpoint added (docs/webhooks.md): its address's host, and what it subscribed to. */
  'webhook.added': { host: string; types: string[] | '*'; includeRecord: boolean };
  /** An endpoint removed; `gone`: its receiver answered 410 Gone. */
  'webhook.removed': { reason?: 'gone' };
  /** An endpoint disabled (by an operator, or after failing for days: `failing`); nothing is sent to it until it is enabled. */
  'webhook.disabled': { reason: 'operator' | 'failing' };
  'webhook.enabled': Record<string, never>;
  /** A `ping` queued for an endpoint (/webhooks/test). */
  'webhook.tested': Record<string, never>;
  /** Deliveries sent again: one (`delivery`), or those given up since a time (`since`), `count` of them. */
  'webhook.redelivered': { count: number; delivery?: number; since?: string };
  /** An endpoint's secret replaced; the previous one signs too until `previousUntil`. */
  'webhook.secret_rotated': { previousUntil: string };
  /** An organization made (docs/organizations.md), `organization` its public id. */
  'organization.created': { organization: string; slug: string };
  /** Its name, slug, logo, metadata, or how accounts join it changed (`fields`, the names). */
  'organization.updated': { organization: string; fields: string[] };
  /** An organization deleted, with its `members` memberships and its invitations. */
  'organization.deleted': { organization: string; members: number };
  /** The account (the subject) joined an organization with `roles`: `by` the API, an invitation (`invitation`), its domain, or making it. */
  'organization.member_added': { organization: string; roles: string[]; by: JoinedBy; invitation?: string };
  /** The account left an organization, or was removed from it. */
  'organization.member_removed': { organization: string; by: 'removed' | 'left' | 'deprovisioned' };
  /** The account's roles in an organization are now `roles`. */
  'organization.member_roles_changed': { organization: string; roles: string[] };
  /** The account made an organization its active one. */
  'organization.switched': { organization: string };
  /** An invitation to an organization with `roles` made (and mailed); never the address or its link. */
  'organization.invitation_created': { organization: string; invitation: string; roles: string[] };
  'organization.invitation_revoked': { organization: string; invitation: string };
  /** A role of the application's organizations defined (or defined again) with `permissions`. */
  'organization.role_defined': { role: string; permissions: string[] };
  /** A defined role removed; the `members` holding it lost it. */
  'organization.role_removed': { role: string; members: number };
  /** An organization claimed an email domain (`verified` when an operator's claim). */
  'organization.domain_added': { organization: string; domain: string; verified: boolean };
  /** A claimed domain verified: by an operator, or by a member's verified address at it. */
  'organization.domain_verified': { organization: string; domain: string; by: 'operator' | 'member' };
  'organization.domain_removed': { organization: string; domain: string };
  /** An import made `created` records (users:import, /entity.bulkCreate), refused `refused` lines, and kept these password hash formats. */
  'records.imported': { created: number; refused: number; weak: number; formats: Record<string, number> };
  /** The application let accounts at a claimed domain join the organization (`joinable`), or no longer. */
  'organization.domain_joinable': { organization: string; domain: string; joinable: boolean };
  /** An organization's enterprise connection added (docs/organizations.md#connections). */
  'organization.connection_added': { organization: string; connection: string; type: 'saml' | 'oidc'; required: boolean };
  /** Its settings changed (`fields`, the names; never a secret's value). */
  'organization.connection_updated': { organization: string; connection: string; fields: string[] };
  'organization.connection_removed': { organization: string; connection: string };
  /** An organization's SCIM token made (docs/scim.md#tokens): its public id, never the token. */
  'scim.token_created': { organization: string; token: string };
  'scim.token_revoked': { organization: string; token: string };
  /** The organization's groups mapped to its roles anew: the groups' names. */
  'scim.configured': { organization: string; groups: string[] };
  /** The organization's directory provisioned the account (the subject): `resource` its SCIM id; `linked`: an account it found by its address. */
  'scim.user_provisioned': { organization: string; resource: string; linked: boolean; active: boolean };
  /** The directory changed what it says of the person (`attributes`, the names). */
  'scim.user_updated': { organization: string; resource: string; attributes: string[] };
  /** The directory deactivated the person: the membership is suspended (and the account disabled where it belongs to the organization alone). */
  'scim.user_deactivated': { organization: string; resource: string; account: 'kept' | 'disabled' };
  'scim.user_reactivated': { organization: string; resource: string; account: 'kept' | 'enabled' };
  /** The directory deleted the person: the membership removed, the account kept, disabled or deleted. */
  'scim.user_deprovisioned': { organization: string; resource: string; account: 'kept' | 'disabled' | 'deleted' };
  /** A group of the directory made, changed (its name, or `added` and `removed` members) or deleted; the subject is the organization. */
  'scim.group_created': { organization: string; group: string; members: number };
  'scim.group_updated': { organization: string; group: string; added: number; removed: number; renamed: boolean };
  'scim.group_deleted': { organization: string; group: string };
  /** A SAML service provider registered (docs/saml.md#service-providers); the subject is its public id. */
  'saml.service_provider_added': { entityId: string };
  /** Its metadata, name, NameID format or attributes changed (`fields`, the names). */
  'saml.service_provider_updated': { entityId: string; fields: string[] };
  'saml.service_provider_removed': { entityId: string };
  /** An API registered (docs/openid-connect.md#apis); the subject is its public id. */
  'api.added': { identifier: string; scopes: string[] };
  /** Its name, scopes or token lifetime changed (`fields`, the names). */
  'api.updated': { identifier: string; fields: string[] };
  /** Removed: no token is issued for it any more (those issued live out their lifetime). */
  'api.removed': { identifier: string };
  /** A client was given `scopes` of the API for its own tokens (none: taken back). */
  'api.client_scopes_granted': { identifier: string; client: string; scopes: string[] };
  /** A role of the application defined (or defined again): the scopes it gives, by API identifier. */
  'role.defined': { role: string; permissions: Record<string, string[]> };
  /** A role removed: `held`, how many accounts held it. */
  'role.removed': { role: string; held: number };
  /** The account (the subject) was given roles (`added`) or lost them (`removed`). */
  'account.roles_changed': { added: string[]; removed: string[] };
  /** The account signed in to a SAML service provider: an assertion was issued to it, with a NameID of `nameIdFormat`. */
  'saml.assertion_issued': { serviceProvider: string; entityId: string; nameIdFormat: string; initiated: 'sp' | 'idp' };
  /** The account signed out from a SAML service provider (its LogoutRequest ended the browser's session). */
  'saml.logout': { serviceProvider: string; entityId: string };
}

export type EventType = keyof EventData;

/** Every event type, for those who list or filter them. */
export const EVENT_TYPES = [
  'account.registered', 'account.signed_in', 'account.password_changed', 'account.email_verified', 'account.email_changed',
  'account.email_change_undone', 'account.verification_requested', 'account.password_reset_requested', 'account.email_code_requested', 'account.identity_linked',
  'account.identity_unlinked', 'account.disabled', 'account.enabled', 'account.erased', 'account.exported', 'account.signed_out',
  'account.second_factor_added', 'account.second_factor_removed', 'account.recovery_codes_renewed',
  'account.passkey_added', 'account.passkey_renamed', 'account.passkey_removed',
  'access.issued', 'record.created', 'record.updated', 'record.replaced', 'record.deleted', 'records.imported',
  'client.created', 'client.changed', 'client.secret_reset', 'client.deleted',
  'setting.changed', 'provider.added', 'provider.removed', 'application.created', 'flow.imported', 'attribute.indexed', 'attribute.unindexed', 'keys.rotated',
  'token.refreshed', 'token.reuse_detected', 'account.activity_disowned',
  'oidc.grant_given', 'oidc.consent_refused', 'oidc.code_redeemed', 'oidc.device_code_redeemed', 'oidc.token_refreshed', 'oidc.grant_revoked', 'oidc.logout', 'oidc.client_credentials_issued',
  'oidc.backchannel_logout',
  'webhook.added', 'webhook.removed', 'webhook.secret_rotated', 'webhook.disabled', 'webhook.enabled', 'webhook.tested', 'webhook.redelivered',
  'organization.created', 'organization.updated', 'organization.deleted', 'organization.member_added', 'organization.member_removed',
  'organization.member_roles_changed', 'organization.switched', 'organization.invitation_created', 'organization.invitation_revoked',
  'organization.role_defined', 'organization.role_removed', 'organization.domain_added', 'organization.domain_verified', 'organization.domain_removed',
  'organization.domain_joinable',
  'organization.connection_added', 'organization.connection_updated', 'organization.connection_removed',
  'saml.service_provider_added', 'saml.service_provider_updated', 'saml.service_provider_removed', 'saml.assertion_issued', 'saml.logout',
  'api.added', 'api.updated', 'api.removed', 'api.client_scopes_granted', 'role.defined', 'role.removed', 'account.roles_changed',
  'scim.token_created', 'scim.token_revoked', 'scim.configured', 'scim.user_provisioned', 'scim.user_updated', 'scim.user_deactivated',
  'scim.user_reactivated', 'scim.user_deprovisioned', 'scim.group_created', 'scim.group_updated', 'scim.group_deleted',
] as const satisfies readonly EventType[];
/** Compiles only while EVENT_TYPES names every type of EventData. */
const everyType: Exclude<EventType, (typeof EVENT_TYPES)[number]> extends never ? true : never = true;
void everyType;

/** One event of each type: what happened, to what, by whom, when; `version` is the shape of `data`. */
export type DomainEvent = {
  [T in EventType]: {
    type: T;
    version: 1;
    /** The event's own id (a UUID): its `uid` in the event store, the id every job made for it and every delivery of it names. */
    eventId: string;
    applicationId: number;
    occurredAt: Date;
    actor: Actor;
    subject: Subject;
    origin: Origin;
    data: EventData[T];
    carried?: Carried;
  };
}[EventType];

export type EventOf<T extends EventType> = Extract<DomainEvent, { type: T }>;

/** An event as it is kept and sent on: everything but what it carried. */
export type KeptEvent = Omit<DomainEvent, 'carried'>;

/** The event without what it carries (snapshot, mail): what an audit row or a webhook may hold. */
export function kept(event: DomainEvent): KeptEvent {
  const { carried: _carried, ...rest } = event;
  return rest;
}

/**
 * A new event's own id: a UUID version 7 (RFC 9562), its first 48 bits the time in milliseconds and
 * the rest random, so ids sort as their events happened and each is written at the end of the
 * store's index of them.
 */
export function timeOrderedId(at: Date = new Date()): string {
  const bytes = randomBytes(16);
  bytes.writeUIntBE(Math.max(0, Math.floor(at.getTime())) % 2 ** 48, 0, 6);
  bytes[6] = (bytes[6] & 0x0f) | 0x70;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Who acts in a call: the context every use case is handed, turned into events' actor and origin. */
export interface Acting { actor: Actor; origin: Origin }

/**
 * An event of `type` made now by `acting` about `subject`; `carried` goes to the subscribers with
 * it and is never kept (see Carried).
 */
export function event<T extends EventType>(
  type: T, applicationId: number, at: Date, acting: Acting, subject: Subject, data: EventData[T], carried?: Carried,
): EventOf<T> {
  return { type, version: 1, eventId: timeOrderedId(at), applicationId, occurredAt: at, actor: acting.actor, subject, origin: acting.origin, data, ...(carried && { carried }) } as EventOf<T>;
}

/** The subject of a change to a record. */
export const recordSubject = (id: number): Subject => ({ kind: 'record', id: String(id) });

/** Whether the event's actor is someone other than the person the record is (an application's client, an operator, an organization's directory): those are audited. */
export const actsForOthers = (actor: Actor): boolean => actor.kind === 'client' || actor.kind === 'operator' || actor.kind === 'scim';

/** The account an event is about: the record it changed, else the person who acted; none for a client, a setting, a key. */
export function accountOf(e: Pick<KeptEvent, 'subject' | 'actor'>): number | undefined {
  if (e.subject.kind === 'record') return Number(e.subject.id);
  return e.actor.kind === 'account' ? e.actor.accountId : undefined;
}

/** The client an event came through: the actor's, else the request's. */
export function clientOf(e: Pick<KeptEvent, 'actor' | 'origin'>): string | undefined {
  if (e.actor.kind === 'client') return e.actor.clientId;
  if (e.actor.kind === 'account' && e.actor.clientId !== undefined) return e.actor.clientId;
  return e.origin.clientId;
}
