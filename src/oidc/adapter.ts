import { createHash } from 'node:crypto';
import { logoutTargetOf } from '../domain/backchannel-logout';
import type { Adapter, AdapterPayload } from 'oidc-provider';
import type { Application } from '../domain/storage/applications';
import type { CredentialKind } from '../domain/storage/credentials';
import { refusesCredential, type UserRecord } from '../domain/storage/records';
import { isHttpUrl, settingOfList } from '../domain/settings';
import { sha256Hex } from '../domain/secrets';
import type { Services } from '../usecases/services';
import { inProviderRealm } from './realm';
import { grantEnds, providerRequest, sessionEnds, takeLogoutsOwed } from '../web/provider-request';
import { TOKEN_EXCHANGE } from './organizations';
import { DEVICE_CODE_GRANT } from '../domain/openid-routes';
import {
  destroyProviderGrantState, destroyProviderObject, destroyProviderToken, endProviderGrant, saveProviderObject, saveProviderToken, spendProviderObject,
  spendProviderToken, type ProviderParty,
} from '../usecases/oidc/provider-storage';

/**
 * oidc-provider's storage contract over Gatehouse's stores (docs/openid-connect.md#storage), one
 * adapter per model and application:
 *
 * - Codes and tokens are credentials, beside the original API's: found by the SHA-256 of their
 *   value (never the value), their grant as the family, spent by the same conditional UPDATE, so
 *   single use holds across pods and database nodes. A consume that loses a race throws the
 *   provider's `invalid_grant`, as a code or refresh token used twice does; `revokeByGrantId`
 *   spends the grant's family. A spent access token is not found (revoked); a spent code or
 *   refresh token is found `consumed`, which the provider answers by revoking its grant.
 * - Sessions, interactions, grants, replay markers and pushed requests are the OpenID state store's.
 * - Clients are the application's login clients: their redirect URIs, secrets and settings.
 */

type Db = Services['db'];
interface AdapterDeps {
  db: Db; work: Services['work']; clock: Services['clock']; clients: Services['clients']; box: Services['box'];
  invalidGrant: (why: string) => Error; invalidRequest: (why: string) => Error; invalidClientAuth: (why: string) => Error; invalidToken: (why: string) => Error;
}

/**
 * A payload as stored: never a value that signs anyone in. The provider keeps an opaque token's
 * value as its `jti`, a session's cookie value as its `jti`, an interaction's and a pushed
 * request's bearer value as theirs, and an interaction its session's cookie: a token's `jti` is
 * dropped (its row is found by the hash of that value, and `find` puts it back), the others are
 * sealed with SECRET_KEY, bound to the application. (A grant's `jti` is its id, no bearer value.)
 */
const SEALED = 'gatehouse:sealed:';
const BEARER_IDS: ReadonlySet<string> = new Set(['Session', 'Interaction', 'PushedAuthorizationRequest']);
function storedPayload(box: Services['box'], app: Application, payload: AdapterPayload, token: boolean, model = ''): Record<string, unknown> {
  const { jti, ...rest } = payload as AdapterPayload & { jti?: unknown; session?: { cookie?: unknown } };
  const stored: Record<string, unknown> = { ...rest };
  if (!token && typeof jti === 'string') stored.jti = BEARER_IDS.has(model) ? SEALED + box.seal(jti, `oidc ${app.id}`) : jti;
  // an interaction of the device flow names its device code's value: sealed like the others
  if (typeof (rest as { deviceCode?: unknown }).deviceCode === 'string') stored.deviceCode = SEALED + box.seal((rest as { deviceCode: string }).deviceCode, `oidc ${app.id}`);
  const session = (rest as { session?: { cookie?: unknown } }).session;
  if (session && typeof session.cookie === 'string') stored.session = { ...session, cookie: SEALED + box.seal(session.cookie, `oidc ${app.id}`) };
  return stored;
}
function openedPayload(box: Services['box'], app: Application, stored: Record<string, unknown>): AdapterPayload {
  const open = (v: unknown) => (typeof v === 'string' && v.startsWith(SEALED) ? box.open(v.slice(SEALED.length), `oidc ${app.id}`) : v);
  const session = stored.session as { cookie?: unknown } | undefined;
  return {
    ...stored, ...(stored.jti !== undefined && { jti: open(stored.jti) }), ...(stored.userCode !== undefined && { userCode: open(stored.userCode) }),
    ...(stored.deviceCode !== undefined && { deviceCode: open(stored.deviceCode) }),
    ...(session?.cookie !== undefined && { session: { ...session, cookie: open(session.cookie) } }),
  } as AdapterPayload;
}

