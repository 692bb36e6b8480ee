import type { AuthScheme } from './authenticate';
import type { Feature } from '../domain/clients';
import type { Handler } from './context';
import * as access from './handlers/access';
import * as clients from './handlers/admin-clients';
import * as entity from './handlers/entity';
import * as entityApi from './handlers/entity-api';
import { refreshAccessToken } from './handlers/refresh-access-token';
import { token } from './handlers/token';
import * as versions from './handlers/versions';
import * as providers from './handlers/admin-providers';
import * as attributes from './handlers/admin-attributes';
import * as webhooks from './handlers/webhooks';
import * as saml from './handlers/saml';
import * as apis from './handlers/apis';
import * as orgs from './handlers/organizations';
import * as settings from './handlers/admin-settings';
import { listAuditEntries } from './handlers/audit';
import { entityActivity } from './handlers/activity';
import * as lifecycle from './handlers/lifecycle';
import * as secondFactor from './handlers/second-factor';
import * as passkeys from './handlers/passkeys';
import { credentialParam } from './account-request';
import { beginEmailCode, emailCodeSignIn } from '../usecases/login/email-code';
import { altchaOf, challenge } from './handlers/challenge';
import { passkeySignIn } from '../usecases/login/passkey-sign-in';
import type { ErrorStyle } from './status';
import type { ArgumentNames } from '../errors';
import { flag, formOf, loginHandler, nothing, refreshSecretOf, signedInBody, unlessPaused } from './flow-request';
import { requestEmailVerification, requestPasswordReset } from '../usecases/login/email-requests';
import { registerWithPassword } from '../usecases/login/register';
import { signIn } from '../usecases/login/sign-in';
import { updateProfile } from '../usecases/login/update-profile';
import * as social from '../usecases/login/social';

/**
 * The one route table: every endpoint with its methods, where it reads parameters, the
 * authentication schemes it accepts, the client kinds (features) it admits, how its errors map to
 * HTTP statuses (see status.ts), and whether it only reads (a signed request to any other endpoint
 * is accepted once), and what the OpenAPI document says of it (summary and parameters).
 * docs/api.md#client-kinds says which kinds each endpoint admits.
 */
export interface Route {
  path: string;
  methods: readonly ('GET' | 'POST')[];
  /** `query+body`: URL query and urlencoded body; `body`: the body only (docs/api.md#conventions, /oauth/*). */
  params: 'query+body' | 'body';
  auth: readonly AuthScheme[];
  kinds: readonly Feature[];
  errors: ErrorStyle;
  /** Only reads: a signed request may be repeated. Every other endpoint refuses a replayed signature. */
  reads?: boolean;
  /** Issues bearer tokens only: a request with a DPoP proof is refused, never answered with a token that is not bound to its key. */
  bearerOnly?: true;
  /**
   * Bytes of body, and characters of one parameter, the endpoint accepts (default 64 KiB and
   * 16 KiB): more for the endpoints that carry whole records as JSON.
   */
  size?: { body: number; param: number };
  handler: Handler;
  /**
   * The endpoint's names for fields of its command that are not the field in snake_case: a use
   * case's refusal names the field, the answer names the parameter (src/errors.ts).
   */
  arguments?: ArgumentNames;
  /** What the OpenAPI document says of it: a summary and its parameters (`!` marks a required one). Every route of ROUTES has one. */
  doc?: EndpointDoc;
}

/** An endpoint's summary and parameters, for the OpenAPI document (the form fields of a flow endpoint come from the flow). */
export interface EndpointDoc { summary: string; params: readonly string[] }

/** How an endpoint that acts on one record names it (docs/api.md#access-endpoints). */
const RECORD = ['uuid', 'id', 'key_attribute', 'key_value'];
/** The flow endpoints' shared parameters (docs/api.md#flows); the form's own fields come from the flow. */
const FLOW = ['client_id!', 'locale!', 'flow', 'flow_version', 'redirect_uri', 'response_type', 'form'];
/** The flow endpoints that require redirect_uri: a code is bound to it, or an email links to it (password_recover_url). */
const FLOW_REDIRECT = FLOW.map((p) => (p === 'redirect_uri' ? 'redirect_uri!' : p));
const SOCIAL = [...FLOW, 'token!', 'merge_token', 'refresh_secret'];

