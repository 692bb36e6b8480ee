import type { AuthScheme } from './authenticate';
import type { Feature } from '../domain/clients';
import type { Handler } from './context';
import * as access from './handlers/access';
import * as clients from './handlers/admin-clients';
import * as entity from './handlers/entity';
import * as entityApi from './handlers/entity-api';
import { forgotPassword, verifyEmail } from './handlers/email-requests';
import { refreshAccessToken } from './handlers/refresh-access-token';
import { registerTraditional } from './handlers/register';
import { signInTraditional } from './handlers/sign-in';
import * as social from './handlers/social';
import { token } from './handlers/token';
import { updateProfile } from './handlers/update-profile';
import * as versions from './handlers/versions';
import * as providers from './handlers/admin-providers';
import * as settings from './handlers/admin-settings';
import type { ErrorStyle } from './status';

/**
 * The one route table: every endpoint with its methods, where it reads parameters, the
 * authentication schemes it accepts, the client kinds (features) it admits, how its errors map to
 * HTTP statuses (see status.ts), and whether it only reads (a signed request to any other endpoint
 * is accepted once). docs/api.md#client-kinds says which kinds each endpoint admits.
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
  /**
   * Bytes of body, and characters of one parameter, the endpoint accepts (default 64 KiB and
   * 16 KiB): more for the endpoints that carry whole records as JSON.
   */
  size?: { body: number; param: number };
  handler: Handler;
}

const CLIENT_AUTH = ['basic', 'signature', 'client_params'] as const;
const ANY_AUTH = ['basic', 'signature', 'client_params', 'client_id', 'none'] as const;
const route = (path: string, auth: Route['auth'], kinds: Route['kinds'], handler: Handler, errors: ErrorStyle = 'capture'): Route => ({
  path, methods: ['GET', 'POST'], params: 'query+body', auth, kinds, errors, handler,
});
const admin = (path: string, handler: Handler, reads = false): Route => ({
  path, methods: ['GET', 'POST'], params: 'query+body', auth: CLIENT_AUTH, kinds: ['owner'], errors: 'capture', reads, handler,
});
const READS = true;
/** A record's attributes are up to 64 KiB of JSON, which URL encoding may triple. */
const RECORD_SIZE = { body: 256 * 1024, param: 256 * 1024 };
/** entity.bulkCreate: up to 1,000 records in one call. */
const BULK_SIZE = { body: 8 * 1024 * 1024, param: 8 * 1024 * 1024 };

/** Login endpoints: a login client named by client_id (apps and pages), or one with its secret (an app's backend). */
const login = (path: string, handler: Handler): Route => ({
  path, methods: ['POST'], params: 'body', auth: ['client_id', 'client_params', 'basic', 'signature', 'none'], kinds: ['login_client'], errors: 'login', handler,
});

export const ROUTES: readonly Route[] = [
  // docs/api.md#access-endpoints: codes and tokens for user records
  route('/access/getAccessToken', CLIENT_AUTH, ['owner', 'access_issuer'], access.getAccessToken),
  route('/access/getAuthorizationCode', CLIENT_AUTH, ['owner', 'access_issuer'], access.getAuthorizationCode),
  route('/access/getCreationToken', CLIENT_AUTH, ['owner', 'access_issuer'], access.getCreationToken),
  route('/access/getVerificationCode', CLIENT_AUTH, ['owner', 'direct_access'], access.getVerificationCode),
  route('/access/useVerificationCode', ANY_AUTH, [], access.useVerificationCode),
  // docs/api.md#oauthtoken: any of the five kinds may exchange, only what was issued for it (signed too, as the
  // original server library signs every call)
  route('/oauth/token', CLIENT_AUTH, ['owner', 'login_client', 'direct_read_access', 'direct_access', 'access_issuer'], token, 'oauth'),
  // docs/api.md#flows: flow-based login endpoints; POST, body only, client_id of a login_client
  login('/oauth/register_native_traditional', registerTraditional),
  login('/oauth/auth_native_traditional', signInTraditional),
  login('/oauth/update_profile_native', updateProfile),
  // the mobile SDKs renew their access token with the refresh secret they sent at sign-in
  login('/oauth/refresh_access_token', refreshAccessToken),
  // docs/api.md#social-login: social login, with a token from the social login application
  login('/oauth/auth_native', social.authNative),
  login('/oauth/register_native', social.registerNative),
  login('/oauth/link_account_native', social.linkAccount),
  login('/oauth/unlink_account_native', social.unlinkAccount),
  // docs/api.md#flows: emails, limited per recipient and per client address
  login('/oauth/forgot_password_native', forgotPassword),
  login('/oauth/verify_email_native', verifyEmail),
  // records: owner credentials or a creation token create; readers or the record's access token read
  { ...route('/entity.create', ANY_AUTH, [], entity.createEntity), size: RECORD_SIZE },
  { ...route('/entity', [...CLIENT_AUTH, 'access_token'], [], entity.readEntity), reads: READS },
  { ...route('/entity.find', CLIENT_AUTH, ['owner', 'direct_access', 'direct_read_access'], entityApi.findEntities), reads: READS },
  { ...route('/entity.count', CLIENT_AUTH, ['owner', 'direct_access', 'direct_read_access'], entityApi.countEntities), reads: READS },
  // writes: owner or direct_access credentials; an access token changes sub-values of its own
  // record only (the handlers check who writes what)
  { ...route('/entity.update', [...CLIENT_AUTH, 'access_token'], [], entityApi.updateEntity), size: RECORD_SIZE },
  { ...route('/entity.replace', [...CLIENT_AUTH, 'access_token'], [], entityApi.replaceEntity), size: RECORD_SIZE },
  route('/entity.delete', [...CLIENT_AUTH, 'access_token'], [], entityApi.deleteEntity),
  { ...route('/entity.bulkCreate', CLIENT_AUTH, ['owner', 'direct_access'], entity.bulkCreateEntities), size: BULK_SIZE },
  // docs/api.md#versionsentity: a record as it was at a time, from its version snapshots
  { ...route('/versions/entity', CLIENT_AUTH, ['owner', 'direct_access', 'direct_read_access'], versions.entityAt), reads: READS },
  { ...route('/entityType', CLIENT_AUTH, ['owner', 'direct_access', 'direct_read_access'], entity.entityType), reads: READS },
  // admin API, owner only
  admin('/clients/add', clients.addClient),
  admin('/clients/list', clients.listClients, READS),
  admin('/clients/set_features', clients.setFeatures),
  admin('/clients/delete', clients.deleteClient),
  admin('/clients/reset_secret', clients.resetSecret),
  admin('/providers/add', providers.addProvider),
  admin('/providers/list', providers.listProviders, READS),
  admin('/providers/remove', providers.removeProvider),
  admin('/settings/get', settings.getSetting, READS),
  admin('/settings/items', settings.listSettings, READS),
  admin('/settings/keys', settings.settingKeys, READS),
  admin('/settings/set', settings.setSetting),
  admin('/settings/set_multi', settings.setSettings),
  admin('/settings/delete', settings.deleteSetting),
  admin('/settings/set_default', settings.setDefaultSetting),
];