const TOKEN_KINDS: Readonly<Record<string, CredentialKind>> = {
  AuthorizationCode: 'oidc_code', AccessToken: 'oidc_access_token', RefreshToken: 'oidc_refresh_token', ClientCredentials: 'oidc_client_token',
  DeviceCode: 'oidc_device_code',
};
/**
 * What a user code's row is found by: a keyed digest (SECRET_KEY) of the application and the code as
 * the provider normalizes it (its letters, in capitals): 25 billion codes are too few for a bare hash.
 */
const userCodeHash = (box: Services['box'], applicationId: number, userCode: string) =>
  Buffer.from(box.tag(`${applicationId}\n${userCode}`, 'oidc user code'), 'base64url').toString('hex');
const SPENT_NAMES: Readonly<Record<string, string>> = { AuthorizationCode: 'authorization code', RefreshToken: 'refresh token', DeviceCode: 'device code' };
/** Tokens a bearer presents: spent means revoked, and a revoked one is not found. */
const BEARER: ReadonlySet<string> = new Set(['AccessToken', 'ClientCredentials']);

const epoch = (d: Date) => Math.floor(d.getTime() / 1000);
const scopesOf = (scope: unknown) => (typeof scope === 'string' ? scope.split(' ').filter((s) => s !== '') : []);

/** The record id of an account (the provider names accounts by uuid, their `sub`): what ends with the record's sessions. */
type EntityOf = (payload: AdapterPayload) => Promise<number | null>;

/** Who the provider's request is for, as the use cases take it: the account, the app, where the request came from. */
const partyOf = (entityId: number | null, clientId: unknown): ProviderParty => {
  const request = providerRequest();
  return { entityId, clientId: typeof clientId === 'string' ? clientId : request.client ?? null, origin: request.origin };
};

/** The adapter factory of one application's provider. */
export function adapterFactory(deps: AdapterDeps, app: Application) {
  // a uuid names one record for good: a few thousand remembered spare a read per token
  const ids = new Map<string, number>();
  const entityOf: EntityOf = async ({ accountId }) => {
    if (typeof accountId !== 'string') return null;
    let id = ids.get(accountId);
    if (id === undefined) {
      id = (await deps.db.records.find(app.id, { uuid: accountId }))?.id;
      if (id === undefined) return null;
      if (ids.size >= 10_000) ids.clear();
      ids.set(accountId, id);
    }
    return id;
  };
  return (model: string): Adapter => (model === 'Client' ? clientAdapter(deps, app)
    : TOKEN_KINDS[model] ? tokenAdapter(deps, app, model, entityOf) : stateAdapter(deps, app, model, entityOf));
}