const CLIENT_AUTH = ['basic', 'signature', 'client_params'] as const;
const ANY_AUTH = ['basic', 'signature', 'client_params', 'client_id', 'none'] as const;
const route = (path: string, auth: Route['auth'], kinds: Route['kinds'], handler: Handler, doc: EndpointDoc, errors: ErrorStyle = 'capture'): Route => ({
  path, methods: ['GET', 'POST'], params: 'query+body', auth, kinds, errors, handler, doc,
});
const admin = (path: string, handler: Handler, doc: EndpointDoc, reads = false): Route => ({
  path, methods: ['GET', 'POST'], params: 'query+body', auth: CLIENT_AUTH, kinds: ['owner'], errors: 'capture', reads, handler, doc,
});
const READS = true;
/** Organizations: the application's backend (owner or direct_access credentials) or a member's access token (the use case decides what a member may do). */
const org = (path: string, handler: Handler, doc: EndpointDoc, options: { reads?: boolean; arguments?: ArgumentNames; auth?: Route['auth'] } = {}): Route => ({
  path, methods: ['GET', 'POST'], params: 'query+body', auth: options.auth ?? [...CLIENT_AUTH, 'access_token'], kinds: ['owner', 'direct_access'], errors: 'capture',
  handler, doc, ...(options.reads && { reads: true }), ...(options.arguments && { arguments: options.arguments }),
});
const ORG = ['organization_id!'];
const PAGE = ['max_results', 'cursor'];
/** A member named as /entity names a record (its uuid, id, or a unique attribute); refusals about it name `uuid`. */
const MEMBER = { arguments: { account: 'uuid' } };
/** A record's attributes are up to 64 KiB of JSON, which URL encoding may triple. */
const RECORD_SIZE = { body: 256 * 1024, param: 256 * 1024 };
/** SAML metadata: an identity provider's (with its certificates and roles) may be a few hundred KB; Gatehouse reads 256 KB of it. */
const METADATA_SIZE = { body: 800 * 1024, param: 256 * 1024 };
/** entity.bulkCreate: up to 1,000 records in one call. */
const BULK_SIZE = { body: 8 * 1024 * 1024, param: 8 * 1024 * 1024 };

/** Login endpoints: a login client named by client_id (apps and pages), or one with its secret (an app's backend). */
/** A social sign-in's answer: a password sign-in's, and whether the record was made by it. */
const socialBody = (outcome: social.SocialSignedIn) => {
  const r = unlessPaused(outcome);
  return { ...signedInBody(r), is_new: r.isNew };
};

const login = (path: string, handler: Handler, doc: EndpointDoc): Route => ({
  path, methods: ['POST'], params: 'body', auth: ['client_id', 'client_params', 'basic', 'signature', 'none'], kinds: ['login_client'], errors: 'login', handler, doc,
});

/**
 * Changes of an account's second factor: POST, body only, the account's access token (without one:
 * 100 naming it), or a sign-in's enroll_token (a parameter); a browser app also sends its
 * `client_id`, so that its origin may read the answer (CORS).
 */
const factor = (path: string, handler: Handler, doc: EndpointDoc): Route => ({
  path, methods: ['POST'], params: 'body', auth: ['access_token', 'client_id', 'none'], kinds: [], errors: 'login', handler,
  doc: { ...doc, params: [...doc.params, 'client_id'] },
});