function tokenAdapter(deps: AdapterDeps, app: Application, model: string, entityOf: EntityOf): Adapter {
  const { db, clock, clients, box, invalidGrant } = deps;
  const refused = (record: UserRecord | undefined, issuedAt: Date | undefined) => record !== undefined && refusesCredential(record, issuedAt, clock.now());
  const kind = TOKEN_KINDS[model];
  const clientRowId = async (clientId: unknown) => (typeof clientId === 'string' ? (await clients.find(app.id, clientId))?.id ?? null : null);
  // whose each token found last is (the provider finds a code or refresh token, then spends it): its spend's event names them without a read
  const found = new Map<string, { entityId: number | null; clientId: unknown }>();
  const whose = async (hash: string) => {
    const known = found.get(hash);
    if (known) return known;
    const row = await db.credentials.find(app.id, kind, hash);
    return { entityId: row?.entityId ?? null, clientId: (row?.extra as AdapterPayload | null)?.clientId };
  };
  const adapter: Adapter = {
    // one statement that commits alone: a new token inserted, one saved again given its new payload
    async upsert(id, payload, expiresIn) {
      const now = clock.now();
      const [entityId, clientId] = await Promise.all([entityOf(payload), clientRowId(payload.clientId)]);
      const expiresAt = new Date(now.getTime() + (expiresIn ?? 3600) * 1000);
      const family = typeof payload.grantId === 'string' ? payload.grantId : null;
      // a device code is found by its user code too: a row of its own, the device code's value sealed in it, written
      // with the device code's first save (the saves after it, as the person confirms, change the device code only)
      const userCode = model === 'DeviceCode' && typeof payload.userCode === 'string' && !(await db.credentials.find(app.id, kind, sha256Hex(id)))
        ? payload.userCode : undefined;
      await saveProviderToken(deps, {
        app, party: partyOf(entityId, payload.clientId), scopes: scopesOf(payload.scope),
        token: {
          applicationId: app.id, kind, valueHash: sha256Hex(id), entityId, clientId, forClientId: null,
          redirectUri: typeof payload.redirectUri === 'string' ? payload.redirectUri : null,
          // a device code's user code is sealed as the others' bearer values are (its row is found by the hash)
          extra: { ...storedPayload(box, app, payload, true), ...(userCode !== undefined && { userCode: SEALED + box.seal(userCode, `oidc ${app.id}`) }) },
          family, expiresAt,
        },
        ...(userCode !== undefined && {
          also: {
            applicationId: app.id, kind: 'oidc_user_code', valueHash: userCodeHash(box, app.id, userCode), entityId, clientId, forClientId: null, redirectUri: null,
            extra: { device: box.seal(id, `oidc user code ${app.id}`) }, family, expiresAt,
          },
        }),
      });
    },
    async find(id) {
      const hash = sha256Hex(id);
      const row = await db.credentials.find(app.id, kind, hash);
      if (!row || (row.usedAt && BEARER.has(model))) return undefined;
      // nothing of a disabled account works, not even a token issued while it was being disabled (a code
      // or a refresh token is refused by the provider itself, which looks the account up: findAccount)
      if (BEARER.has(model) && row.entityId !== null && refused(await db.records.find(app.id, { id: row.entityId }), row.createdAt)) return undefined;
      if (!BEARER.has(model)) {
        if (found.size >= 1_000) found.clear();
        found.set(hash, { entityId: row.entityId, clientId: (row.extra as AdapterPayload | null)?.clientId });
      }
      return inProviderRealm({ ...openedPayload(box, app, row.extra as Record<string, unknown>), jti: id, ...(row.usedAt && { consumed: epoch(row.usedAt) }) });
    },
    async findByUid() {
      return undefined;
    },
    async findByUserCode(userCode) {
      if (model !== 'DeviceCode' || userCode.length > 64) return undefined;
      const row = await db.credentials.find(app.id, 'oidc_user_code', userCodeHash(box, app.id, userCode));
      const sealed = row?.extra?.device;
      if (typeof sealed !== 'string') return undefined;
      let id: string;
      try {
        id = box.open(sealed, `oidc user code ${app.id}`);
      } catch {
        return undefined;
      }
      return adapter.find(id);
    },
    async consume(id) {
      const hash = sha256Hex(id);
      const { entityId, clientId } = await whose(hash);
      found.delete(hash);
      // one conditional UPDATE with its event, committed alone: of callers racing on any pod and node, one spends it
      if (await spendProviderToken(deps, { app, kind, valueHash: hash, party: partyOf(entityId, clientId) })) return;
      // another request spent it first (two redemptions of one code, a stolen refresh token racing
      // its owner, on any pod): this one gets nothing, and the grant ends, as for a reuse later
      const family = (await db.credentials.find(app.id, kind, hash))?.family;
      if (family) await endProviderGrant(deps, { app, grantId: family, why: 'reuse', party: partyOf(entityId, clientId) });
      throw invalidGrant(`${SPENT_NAMES[model] ?? 'token'} already used`);
    },
    async destroy(id) {
      await destroyProviderToken(deps, { app, kind, valueHash: sha256Hex(id) });
    },
    async revokeByGrantId(grantId) {
      await endProviderGrant(deps, { app, grantId, why: grantEnds(providerRequest()), party: partyOf(null, undefined) });
    },
  };
  return adapter;
}

/** State objects spent once (a pushed request's `request_uri`): a second use is refused even when the two race. */
const SINGLE_USE: ReadonlySet<string> = new Set(['PushedAuthorizationRequest']);
/** How long a sign-in (the provider's interaction) may last: ttl.Interaction. */
const INTERACTION_SECONDS = 3600;

function stateAdapter(deps: AdapterDeps, app: Application, model: string, entityOf: EntityOf): Adapter {
  const { db, clock, box, invalidGrant, invalidRequest, invalidClientAuth, invalidToken } = deps;
  const opened = (o: Awaited<ReturnType<Db['oidcState']['find']>>) => {
    if (!o || o.expiresAt.getTime() <= clock.now().getTime()) return undefined;
    return inProviderRealm({ ...openedPayload(box, app, o.payload), ...(o.consumedAt && { consumed: epoch(o.consumedAt) }) });
  };
  return {
    async upsert(id, payload, expiresIn) {
      const entityId = await entityOf(payload);
      const object = {
        model, idHash: sha256Hex(id), uidHash: typeof payload.uid === 'string' ? sha256Hex(payload.uid) : null,
        // a grant's own state ends with it; a pending sign-in (an interaction naming the grant it would extend) does not:
        // another account signing in in the same browser ends the first one's grants, and its own sign-in goes on
        grantId: model !== 'Interaction' && typeof payload.grantId === 'string' ? payload.grantId : null,
        entityId, payload: storedPayload(box, app, payload, false, model),
        // a pushed request is kept as long as a sign-in it started may last (the provider reads its own expiry from the
        // payload): the sign-in's end finds it to spend it, however long the person took, so a request_uri gives one code
        expiresAt: new Date(clock.now().getTime() + (model === 'PushedAuthorizationRequest' ? Math.max(expiresIn ?? 0, INTERACTION_SECONDS) : expiresIn ?? 3600) * 1000),
      };
      // a grant saved by the interaction page: what it gives the app (consent implied for a login client, unless its page asked)
      const granted = model === 'Grant' ? providerRequest().granted : undefined;
      // a client assertion's marker (private_key_jwt) is saved once: the provider looks it up, then saves it, so two
      // requests with one assertion on two pods would both pass a lookup; the insert lets one through
      const once = model === 'ReplayDetection';
      // a session saved as an app's logout leaves it: what the logout owes is recorded with it
      const logouts = model === 'Session' ? takeLogoutsOwed() : undefined;
      const saved = await saveProviderObject(deps, { app, object, once, party: partyOf(entityId, payload.clientId), granted, logouts });
      if (saved) return;
      // the marker of a DPoP proof (its id is the digest of the client and the proof's jti) or of a client assertion: the
      // error the provider gives each when it finds the marker itself (a proof replayed at the token endpoint is invalid_grant,
      // at a pushed request invalid_request, at userinfo invalid_token)
      const { dpopJti, route } = providerRequest();
      if (dpopJti !== undefined && typeof payload.iss === 'string' && createHash('sha256').update(`${payload.iss}${dpopJti}`).digest('base64url') === id) {
        throw (route === 'token' ? invalidGrant : route === 'pushed_authorization_request' ? invalidRequest : invalidToken)('DPoP proof JWT Replay detected');
      }
      throw invalidClientAuth('client assertion tokens must only be used once');
    },
    find: async (id) => opened(await db.oidcState.find(app.id, model, sha256Hex(id))),
    findByUid: async (uid) => opened(await db.oidcState.findByUid(app.id, model, sha256Hex(uid))),
    async findByUserCode() {
      return undefined;
    },
    async consume(id) {
      const spent = await spendProviderObject(deps, { app, model, idHash: sha256Hex(id) });
      if (!spent && SINGLE_USE.has(model)) throw invalidRequest('this request_uri was used already');
    },
    async destroy(id) {
      // the provider's session ended by a sign-out from an app: the account's activity says so
      const why = model === 'Session' ? sessionEnds(providerRequest()) : undefined;
      const logouts = model === 'Session' ? takeLogoutsOwed() : undefined;
      await destroyProviderObject(deps, { app, model, idHash: sha256Hex(id), why, party: partyOf(null, undefined), logouts });
    },
    async revokeByGrantId(grantId) {
      await destroyProviderGrantState(deps, { app, grantId });
    },
  };
}