export const ROUTES: readonly Route[] = [
  // docs/api.md#access-endpoints: codes and tokens for user records
  route('/access/getAccessToken', CLIENT_AUTH, ['owner', 'access_issuer'], access.getAccessToken, { summary: 'An access token for a record', params: ['type_name!', ...RECORD, 'for_client_id'] }),
  route('/access/getAuthorizationCode', CLIENT_AUTH, ['owner', 'access_issuer'], access.getAuthorizationCode, { summary: 'An authorization code for a record', params: ['type_name!', ...RECORD, 'redirect_uri!', 'transaction_state', 'lifetime', 'for_client_id'] }),
  route('/access/getCreationToken', CLIENT_AUTH, ['owner', 'access_issuer'], access.getCreationToken, { summary: 'A one-time token that lets a client without a secret create one record', params: ['type_name', 'lifetime', 'for_client_id'] }),
  route('/access/getVerificationCode', CLIENT_AUTH, ['owner', 'direct_access'], access.getVerificationCode, { summary: 'A one-time code that sets a time attribute (emailVerified) when used', params: ['type_name!', ...RECORD, 'attribute_name!', 'lifetime'] }),
  route('/access/useVerificationCode', ANY_AUTH, [], access.useVerificationCode, { summary: 'Uses a verification code', params: ['verification_code!'] }),
  // docs/api.md#oauthtoken: any of the five kinds may exchange, only what was issued for it (signed too, as the
  // original server library signs every call)
  { ...route('/oauth/token', CLIENT_AUTH, ['owner', 'login_client', 'direct_read_access', 'direct_access', 'access_issuer'], token, { summary: 'Exchanges an authorization code, or rotates a refresh token (bearer tokens: a DPoP proof is refused, /oidc/token binds tokens to a key)', params: ['grant_type!', 'code', 'redirect_uri', 'refresh_token'] }, 'oauth'), bearerOnly: true },
  // docs/api.md#flows: flow-based login endpoints; POST, body only, client_id of a login_client
  login('/oauth/register_native_traditional', loginHandler(registerWithPassword, 'optional', (ctx) => ({ form: formOf(ctx), refreshSecret: refreshSecretOf(ctx), altcha: altchaOf(ctx) }), signedInBody), { summary: 'Registers with the flow\'s registrationForm, and signs in', params: [...FLOW, 'refresh_secret', 'altcha'] }),
  login('/oauth/auth_native_traditional', loginHandler(signIn, 'optional', (ctx) => ({
    form: formOf(ctx), mergeToken: ctx.params.get('merge_token'), refreshSecret: refreshSecretOf(ctx), altcha: altchaOf(ctx),
    sdkFallback: ctx.params.get('user') !== undefined && ctx.params.get('password') !== undefined ? { user: ctx.params.values.user, password: ctx.params.values.password } : undefined,
  }), signedInBody), { summary: 'Signs in with the flow\'s signInForm (or user and password)', params: [...FLOW, 'merge_token', 'refresh_secret', 'user', 'password', 'altcha'] }),
  // (a field the form has not changes nothing: the answer names it, which the original clients pass over)
  login('/oauth/update_profile_native', loginHandler(updateProfile, 'ignored', (ctx) => ({ form: formOf(ctx), accessToken: ctx.params.require('access_token') }),
    (r) => (r.ignoredFields.length > 0 ? { ignored_fields: r.ignoredFields } : {})), { summary: 'Edits the record of an access token, or sets its password', params: [...FLOW, 'access_token!'] }),
  // the mobile SDKs renew their access token with the refresh secret they sent at sign-in
  login('/oauth/refresh_access_token', refreshAccessToken, { summary: 'Renews a mobile SDK\'s access token with its refresh secret', params: ['client_id!', 'locale!', 'flow', 'flow_version', 'access_token!', 'date!', 'signature!'] }),
  // docs/api.md#social-login: social login, with a token from the social login application
  login('/oauth/auth_native', loginHandler(social.socialSignIn, 'required', (ctx) => {
    const token = ctx.params.require('token');
    const registrationForm = ctx.params.get('registration_form');
    return {
      token, thinRegistration: flag(ctx, 'thin_registration'), mergeToken: ctx.params.get('merge_token'), refreshSecret: refreshSecretOf(ctx),
      // `form` names the form when both are sent, as the original read them
      registrationForm: registrationForm === undefined ? undefined : ctx.params.get('form') ?? registrationForm,
    };
  }, socialBody), { summary: 'Completes a social sign-in with a social login token', params: [...FLOW_REDIRECT, 'token!', 'merge_token', 'refresh_secret', 'thin_registration', 'registration_form'] }),
  login('/oauth/register_native', loginHandler(social.socialRegister, 'optional', (ctx) => ({
    token: ctx.params.require('token'), form: formOf(ctx), refreshSecret: refreshSecretOf(ctx),
  }), socialBody), { summary: 'Registers the identity behind a social login token', params: SOCIAL }),
  login('/oauth/link_account_native', loginHandler(social.linkAccount, 'ignored', (ctx) => {
    const token = ctx.params.require('token');
    return { token, accessToken: ctx.params.require('access_token') };
  }, nothing), { summary: 'Links a social identity to the record of an access token', params: ['client_id!', 'locale!', 'flow', 'flow_version', 'access_token!', 'token!'] }),
  { ...login('/oauth/unlink_account_native', loginHandler(social.unlinkAccount, 'ignored', (ctx) => {
    const identifier = ctx.params.require('identifier_to_remove');
    return { identifier, accessToken: ctx.params.require('access_token') };
  }, nothing), { summary: 'Unlinks a social identity from the record of an access token', params: ['client_id!', 'locale!', 'flow', 'flow_version', 'access_token!', 'identifier_to_remove!'] }), arguments: { identifier: 'identifier_to_remove' } },
  // docs/second-factor.md: an authenticator app as a second factor, and the sign-ins that wait for it
  factor('/oauth/totp_enroll_native', secondFactor.totpEnroll, { summary: 'Starts adding an authenticator app: its secret, otpauth:// URI and QR code', params: ['access_token', 'enroll_token'] }),
  factor('/oauth/totp_confirm_native', secondFactor.totpConfirm, { summary: 'Turns the authenticator app on with a first code; answers the recovery codes once', params: ['access_token', 'enroll_token', 'code!'] }),
  factor('/oauth/recovery_codes_native', secondFactor.recoveryCodes, { summary: 'Ten new recovery codes, proven by a current code; the old ones stop working', params: ['access_token!', 'code!'] }),
  { ...factor('/oauth/totp_remove_native', secondFactor.totpRemove, { summary: 'Turns the authenticator app off, with a current code or the password', params: ['access_token!', 'code', 'currentPassword'] }),
    arguments: { currentPassword: 'currentPassword' } },
  login('/oauth/mfa_verify_native', secondFactor.mfaVerify, { summary: 'Finishes a sign-in that answered second_factor_required', params: ['client_id!', 'mfa_token!', 'code', 'recovery_code', 'challenge_token', 'credential'] }),
  // docs/passkeys.md: passkeys, a first credential and a second factor
  factor('/oauth/passkey_register_begin', passkeys.registerBegin, { summary: 'Starts adding a passkey: the options of navigator.credentials.create()', params: ['access_token', 'enroll_token'] }),
  factor('/oauth/passkey_register_finish', passkeys.registerFinish, { summary: 'Adds the passkey the browser made', params: ['access_token', 'enroll_token', 'credential!', 'name'] }),
  factor('/oauth/passkeys_native', passkeys.list, { summary: 'The passkeys of the account', params: ['access_token!'] }),
  factor('/oauth/passkey_rename_native', passkeys.rename, { summary: 'Names one of the account\'s passkeys', params: ['access_token!', 'passkey_id!', 'name!'] }),
  factor('/oauth/passkey_remove_native', passkeys.remove, { summary: 'Removes one of the account\'s passkeys', params: ['access_token!', 'passkey_id!'] }),
  login('/oauth/passkey_auth_begin', passkeys.authBegin, { summary: 'Starts a sign-in with a passkey: the options of navigator.credentials.get()', params: ['client_id!', 'identifier', 'mfa_token'] }),
  login('/oauth/passkey_auth_native', loginHandler(passkeySignIn, 'optional', (ctx) => ({
    challengeToken: ctx.params.require('challenge_token'), credential: credentialParam(ctx), refreshSecret: refreshSecretOf(ctx),
  }), signedInBody), { summary: 'Signs in with a passkey', params: [...FLOW, 'challenge_token!', 'credential!', 'refresh_secret'] }),
  // docs/email-codes.md: sign-in by a code or link mailed to the person, limited as the other emails and as passwords
  login('/oauth/email_code_begin', loginHandler(beginEmailCode, 'optional', (ctx) => ({ email: ctx.params.require('email'), altcha: altchaOf(ctx) }), (begun) => ({
    code_token: begun.codeToken, expires_in: begun.expiresIn,
  })), { summary: 'Mails a 6-digit sign-in code and a link; answers the code_token that redeems it (the same whether an account has the address or not)', params: [...FLOW, 'email!', 'altcha'] }),
  // docs/proof-of-work.md: a proof-of-work challenge (ALTCHA) for the endpoints a client's setting `challenge` guards
  { ...login('/oauth/challenge', challenge, { summary: 'A proof-of-work challenge (ALTCHA v2) to solve and send as altcha', params: ['client_id!'] }), methods: ['GET', 'POST'], params: 'query+body' },
  login('/oauth/email_code_native', loginHandler(emailCodeSignIn, 'optional', (ctx) => ({
    codeToken: ctx.params.require('code_token'), code: ctx.params.require('code'), form: formOf(ctx), refreshSecret: refreshSecretOf(ctx),
  }), signedInBody), { summary: 'Signs in (or registers, where the client may) with the code of the email', params: [...FLOW, 'code_token!', 'code!', 'refresh_secret'] }),
  // docs/api.md#flows: emails, limited per recipient and per client address
  login('/oauth/forgot_password_native', loginHandler(requestPasswordReset, 'required', (ctx) => ({ form: formOf(ctx), altcha: altchaOf(ctx) }), nothing), { summary: 'Mails a one-time code for a new password (redirect_uri must equal the client\'s password_recover_url)', params: [...FLOW_REDIRECT, 'altcha'] }),
  login('/oauth/verify_email_native', loginHandler(requestEmailVerification, 'required', (ctx) => ({ form: formOf(ctx) }), nothing), { summary: 'Mails a verification code', params: FLOW_REDIRECT }),
  // records: owner credentials or a creation token create; readers or the record's access token read
  { ...route('/entity.create', ANY_AUTH, [], entity.createEntity, { summary: 'Creates a record', params: ['type_name!', 'attributes!', 'creation_token'] }), size: RECORD_SIZE },
  { ...route('/entity', [...CLIENT_AUTH, 'access_token'], [], entity.readEntity, { summary: 'One record, whole or in part', params: ['type_name', ...RECORD, 'attributes', 'attribute_name', 'access_token'] }), reads: READS },
  { ...route('/entity.find', CLIENT_AUTH, ['owner', 'direct_access', 'direct_read_access'], entityApi.findEntities, { summary: 'Records matching a filter, one page', params: ['type_name', 'filter', 'max_results', 'first_result', 'sort_on', 'attributes', 'show_total_count'] }), reads: READS },
  { ...route('/entity.count', CLIENT_AUTH, ['owner', 'direct_access', 'direct_read_access'], entityApi.countEntities, { summary: 'How many records match a filter', params: ['type_name', 'filter'] }), reads: READS },
  // writes: owner or direct_access credentials; an access token changes sub-values of its own
  // record only (the handlers check who writes what)
  { ...route('/entity.update', [...CLIENT_AUTH, 'access_token'], [], entityApi.updateEntity, { summary: 'Merges attributes into a record, or sets one sub-value', params: ['type_name', ...RECORD, 'attributes', 'attribute_name', 'value', 'include_record', 'access_token'] }), size: RECORD_SIZE },
  { ...route('/entity.replace', [...CLIENT_AUTH, 'access_token'], [], entityApi.replaceEntity, { summary: 'Replaces a record\'s attribute set, or one sub-value', params: ['type_name', ...RECORD, 'attributes', 'attribute_name', 'value', 'include_record'] }), size: RECORD_SIZE },
  route('/entity.delete', [...CLIENT_AUTH, 'access_token'], [], entityApi.deleteEntity, { summary: 'Deletes a record, or one sub-value', params: ['type_name', ...RECORD, 'attribute_name'] }),
  { ...route('/entity.bulkCreate', CLIENT_AUTH, ['owner', 'direct_access'], entity.bulkCreateEntities, { summary: 'Creates up to 1,000 records in one transaction', params: ['type_name!', 'all_attributes!'] }), size: BULK_SIZE },
  // docs/api.md#versionsentity: a record as it was at a time, from its version snapshots
  { ...route('/versions/entity', CLIENT_AUTH, ['owner', 'direct_access', 'direct_read_access'], versions.entityAt, { summary: 'A record as it was at a time', params: ['type_name!', 'id', 'uuid', 'timestamp!', 'attributes', 'attribute_name'] }), reads: READS },
  // docs/activity.md: what happened to one account (sign-ins, failed sign-ins, changes of how it signs in), newest first
  route('/entity.disable', CLIENT_AUTH, ['owner', 'direct_access'], lifecycle.entityDisable, { summary: 'Disables an account: no sign-in by any method, every session ended; until enabled or until a time', params: ['type_name', ...RECORD, 'until', 'reason'] }),
  { ...route('/entity.export', CLIENT_AUTH, ['owner', 'direct_access', 'direct_read_access'], lifecycle.entityExport, { summary: 'A record and everything kept of the person as one document (the right of access); no secret', params: ['type_name', ...RECORD] }), reads: READS },
  route('/entity.erase', CLIENT_AUTH, ['owner', 'direct_access'], lifecycle.entityErase, { summary: 'Erases a record and every trace of the person for good (a deleted record\'s history too); a tombstone stays', params: ['type_name', ...RECORD] }),
  route('/entity.enable', CLIENT_AUTH, ['owner', 'direct_access'], lifecycle.entityEnable, { summary: 'Enables a disabled account again', params: ['type_name', ...RECORD] }),
  route('/entity.signOut', CLIENT_AUTH, ['owner', 'direct_access'], lifecycle.entitySignOut, { summary: 'Ends every session of an account; the person is told by email', params: ['type_name', ...RECORD] }),
  route('/entity.resetSecondFactor', CLIENT_AUTH, ['owner', 'direct_access'], lifecycle.entityResetSecondFactor, { summary: "Removes an account's authenticator and recovery codes; the person is told by email", params: ['type_name', ...RECORD] }),
  { ...route('/entity.activity', CLIENT_AUTH, ['owner', 'direct_access', 'direct_read_access'], entityActivity, { summary: "One record's activity, newest first, one page", params: ['type_name', ...RECORD, 'types', 'since', 'until', 'max_results', 'cursor'] }), reads: READS },
  { ...route('/entityType', CLIENT_AUTH, ['owner', 'direct_access', 'direct_read_access'], entity.entityType, { summary: 'The attributes of the user entity type', params: ['type_name!'] }), reads: READS },
  // admin API, owner only
  admin('/clients/add', clients.addClient, { summary: 'Adds a client', params: ['description', 'features'] }),
  admin('/clients/list', clients.listClients, { summary: 'The application\'s clients, with their secrets', params: ['has_features'] }, READS),
  admin('/clients/set_features', clients.setFeatures, { summary: 'Sets a client\'s features', params: ['for_client_id!', 'features!'] }),
  admin('/clients/delete', clients.deleteClient, { summary: 'Deletes a client', params: ['client_id_for_deletion!'] }),
  admin('/clients/reset_secret', clients.resetSecret, { summary: 'Gives a client a new secret', params: ['for_client_id!'] }),
  admin('/clients/logouts', clients.clientLogouts, { summary: 'The latest logout tokens sent to a client\'s back-channel logout address: state, attempts, the receiver\'s status and first bytes', params: ['for_client_id!', 'limit'] }, READS),
  admin('/providers/add', providers.addProvider, { summary: 'Adds an identity provider of the built-in social login', params: ['name!', 'issuer!', 'provider_client_id!', 'provider_client_secret!', 'kind', 'scopes'] }),
  admin('/providers/list', providers.listProviders, { summary: 'The identity providers, never a secret', params: [] }, READS),
  admin('/providers/remove', providers.removeProvider, { summary: 'Removes an identity provider', params: ['name!'] }),
  admin('/attributes/index', attributes.indexAttributeHandler, { summary: 'Indexes an attribute of the records for /entity.find (built in the background)', params: ['name!'] }),
  admin('/attributes/list', attributes.listIndexedAttributesHandler, { summary: 'The indexed attributes, building or ready', params: [] }, READS),
  admin('/attributes/unindex', attributes.unindexAttributeHandler, { summary: 'Removes an attribute\'s index', params: ['name!'] }),
  // docs/organizations.md: organizations, their members, invitations, roles and domains
  org('/organizations/create', orgs.create, { summary: 'Makes an organization; answers its id', params: ['name!', 'slug!', 'logo_url', 'metadata', 'join_by_domain', 'default_roles', 'owner_uuid'] }, { auth: CLIENT_AUTH }),
  org('/organizations/get', orgs.get, { summary: 'One organization, by organization_id or slug', params: ['organization_id', 'slug'] }, { reads: true, auth: CLIENT_AUTH }),
  org('/organizations/list', orgs.list, { summary: 'The application\'s organizations, oldest first, one page', params: PAGE }, { reads: true, auth: CLIENT_AUTH }),
  org('/organizations/update', orgs.update, { summary: 'Changes an organization (its owners may too)', params: [...ORG, 'name', 'slug', 'logo_url', 'metadata', 'join_by_domain', 'default_roles'] }),
  org('/organizations/delete', orgs.remove, { summary: 'Deletes an organization with its memberships, invitations and domains', params: ORG }, { auth: CLIENT_AUTH }),
  org('/organizations/members/add', orgs.membersAdd, { summary: 'Adds an account to an organization with roles', params: [...ORG, ...RECORD, 'roles!'] }, { ...MEMBER, auth: CLIENT_AUTH }),
  org('/organizations/members/list', orgs.membersList, { summary: 'An organization\'s members with their roles, one page', params: [...ORG, ...PAGE] }, { reads: true }),
  org('/organizations/members/set_roles', orgs.membersSetRoles, { summary: 'Sets a member\'s roles (owners and admins may; only an owner gives or takes owner)', params: [...ORG, ...RECORD, 'roles!'] }, MEMBER),
  org('/organizations/members/remove', orgs.membersRemove, { summary: 'Removes a member, or leaves (the last owner stays)', params: [...ORG, ...RECORD] }, MEMBER),
  org('/organizations/of', orgs.of, { summary: 'An account\'s organizations with its roles, the active one first', params: RECORD }, { reads: true }),
  org('/organizations/switch', orgs.switchTo, { summary: 'Makes one of the person\'s organizations the active one', params: ORG }, { auth: ['access_token'] }),
  org('/organizations/invitations/create', orgs.invitationsCreate, { summary: 'Invites an address to an organization with roles; the link goes by email', params: [...ORG, 'email!', 'roles', 'locale'] }),
  org('/organizations/invitations/list', orgs.invitationsList, { summary: 'An organization\'s invitations, newest first, one page', params: [...ORG, ...PAGE] }, { reads: true }),
  org('/organizations/invitations/revoke', orgs.invitationsRevoke, { summary: 'Revokes a pending invitation', params: [...ORG, 'invitation_id!'] }),
  org('/organizations/invitations/accept', orgs.invitationsAccept, { summary: 'The person accepts an invitation with the token of its link', params: ['token!'] }, { auth: ['access_token'] }),
  org('/organizations/roles/define', orgs.rolesDefine, { summary: 'Defines a role of the organizations (or gives a built-in one permissions)', params: ['name!', 'description', 'permissions'] }, { auth: CLIENT_AUTH }),
  org('/organizations/roles/list', orgs.rolesList, { summary: 'The roles of the organizations with their permissions', params: [] }, { reads: true, auth: CLIENT_AUTH }),
  org('/organizations/roles/remove', orgs.rolesRemove, { summary: 'Removes a defined role; its holders lose it', params: ['name!'] }, { auth: CLIENT_AUTH }),
  org('/organizations/domains/add', orgs.domainsAdd, { summary: 'Claims an email domain for an organization', params: [...ORG, 'domain!', 'verified', 'joinable'] }),
  org('/organizations/domains/set_joinable', orgs.domainsJoinable, { summary: 'Lets accounts at a claimed domain join the organization, or no longer (the application only)', params: [...ORG, 'domain!', 'joinable!'] }),
  org('/organizations/domains/verify', orgs.domainsVerify, { summary: 'Verifies a claimed domain', params: [...ORG, 'domain!'] }),
  org('/organizations/domains/remove', orgs.domainsRemove, { summary: 'Removes a claimed domain', params: [...ORG, 'domain!'] }),
  org('/organizations/domains/list', orgs.domainsList, { summary: 'An organization\'s claimed domains', params: ORG }, { reads: true }),
  // docs/organizations.md#connections: an organization's own identity provider (SAML or OpenID)
  { ...org('/organizations/connections/add', orgs.connectionsAdd, { summary: 'Adds an enterprise connection to an organization: SAML (metadata or metadata_url) or OpenID (issuer, client_id, client_secret)', params: [...ORG, 'type!', 'name', 'metadata', 'metadata_url', 'idp_initiated', 'issuer', 'client_id', 'client_secret', 'required', 'attributes', 'groups'] }), size: METADATA_SIZE },
  org('/organizations/connections/list', orgs.connectionsList, { summary: 'An organization\'s enterprise connections, never a secret', params: ORG }, { reads: true }),
  { ...org('/organizations/connections/update', orgs.connectionsUpdate, { summary: 'Changes an enterprise connection', params: [...ORG, 'connection_id!', 'name', 'metadata', 'metadata_url', 'idp_initiated', 'issuer', 'client_id', 'client_secret', 'required', 'attributes', 'groups'] }), size: METADATA_SIZE },
  org('/organizations/connections/remove', orgs.connectionsRemove, { summary: 'Removes an enterprise connection', params: [...ORG, 'connection_id!'] }),
  // docs/scim.md: an organization's SCIM tokens, and which of its directory's groups give which roles
  org('/organizations/scim/tokens/create', orgs.scimTokensCreate, { summary: 'A SCIM token for an organization\'s directory; the token is in this answer only', params: [...ORG, 'description'] }),
  org('/organizations/scim/tokens/list', orgs.scimTokensList, { summary: 'An organization\'s SCIM tokens, never a token', params: ORG }, { reads: true }),
  org('/organizations/scim/tokens/revoke', orgs.scimTokensRevoke, { summary: 'Revokes a SCIM token: the directory\'s next call with it is refused', params: [...ORG, 'token_id!'] }),
  org('/organizations/scim/configure', orgs.scimConfigure, { summary: 'Maps the directory\'s groups to the organization\'s roles', params: [...ORG, 'group_roles!'] }),
  org('/organizations/scim/settings', orgs.scimSettingsGet, { summary: 'The organization\'s SCIM address and group mapping', params: ORG }, { reads: true }),
  admin('/webhooks/add', webhooks.addEndpoint, { summary: 'Adds a webhook endpoint; its secret (whsec_…) is in this answer only', params: ['url!', 'events!', 'description', 'include_record'] }),
  admin('/webhooks/list', webhooks.listEndpoints, { summary: 'The webhook endpoints, never a secret', params: [] }, READS),
  admin('/webhooks/remove', webhooks.removeEndpoint, { summary: 'Removes a webhook endpoint', params: ['id!'] }),
  admin('/webhooks/test', webhooks.testEndpoint, { summary: 'Sends a ping to a webhook endpoint, delivered like any event', params: ['id!'] }),
  admin('/webhooks/deliveries', webhooks.endpointDeliveries, { summary: 'A webhook endpoint\'s latest deliveries: state, attempts, the receiver\'s status and first bytes', params: ['id!', 'limit'] }, READS),
  admin('/webhooks/disable', webhooks.enableEndpoint(false), { summary: 'Disables a webhook endpoint: nothing is sent to it; its deliveries wait', params: ['id!'] }),
  admin('/webhooks/enable', webhooks.enableEndpoint(true), { summary: 'Enables a webhook endpoint again: what waited is sent', params: ['id!'] }),
  admin('/webhooks/redeliver', webhooks.redeliver, { summary: 'Sends a webhook delivery again, or every one given up since a time', params: ['id!', 'delivery', 'since'] }),
  admin('/webhooks/rotate_secret', webhooks.rotateEndpointSecret, { summary: 'A new secret for a webhook endpoint; the previous one signs too for 24 hours', params: ['id!'] }),
  // docs/saml.md#service-providers: the SAML service providers of the application's identity provider
  { ...admin('/saml/service_providers/add', saml.addProvider, { summary: 'Registers a SAML service provider from its metadata', params: ['metadata!', 'name', 'name_id_format', 'attributes'] }), size: METADATA_SIZE },
  admin('/saml/service_providers/list', saml.listProviders, { summary: 'The SAML service providers', params: [] }, READS),
  { ...admin('/saml/service_providers/update', saml.updateProvider, { summary: 'Changes a SAML service provider: metadata, name, NameID format, attributes', params: ['id!', 'metadata', 'name', 'name_id_format', 'attributes'] }), size: METADATA_SIZE },
  admin('/saml/service_providers/remove', saml.removeProvider, { summary: 'Removes a SAML service provider', params: ['id!'] }),
  // docs/openid-connect.md#apis: the application's APIs (resource servers) and the scopes of their JWT access tokens
  admin('/apis/add', apis.addResourceServer, { summary: 'Registers an API by its resource indicator, with its scopes and token lifetime', params: ['identifier!', 'name', 'scopes', 'token_lifetime', 'rbac', 'permissions_in_token'] }),
  admin('/apis/list', apis.listResourceServers, { summary: 'The APIs', params: [] }, READS),
  admin('/apis/update', apis.updateResourceServer, { summary: 'Changes an API: name, scopes, token lifetime, role-based access', params: ['id!', 'name', 'scopes', 'token_lifetime', 'rbac', 'permissions_in_token'] }),
  admin('/apis/grant', apis.grantResourceServer, { summary: 'The scopes of an API a client may ask for its own tokens (client credentials)', params: ['id!', 'for_client_id!', 'scopes'] }),
  admin('/apis/remove', apis.removeResourceServer, { summary: 'Removes an API: no token is issued for it any more', params: ['id!'] }),
  admin('/roles/define', apis.defineRole, { summary: 'Defines a role of the application: the scopes of its APIs it gives', params: ['name!', 'description', 'permissions'] }),
  admin('/roles/list', apis.listRoles, { summary: 'The application\'s roles', params: [] }, READS),
  admin('/roles/remove', apis.removeRole, { summary: 'Removes a role, from every account holding it', params: ['name!'] }),
  admin('/roles/assign', apis.changeRoles(true), { summary: 'Gives an account roles of the application', params: [...RECORD, 'roles!'] }),
  admin('/roles/unassign', apis.changeRoles(false), { summary: 'Takes roles of the application from an account', params: [...RECORD, 'roles!'] }),
  admin('/roles/of', apis.rolesOfAccount, { summary: 'The roles of the application an account holds', params: [...RECORD] }, READS),
  admin('/settings/get', settings.getSetting, { summary: 'One setting (a client\'s, else the application\'s)', params: ['key!', 'for_client_id'] }, READS),
  admin('/settings/items', settings.listSettings, { summary: 'Every setting of a client, with the application\'s defaults', params: ['for_client_id'] }, READS),
  admin('/settings/keys', settings.settingKeys, { summary: 'The names of a client\'s settings', params: ['for_client_id'] }, READS),
  admin('/settings/set', settings.setSetting, { summary: 'Sets a client setting', params: ['key!', 'value!', 'for_client_id'] }),
  admin('/settings/set_multi', settings.setSettings, { summary: 'Sets several client settings', params: ['items!', 'for_client_id'] }),
  admin('/settings/delete', settings.deleteSetting, { summary: 'Deletes a client setting', params: ['key!', 'for_client_id'] }),
  admin('/settings/set_default', settings.setDefaultSetting, { summary: 'Sets an application-wide default setting', params: ['key!', 'value!'] }),
  // docs/audit.md: what clients and operators changed, newest first
  admin('/audit/list', listAuditEntries, { summary: 'The audit log: changes made by clients and operators, newest first', params: ['max_results', 'before', 'type', 'actor', 'subject', 'since', 'until'] }, READS),
];