/** What an OpenID client's settings may say, checked like the application's other settings. */
const AUTH_METHODS = ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none'] as const;
const GRANT_TYPES = ['authorization_code', 'refresh_token', 'client_credentials', DEVICE_CODE_GRANT] as const;


/**
 * The application's login clients as OpenID clients: `redirect_uris` (the client's, else the
 * application's), `post_logout_redirect_uris`, `token_endpoint_auth_method` (client_secret_basic
 * by default; `private_key_jwt` with the client's public keys, `jwks` or `jwks_uri`; `none` for a
 * public client, which must use PKCE), `grant_types`, `scope` (the scopes it may ask for),
 * `id_token_signed_response_alg`, `allowed_origins`, `require_pushed_authorization_requests`,
 * `require_signed_request_object`, `dpop_bound_access_tokens`, `security_profile` (fapi2), `token_endpoint_auth_signing_alg`, `backchannel_logout_uri`,
 * `backchannel_logout_session_required`. Nothing else registers a client: there is no second registry.
 */
function clientAdapter({ clients }: AdapterDeps, app: Application): Adapter {
  return {
    async find(clientId) {
      const found = await clients.withSecret(app.id, clientId);
      if (!found || !found.client.features.includes('login_client')) return undefined;
      const s = found.client.settings;
      const method = AUTH_METHODS.find((m) => m === s.token_endpoint_auth_method) ?? 'client_secret_basic';
      // a client's own public keys, given or at its address: what its assertions (private_key_jwt) and request objects are verified with
      const keys = publicKeysOf(s);
      // set to private_key_jwt with no keys yet: no key of its signs anything, so nothing authenticates it
      if (method === 'private_key_jwt' && !keys.jwks && !keys.jwks_uri) return undefined;
      // the FAPI 2.0 security profile is for confidential clients with a key of their own: any other is not served until it has one
      const fapi2 = s.security_profile === 'fapi2';
      if (fapi2 && method !== 'private_key_jwt') return undefined;
      // the one algorithm its assertions and request objects are signed with: its setting, else (FAPI 2.0) the one its keys in jwks are for
      // (a client with its own key only: one with a secret signs nothing of the kind)
      const named = method === 'private_key_jwt' ? CLIENT_SIGNING_ALGS.find((alg) => alg === s.token_endpoint_auth_signing_alg) : undefined;
      const signingAlgorithm = fapi2 ? named ?? fapiAlgorithmOf(keys) : named;
      // a FAPI 2.0 client whose algorithm is not known (keys at jwks_uri, or of several kinds), or is one FAPI 2.0 does not allow, is not served until its setting names one
      if (fapi2 && (signingAlgorithm === undefined || !FAPI_ALGS.includes(signingAlgorithm))) return undefined;
      const logout = logoutTargetOf(s);
      // a public client proves nothing at the token endpoint: it gets no token for itself
      // (a FAPI 2.0 client signs people in through pushed requests with PKCE only: no device flow, which has neither)
      const grants = settingOfList(s.grant_types).filter((g) => (GRANT_TYPES as readonly string[]).includes(g) && !(method === 'none' && g === 'client_credentials')
        && !(s.security_profile === 'fapi2' && g === DEVICE_CODE_GRANT));
      const redirectUris = settingOfList(s.redirect_uris ?? app.settings.redirect_uris).filter(isHttpUrl);
      // a client with nowhere to send a browser back to has no code flow (the provider would refuse it whole, even at
      // introspection): it keeps the grants that need no redirect
      const chosen = (grants.length > 0 ? grants : ['authorization_code', 'refresh_token'])
        .filter((g) => redirectUris.length > 0 || g !== 'authorization_code');
      // a client with refresh tokens exchanges one for an organization's access token (organizations.ts)
      const grantTypes = chosen.includes('refresh_token') ? [...chosen, TOKEN_EXCHANGE] : chosen;
      return inProviderRealm({
        client_id: found.client.clientId,
        ...(method === 'client_secret_basic' || method === 'client_secret_post' ? { client_secret: found.secret } : {}),
        ...keys,
        client_name: found.client.description || found.client.clientId,
        redirect_uris: redirectUris,
        post_logout_redirect_uris: settingOfList(s.post_logout_redirect_uris).filter(isHttpUrl),
        grant_types: grantTypes,
        response_types: grantTypes.includes('authorization_code') ? ['code'] : [],
        token_endpoint_auth_method: method,
        allowed_origins: settingOfList(s.allowed_origins),
        // the scopes it may ask for (setting scope, checked when set); all of the provider's when unset
        ...(s.scope && { scope: settingOfList(s.scope).join(' ') }),
        ...((s.id_token_signed_response_alg === 'ES256' || s.id_token_signed_response_alg === 'RS256') && { id_token_signed_response_alg: s.id_token_signed_response_alg }),
        // FAPI 2.0 allows no RS256: its ID tokens are ES256
        ...(fapi2 && { id_token_signed_response_alg: 'ES256' }),
        // pushed authorization requests, signed request objects and sender-constrained tokens required of it (each implied by FAPI 2.0)
        ...((fapi2 || s.require_pushed_authorization_requests === 'true') && { require_pushed_authorization_requests: true }),
        ...(s.require_signed_request_object === 'true' && { require_signed_request_object: true }),
        ...((fapi2 || s.dpop_bound_access_tokens === 'true') && { dpop_bound_access_tokens: true }),
        ...(fapi2 && { security_profile: 'fapi2' }),
        // back-channel logout (docs/openid-connect.md#back-channel-logout): where its logout tokens go, and whether they (and its ID tokens) name the session
        ...(logout && { backchannel_logout_uri: logout.uri, backchannel_logout_session_required: logout.sessionRequired }),
        // FAPI 2.0 signs with PS256, ES256 or EdDSA only: a fapi2 client's assertions and request objects with the one its key is for
        ...(signingAlgorithm !== undefined && { token_endpoint_auth_signing_alg: signingAlgorithm, request_object_signing_alg: signingAlgorithm }),
      });
    },
    async upsert() {
      throw new Error('OpenID clients are the application\'s login clients: manage them with the admin API or the CLI');
    },
    async findByUid() {
      return undefined;
    },
    async findByUserCode() {
      return undefined;
    },
    async consume() {
      return undefined;
    },
    async destroy() {
      return undefined;
    },
    async revokeByGrantId() {
      return undefined;
    },
  };
}

/** What a client's own key may sign its assertions and request objects with (setting token_endpoint_auth_signing_alg), and those of them FAPI 2.0 allows. */
const CLIENT_SIGNING_ALGS = ['ES256', 'ES384', 'PS256', 'RS256', 'EdDSA'] as const;
const FAPI_ALGS: readonly string[] = ['ES256', 'PS256', 'EdDSA'];

/**
 * The one algorithm FAPI 2.0 allows for a client's key set (its setting `jwks`; one fetched from
 * `jwks_uri` is not known here): ES256 for P-256, EdDSA for Ed25519, PS256 for RSA; undefined for
 * another key or a mix, whose signatures the provider's own list then governs.
 */
function fapiAlgorithmOf(keys: Pick<AdapterPayload, 'jwks' | 'jwks_uri'>): 'ES256' | 'EdDSA' | 'PS256' | undefined {
  const set = (keys.jwks as { keys?: Array<{ kty?: string; crv?: string }> } | undefined)?.keys ?? [];
  const algorithms = new Set(set.map((k) => (k.kty === 'EC' && k.crv === 'P-256' ? 'ES256' : k.kty === 'OKP' && k.crv === 'Ed25519' ? 'EdDSA' : k.kty === 'RSA' ? 'PS256' : undefined)));
  return algorithms.size === 1 ? [...algorithms][0] : undefined;
}

/** A private_key_jwt client's public keys: its setting `jwks` (a JWK set, checked when set) or `jwks_uri`. */
function publicKeysOf(settings: Record<string, string>): Pick<AdapterPayload, 'jwks' | 'jwks_uri'> {
  if (settings.jwks) {
    try {
      return { jwks: JSON.parse(settings.jwks) as AdapterPayload['jwks'] };
    } catch {
      return {};
    }
  }
  return settings.jwks_uri && isHttpUrl(settings.jwks_uri) ? { jwks_uri: settings.jwks_uri } : {};
}
