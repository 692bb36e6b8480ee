import { isDisabled } from '../domain/storage/records';
import querystring from 'node:querystring';
import { Readable } from 'node:stream';
import express, { type NextFunction, type Request, type Response } from 'express';
import type Provider from 'oidc-provider';
import type { Configuration, FindAccount, KoaContextWithOIDC } from 'oidc-provider';
import type { Application } from '../domain/storage/applications';
import type { StoredSigningKey } from '../domain/storage/signing-keys';
import { privateJwkOf } from '../domain/signing-keys';
import { isOpenIdProvider } from '../domain/settings';
import { claimMappingOf, claimsOfRecord, claimsOfScopes, OPENID_SCOPES, type ClaimMapping } from '../domain/openid-claims';
import { ACR_VALUES, acrMet, essentialAcrs, requestedAcrs } from '../domain/session';
import { signingKeys } from '../usecases/keys/signing-keys';
import { browserSessionLimits, endSessions } from '../usecases/account/browser-sessions';
import { browserSessionOfRequest } from '../web/account-sign-in';
import { brandOf, escape, markFailedPage, pageLocale, peerOrigin, renderPage, text } from '../web/pages';
import { deviceCodeForm, deviceConfirmForm, deviceDonePage, providerErrorName, sendTooManyCodes } from '../web/device';
import { peerBudgetKey } from '../domain/addresses';
import { takeUserCodeAttempt } from '../usecases/oidc/device-codes';
import { setTimeout as sleep } from 'node:timers/promises';
import { unsafeField } from '../domain/request-values';
import { errors } from '../errors';
import { gatehouseAnswers, isResume, pageErrorOf, requestIdOf, sendErrorPage, sendOwnPage } from './answers';
import type { Services } from '../usecases/services';
import { OIDC_ROUTES, isOidcPath } from '../domain/openid-routes';
import { adapterFactory } from './adapter';
import { oidcProviderModule } from './provider-module';
import { inProviderRealm } from './realm';
import { noteLogoutOwed, noteProviderRoute, noteUserCodeMissed, providerRequest, providerRequestOf, withProviderRequest, type ProviderRequest } from '../web/provider-request';
import { apiResources } from './apis';
import { oweProviderLogout } from '../usecases/oidc/provider-storage';
import { organizationTokens } from './organizations';
import { organizationsClaims } from '../usecases/organizations/tokens';
import { limitOf } from '../domain/organizations';

/**
 * Gatehouse as an OpenID provider (docs/openid-connect.md): one `oidc-provider` per application,
 * whose issuer is the application's public address, over Gatehouse's stores (adapter.ts), signing
 * with the application's keys. Its endpoints live under `/oidc/`, beside the original API, and its
 * discovery document at `/.well-known/openid-configuration`.
 */

const REFRESH_SECONDS = 90 * 86_400;

/**
 * An authorization request for offline_access without consent among its prompts (no prompt,
 * `prompt=login`, an empty prompt): the provider would drop the scope unsaid (OpenID Connect Core
 * 11 asks for consent to offline access), so consent is added to the prompt. A login client's consent is
 * implied (its grant is given without a page, docs/openid-connect.md#consent); a client whose
 * consent page is shown shows it. `prompt=none` stays as it is: a silent sign-in gets no new
 * refresh token, and the token response's `scope` says so.
 */
export function withOfflineConsent(url: string): string {
  const at = url.indexOf('?');
  if (at < 0) return url;
  const query = new URLSearchParams(url.slice(at + 1));
  const prompt = query.get('prompt');
  const scopes = (query.get('scope') ?? '').split(' ');
  if (!scopes.includes('offline_access')) return url;
  const prompts = (prompt ?? '').split(' ').filter((p) => p !== '');
  if (prompts.includes('consent') || prompts.includes('none')) return url;
  query.set('prompt', [...prompts, 'consent'].join(' '));
  return `${url.slice(0, at)}?${query}`;
}

/** The most a pushed request's body may hold (the provider's own limit). */
const PUSHED_BODY_LIMIT = 56 * 1024;

/** A form's body read whole (the provider reads a body from the request stream); undefined past `limit` bytes. */
async function formBody(req: Request, limit: number): Promise<Buffer | undefined> {
  if (Number(req.headers['content-length'] ?? 0) > limit) return undefined;
  const chunks: Buffer[] = [];
  let size = 0;
  // (the request is not destroyed when reading stops early: the answer says why)
  for await (const chunk of req.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/**
 * The request again, as one of its own carrying `body` (read already by formBody), for the provider
 * to read. It keeps what Express made of the request (the client's address behind the trusted
 * proxies, https), which the steps after the provider read: an event's address, the session
 * cookie's name.
 */
function withBody(req: Request, body: Buffer): Request {
  return Object.assign(Readable.from([body]), {
    headers: { ...req.headers, 'content-length': String(body.length) }, rawHeaders: req.rawHeaders, method: req.method, url: req.url,
    socket: req.socket, connection: req.socket, httpVersion: req.httpVersion, httpVersionMajor: req.httpVersionMajor, httpVersionMinor: req.httpVersionMinor,
    ip: req.ip, ips: req.ips, secure: req.secure, protocol: req.protocol, hostname: req.hostname,
  }) as unknown as Request;
}

/**
 * A pushed authorization request (a form POST) given to the provider again with withOfflineConsent's
 * rule applied to its parameters; undefined when it is too large.
 */
async function pushedWithOfflineConsent(req: Request): Promise<Request | undefined> {
  const body = await formBody(req, PUSHED_BODY_LIMIT);
  return body && withBody(req, Buffer.from(withOfflineConsent(`?${body.toString('utf8')}`).slice(1)));
}

/** The most the logout question's form may hold: its token and its answer. */
const LOGOUT_FORM_LIMIT = 2 * 1024;
/** The most fields the logout question's form may have (it has two). */
const LOGOUT_FORM_FIELDS = 8;

/** How long a pod reuses an application's keys before it reads them again: a rotation reaches every pod within this. */
const KEYS_CACHE_MS = 5_000;

/**
 * Where "stay signed in" at an app's logout goes: back to the app, at the post-logout address it
 * named (checked by the provider against the client's) with its state, else its first redirect
 * URI's origin, else the account page.
 */
function stayHref(params: Record<string, unknown> | undefined, client: { redirectUris?: readonly string[] } | undefined): string {
  const back = params?.post_logout_redirect_uri;
  if (typeof back === 'string') {
    const url = new URL(back);
    if (typeof params?.state === 'string') url.searchParams.set('state', params.state);
    return url.toString();
  }
  const first = client?.redirectUris?.[0];
  return first ? new URL(first).origin : '/account';
}

/**
 * An authorization request for offline_access from a client without the refresh_token grant: the
 * provider would drop the scope unsaid; the app is told instead, at its redirect URI (one of the
 * client's, exactly, as the provider checks it), with `invalid_scope`. True when answered.
 */
async function refusedOfflineAccess(provider: Provider, req: Request, res: Response): Promise<boolean> {
  const query = new URLSearchParams(req.url.slice(req.url.indexOf('?') + 1));
  if (!(query.get('scope') ?? '').split(' ').includes('offline_access') || (query.get('response_mode') ?? 'query') !== 'query') return false;
  const client = await provider.Client.find(query.get('client_id') ?? '').catch(() => undefined);
  const redirectUri = query.get('redirect_uri') ?? '';
  if (!client || client.grantTypeAllowed('refresh_token') || !client.redirectUriAllowed(redirectUri)) return false;
  const back = new URL(redirectUri);
  back.searchParams.set('error', 'invalid_scope');
  back.searchParams.set('error_description', 'offline_access needs the refresh_token grant, which this client does not have (its grant_types setting)');
  if (query.get('state') !== null) back.searchParams.set('state', query.get('state')!);
  back.searchParams.set('iss', provider.issuer);
  res.redirect(303, back.toString());
  return true;
}

/**
 * The claims of each scope, and the organizations (scope `organizations`: their ids and the roles
 * held in each) among the ID token's too: the provider puts only the openid scope's claims in an ID
 * token issued beside an access token (the others are userinfo's), and an app reads the
 * organizations from its ID token (docs/organizations.md#tokens). The account's claims hold them
 * only when `organizations` was asked for (findAccount).
 */
function withOrganizationsInIdToken(scopes: Record<string, string[]>): Record<string, string[]> {
  return { ...scopes, openid: [...scopes.openid, 'organizations', 'organization_roles'] };
}

/** The keys in the order the provider takes them: it signs with the first key of an algorithm, so the current ones come first. */
const signingOrder = (keys: StoredSigningKey[]) => [
  ...keys.filter((k) => k.slot?.startsWith('current:')), ...keys.filter((k) => k.slot?.startsWith('next:')), ...keys.filter((k) => k.slot === null),
];

/** The provider's koa context, as its page sources get it. */
type ProviderCtx = KoaContextWithOIDC;

/** How long a device's code lives (the device authorization grant). */
const DEVICE_CODE_SECONDS = 600;

/**
 * A device form posted without the provider's session (a crawler, a browser that keeps no cookie,
 * a page left open past the session) fails its token check; the provider then draws a fresh form
 * with a new token in a session it never saved, and its save of that session throws (a 500). The
 * session is saved here first, with its cookie as the provider sets it, so the page answers and its
 * new token works.
 */
async function keepNewSession(ctx: ProviderCtx, ttlSeconds: number, secure: boolean): Promise<void> {
  const session = ctx.oidc.session as unknown as { id: string; exp?: unknown; save(ttl: number): Promise<unknown> } | undefined;
  if (!session || typeof session.exp === 'number') return;
  ctx.oidc.cookies.set(ctx.oidc.provider.cookieName('session'), session.id, { httpOnly: true, sameSite: 'lax', ...(secure && { secure: true }) });
  await session.save(ttlSeconds);
}

export function createOidcProviders(services: Services, options: { trustProxy: boolean }) {
  const built = new Map<number, { fingerprint: string; provider: Provider; handle: ReturnType<Provider['callback']>; checkedAt: number }>();
  let loaded: ReturnType<typeof oidcProviderModule> | undefined;

  const findAccount = (app: Application, mapping: ClaimMapping): FindAccount => async (_ctx, id) => {
    const record = await services.db.records.find(app.id, { uuid: id });
    if (!record || isDisabled(record, services.clock.now())) return undefined;
    return {
      accountId: record.uuid,
      // the account's organizations only when the scope organizations is asked for (a read of its memberships)
      claims: async (_use, scope) => inProviderRealm({
        ...claimsOfRecord(record, mapping),
        ...(scope.split(' ').includes('organizations') && await organizationsClaims(services, {
          app, entityId: record.id, limit: limitOf(app.settings, 'organization_max_per_account'),
        })),
      }),
    };
  };

  function configuration(app: Application, keys: StoredSigningKey[], mod: ReturnType<typeof oidcProviderModule>, organizations: ReturnType<typeof organizationTokens>): Configuration {
    const { clients, db, clock, box, work } = services;
    // the application's claim mapping, read once per build (a change of its settings builds the provider again)
    const mapping = claimMappingOf(app.settings);
    const account = findAccount(app, mapping);
    return {
      // organizations' access tokens: the organization parameter, resources, the tokens' claims (organizations.ts)
      extraParams: organizations.configuration.extraParams,
      extraTokenClaims: organizations.configuration.extraTokenClaims,
      adapter: adapterFactory({
        db, work, clock, clients, box, invalidGrant: (why) => new mod.errors.InvalidGrant(why), invalidRequest: (why) => new mod.errors.InvalidRequest(why),
        invalidClientAuth: (why) => new mod.errors.InvalidClientAuth(why), invalidToken: (why) => new mod.errors.InvalidToken(why),
      }, app),
      jwks: { keys: signingOrder(keys).map((k) => privateJwkOf(box, k)) as never },
      routes: OIDC_ROUTES,
      findAccount: account,
      // the claims of each scope, with the application's own (setting openid_claims) released with profile
      claims: { ...withOrganizationsInIdToken(claimsOfScopes(mapping)), acr: null, sid: null, iss: null },
      scopes: [...OPENID_SCOPES],
      // a client may ask for two factors or a passkey (acr_values): interactionPolicy
      acrValues: [...ACR_VALUES],
      // a client proves itself with its secret (in the header or the body), a key of its own (private_key_jwt), or nothing but PKCE
      clientAuthMethods: ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none'],
      features: {
        resourceIndicators: organizations.configuration.features.resourceIndicators,
        devInteractions: { enabled: false },
        // a client introspects its own tokens only, never another client's; a token of a disabled account is inactive
        // (codes and refresh tokens are refused by the grants themselves, which look the account up)
        introspection: {
          enabled: true,
          allowedPolicy: async (ctx, client, token) => {
            const accountId = 'accountId' in token ? token.accountId : undefined;
            return token.clientId === client.clientId && (typeof accountId !== 'string' || (await account(ctx, accountId)) !== undefined);
          },
        },
        // a client revokes its own tokens only
        revocation: { enabled: true, allowedPolicy: (_ctx, client, token) => token.clientId === client.clientId },
        clientCredentials: { enabled: true },
        // back-channel logout (OpenID Back-Channel Logout 1.0): discovery says so, a client with an address gets sid in its ID tokens (includeSid below);
        // the tokens themselves leave through the outbox (backchannelLogout below)
        backchannelLogout: { enabled: true },
        rpInitiatedLogout: {
          enabled: true,
          // the question before signing out (a link alone signs nobody out), and the page after one without a way back, in the application's look
          logoutSource: (ctx, form) => sendOwnPage(ctx, 200, (locale) => renderPage(locale, text(locale, 'signOutTitle'), `<h1>${escape(text(locale, 'signOutTitle'))}</h1>`
            + `<p>${escape(text(locale, 'signOutAsk', { app: brandOf(app).name }))}</p>${form}`
            + `<p><button type="submit" form="op.logoutForm" name="logout" value="yes">${escape(text(locale, 'signOutYes'))}</button></p>`
            // staying signed in changes nothing (the provider's own "no" would end the app's grant and renew the session): a link back
            + `<p><a class="button secondary" href="${escape(stayHref(ctx.oidc.params, ctx.oidc.client))}">${escape(text(locale, 'signOutNo'))}</a></p>`,
          // the answer redirects to one of the client's post-logout addresses: form-action covers that redirect too
          { brand: brandOf(app), formAction: ["'self'", ...new Set((ctx.oidc.client?.postLogoutRedirectUris ?? []).map((u) => new URL(u).origin))].join(' ') })),
          postLogoutSuccessSource: (ctx) => sendOwnPage(ctx, 200, (locale) => renderPage(locale, text(locale, 'signOutTitle'),
            `<h1>${escape(text(locale, 'signOutTitle'))}</h1><p role="status">${escape(text(locale, 'signedOut', { app: brandOf(app).name }))}</p>`, { brand: brandOf(app) })),
        },
        // the device authorization grant (RFC 8628, docs/openid-connect.md#devices): a TV, a kiosk or a command
        // line shows a code, the person types it on /oidc/device, signs in with any method the app offers, and confirms
        deviceFlow: {
          enabled: true,
          // no vowels, no look-alikes (the provider's base-20), eight letters shown as two groups; typed in any case, with or without the dash
          charset: 'base-20', mask: '****-****',
          // the pages are drawn in src/web/device.ts
          userCodeInputSource: async (ctx, _form, _out, err) => {
            const name = providerErrorName(err);
            // a code no device has: the attempt stays counted (userCodesSpent)
            if (name === 'NotFoundError') noteUserCodeMissed();
            // (kept as long as a device's code lives: a cookie-less crawler's sessions go soon)
            if (err) await keepNewSession(ctx, DEVICE_CODE_SECONDS, services.baseUrls.secure);
            sendOwnPage(ctx, err && name !== 'AbortedError' ? 400 : 200, deviceCodeForm(ctx, app, err));
          },
          userCodeConfirmSource: (ctx, _form, client, deviceInfo, userCode) => sendOwnPage(ctx, 200, deviceConfirmForm(ctx, app, client, deviceInfo, userCode)),
          successSource: (ctx) => sendOwnPage(ctx, 200, deviceDonePage(ctx, app)),
        },
        // pushed authorization requests (RFC 9126): a request_uri lives 60 seconds and is spent once on any pod
        // (the adapter's single use); a client may be required to push (require_pushed_authorization_requests)
        pushedAuthorizationRequests: { enabled: true, requirePushedAuthorizationRequests: false, allowUnregisteredRedirectUris: false },
        // signed request objects (RFC 9101) of clients with keys; never alg none (requestObjectSigningAlgValues)
        requestObjects: { enabled: true, requireSignedRequestObject: false },
        // sender-constrained tokens (RFC 9449): every proof's jti spent once on any pod (ReplayDetection, the adapter's
        // single use); nonces offered to every client, required of a FAPI 2.0 one
        dPoP: {
          enabled: true, allowReplay: false, nonceSecret: Buffer.from(box.tag('oidc dpop nonces', `application ${app.id}`), 'base64url').subarray(0, 32),
          requireNonce: (ctx) => ctx.oidc.client?.metadata().security_profile === 'fapi2',
        },
        // the FAPI 2.0 security profile for the clients that ask for it (security_profile=fapi2): the provider's own checks
        // (PKCE, request objects' exp and nbf, assertions' audience); clientAdapter adds PAR, DPoP and the rest
        fapi: { enabled: true, profile: (_ctx, client) => (client?.metadata().security_profile === 'fapi2' ? '2.0' : undefined) },
        // the claims parameter (Core 5.5): an essential acr, and the claims of the scopes the client may ask for, nothing more
        claimsParameter: {
          enabled: true,
          assertClaimsParameter: (_ctx, claims, client) => {
            const allowed = new Set(['acr', 'auth_time', 'amr', 'sub', ...Object.entries(claimsOfScopes(mapping))
              .filter(([scope]) => !client.scope || client.scope.split(' ').includes(scope)).flatMap(([, names]) => names)]);
            for (const member of ['id_token', 'userinfo'] as const) {
              const asked = claims[member];
              if (asked === undefined) continue;
              if (typeof asked !== 'object' || asked === null || Array.isArray(asked)) throw new mod.errors.InvalidRequest(`claims.${member} must be a JSON object`);
              for (const [name, value] of Object.entries(asked)) {
                if (value !== null && (typeof value !== 'object' || Array.isArray(value))) throw new mod.errors.InvalidRequest(`claims.${member} members must be null or objects`);
                if (!allowed.has(name)) throw new mod.errors.InvalidRequest(`claims.${member} asks for ${name.slice(0, 64)}, which no scope this client may ask for releases`);
              }
            }
          },
        },
      },
      // redirect_uri is required (OpenID Connect Core 3.1.2.1), also of a client with one: a request without it is shown an error
      allowOmittingSingleRegisteredRedirectUri: false,
      // PKCE is required of public clients and FAPI 2.0 ones, and accepted from every client (S256 only)
      pkce: { required: (_ctx, client) => client.tokenEndpointAuthMethod === 'none' || client.metadata().security_profile === 'fapi2' },
      rotateRefreshToken: true,
      enabledJWA: {
        idTokenSigningAlgValues: ['ES256', 'RS256'], userinfoSigningAlgValues: ['ES256', 'RS256'], introspectionSigningAlgValues: ['ES256', 'RS256'],
        // what a client's own key may sign its assertions with (never none, never a shared secret)
        clientAuthSigningAlgValues: ['ES256', 'ES384', 'RS256', 'PS256', 'EdDSA'],
        // what a client's request objects may be signed with: its own key only (never none, never a shared secret)
        requestObjectSigningAlgValues: ['ES256', 'ES384', 'RS256', 'PS256', 'EdDSA'],
        // a DPoP proof is signed as FAPI 2.0 allows, whichever the client: ES256, PS256 or EdDSA
        dPoPSigningAlgValues: ['ES256', 'PS256', 'EdDSA'],
      },
      // the provider's cookies are signed with a key of SECRET_KEY's (never the key itself)
      cookies: {
        keys: [box.tag('oidc cookies', `application ${app.id}`)],
        // over TLS, names no sibling host can plant (a planted session would sign the browser in to another account)
        ...(services.baseUrls.secure && {
          names: { session: '__Host-oidc_session', interaction: '__Secure-oidc_interaction', resume: '__Secure-oidc_resume' },
          long: { secure: true }, short: { secure: true },
        }),
      },
      // a browser app's origins (its login client's allowed_origins) may call the token and userinfo endpoints
      extraClientMetadata: { properties: ['allowed_origins', 'security_profile'] },
      clientBasedCORS: (_ctx, origin, client) => {
        const allowed = client.metadata().allowed_origins;
        return Array.isArray(allowed) && allowed.includes(origin);
      },
      interactions: { url: (_ctx, interaction) => `/oidc/interaction/${interaction.uid}` },
      // an error the provider cannot send back to the app (a redirect_uri off the list, an unknown client): a page in the application's look
      renderError: (ctx, out, err) => sendErrorPage(ctx, app, ctx.status, pageErrorOf(out.error, out.error_description, (err as Error | undefined)?.name)),
      ttl: {
        // a resource's access token lives as that resource says (an API's lifetime, docs/openid-connect.md#apis)
        AccessToken: (_ctx, token) => token.resourceServer?.accessTokenTTL ?? 3600,
        ClientCredentials: (_ctx, token) => token.resourceServer?.accessTokenTTL ?? 3600,
        AuthorizationCode: 60, IdToken: 3600, Interaction: 3600, DeviceCode: DEVICE_CODE_SECONDS,
        // the provider's session lasts no longer than the account page's session it stands for
        Session: browserSessionLimits(app).absolute,
        // a grant outlives its refresh tokens; a public client's rotated refresh token keeps its first expiry
        Grant: REFRESH_SECONDS,
        RefreshToken: (ctx, _token, client) => (client.tokenEndpointAuthMethod === 'none' && ctx?.oidc.entities.RotatedRefreshToken
          ? ctx.oidc.entities.RotatedRefreshToken.remainingTTL : REFRESH_SECONDS),
      },
    };
  }

  /**
   * The provider's interaction policy with two more reasons to ask for a sign-in:
   * - the browser's session of the account page (the application's single sign-on session) ended,
   *   or is another account's. So signing out of the account page, or an operator ending the
   *   account's sessions, ends the apps' silent sign-ins in that browser too;
   * - the app asked for a stronger sign-in (`acr_values`: two factors, or a passkey) than the
   *   session's. A session that meets one of the classes asked for answers with it as its `acr`.
   */
  function interactionPolicy(app: Application, mod: ReturnType<typeof oidcProviderModule>) {
    const policy = mod.interactionPolicy.base();
    policy.get('login')!.checks.push(new mod.interactionPolicy.Check('gatehouse_session', 'the browser\'s session of this application ended', 'login_required', async (ctx) => {
      const accountId = ctx.oidc.session?.accountId;
      if (!accountId) return mod.interactionPolicy.Check.NO_NEED_TO_PROMPT;
      const session = await browserSessionOfRequest(services, ctx.req as unknown as Request, app);
      const record = session?.entityId == null ? undefined : await services.db.records.find(app.id, { id: session.entityId });
      return record?.uuid === accountId ? mod.interactionPolicy.Check.NO_NEED_TO_PROMPT : mod.interactionPolicy.Check.REQUEST_PROMPT;
    }));
    policy.get('login')!.checks.push(new mod.interactionPolicy.Check('gatehouse_acr', 'the app asked for a stronger sign-in than this session\'s', 'login_required', (ctx) => {
      const essential = essentialAcrs(ctx.oidc.params?.claims);
      const wanted = essential.length > 0 ? essential : requestedAcrs(ctx.oidc.params?.acr_values);
      const session = ctx.oidc.session;
      if (wanted.length === 0 || !session?.accountId) return mod.interactionPolicy.Check.NO_NEED_TO_PROMPT;
      const met = wanted.find((acr) => acrMet(session.amr ?? [], acr));
      // a sign-in made for this very request stands: what it could not meet was a wish (the sign-in page refuses what was essential)
      if (met === undefined) return ctx.oidc.result?.login ? mod.interactionPolicy.Check.NO_NEED_TO_PROMPT : mod.interactionPolicy.Check.REQUEST_PROMPT;
      // the ID token names the class the app asked for that this session meets
      session.acr = met;
      return mod.interactionPolicy.Check.NO_NEED_TO_PROMPT;
    }));
    return policy;
  }

  /** Ends the browser's session of the account page, if it has one. */
  async function endBrowserSession(app: Application, req: Request): Promise<void> {
    const session = await browserSessionOfRequest(services, req, app);
    if (session?.family) await endSessions({ origin: peerOrigin(req), app, clientAddress: '', services }, { token: session, session: session.family });
  }

  /** The application's provider (and its request handler), built again when its keys (a rotation) or its settings changed. */
  async function builtFor(app: Application) {
    const now = services.clock.now().getTime();
    const cached = built.get(app.id);
    if (cached && now - cached.checkedAt < KEYS_CACHE_MS) return cached;
    const keys = await signingKeys({ db: services.db, box: services.box, clock: services.clock, work: services.work }, app.id);
    // its keys and the application's settings it reads (the session's lifetimes): a change of either builds it again
    const fingerprint = `${keys.map((k) => `${k.kid}:${k.slot ?? 'retired'}`).join(',')}|${JSON.stringify(app.settings)}`;
    if (cached && cached.fingerprint === fingerprint) {
      cached.checkedAt = now;
      return cached;
    }
    loaded ??= oidcProviderModule();
    const apis = apiResources(services, app, loaded);
    const organizations = organizationTokens(services, app, loaded, apis);
    const config = inProviderRealm(configuration(app, keys, loaded, organizations));
    // the policy is the provider's own object (its prompts are looked up by name): set as it is
    config.interactions = { ...config.interactions, policy: interactionPolicy(app, loaded) };
    const provider = new loaded.Provider(services.baseUrls.of(app.name), config);
    provider.proxy = options.trustProxy;
    // back-channel logout tokens leave through the outbox (docs/openid-connect.md#back-channel-logout): where the provider
    // would POST one during the logout request (lost if the app is down), the token is recorded, and a worker sends it until it is taken
    const providerApp = app;
    // (noted for the session's end, whose transaction records it: src/usecases/oidc/provider-storage.ts)
    provider.Client.prototype.backchannelLogout = async function backchannelLogout(this: { clientId: string }, sub: string, sid: string) {
      const owed = { clientId: this.clientId, subject: sub, sid: typeof sid === 'string' ? sid : null };
      if (noteLogoutOwed(owed)) return;
      await oweProviderLogout(services, { app: providerApp, logouts: [owed], party: { entityId: null, clientId: this.clientId, origin: providerRequest().origin } });
    };
    // a client with a back-channel logout address is given its session id (sid) in its ID tokens, as its logout tokens name it
    provider.Client.prototype.includeSid = function includeSid(this: { backchannelLogoutUri?: string }) {
      return typeof this.backchannelLogoutUri === 'string';
    };
    // the provider catches what recording a token threw (the logout goes on): said loudly, as a job lost would be
    provider.on('backchannel.error', (ctx, err, client) => services.logger.error({ request_id: requestIdOf(ctx), client_id: client.clientId, err },
      'a logout token owed to an app could not be recorded: it is not sent; the person is signed out here'));
    organizations.registerExchange(provider, config.findAccount!);
    // its answers are Gatehouse's, whatever happens inside it (answers.ts); its failures one structured log line each
    provider.use(gatehouseAnswers(app, services.logger));
    // what the adapter's use cases record of a request: its endpoint and client (src/web/provider-request.ts)
    provider.use(noteProviderRoute);
    provider.on('server_error', (ctx, err) => services.logger.error({ request_id: requestIdOf(ctx), method: ctx.method, path: ctx.path, err }, 'unexpected error in the OpenID provider'));
    // Koa's own (what escapes every middleware): logged as one line, never its default stack trace on stderr
    (provider as unknown as NodeJS.EventEmitter).on('error', (err: unknown, ctx?: { res: object }) => services.logger.error({ request_id: ctx ? requestIdOf(ctx) : undefined, err }, 'unexpected error in the OpenID provider'));
    // an app's logout (RP-initiated) signs the browser out of the application: its account page session ends too,
    // before the browser is sent back to the app (the response waits for it). Only a confirmed logout (the question's
    // "yes") does; and not the provider's own logout of the account a browser signs out of when another one signs in
    // (it ends the provider's session of the first account and resumes the sign-in: the browser session is already the new account's)
    provider.on('end_session.success', (ctx) => {
      if (ctx.oidc.params?.logout) ctx.state.loggedOut = true;
    });
    provider.use(async (ctx, next) => {
      await next();
      if (!ctx.state.loggedOut) return;
      const location = ctx.response.get('location');
      const switching = location !== '' && isResume(new URL(location, services.baseUrls.of(app.name)).pathname);
      if (!switching) {
        await endBrowserSession(app, ctx.req as unknown as Request)
          .catch((e: unknown) => services.logger.warn({ request_id: requestIdOf(ctx), err: e }, 'ending the browser session at an OpenID logout failed'));
      }
    });
    const fresh = { fingerprint, provider, handle: provider.callback(), checkedAt: now };
    built.set(app.id, fresh);
    return fresh;
  }

  /**
   * True (a page said so) when this address has too many attempts waiting. The attempt is taken
   * before the provider reads the form (atomic, on every pod), and given back once it answered
   * anything but "that code is not one we know" (a code found, a confirmation, a form that failed
   * its token check): only misses count. Past the address's budget the attempt waits its turn
   * (takeUserCodeAttempt): a right code is slowed, never refused.
   */
  async function userCodesSpent(app: Application, req: Request, res: Response, request: ProviderRequest): Promise<boolean> {
    const clientAddress = peerBudgetKey(req.ip);
    const taken = await takeUserCodeAttempt({ origin: peerOrigin(req), app, clientAddress, services });
    if ('retryAfterSeconds' in taken) {
      sendTooManyCodes(req, res, app, taken.retryAfterSeconds);
      return true;
    }
    if (taken.waitMs > 0) await sleep(taken.waitMs);
    res.on('finish', () => {
      if (!request.userCodeMissed) void taken.giveBack().catch(() => undefined);
    });
    return false;
  }

  /**
   * The logout question's form, read before the provider sees it. The page's "No" is a link that
   * changes nothing; a form posted without "yes" (sent without its button, or `logout=no`) is a
   * person who did not confirm, yet the provider would take it as its own "no" (the app's grant
   * revoked, a logout token sent, the session renewed), and any other value as a "yes". Only
   * `logout=yes` reaches the provider (the request returned, its body given again); anything else
   * sends the browser where "stay signed in" goes, and nothing changes.
   */
  async function confirmedLogout(provider: Provider, req: Request, res: Response): Promise<Request | undefined> {
    const body = await formBody(req, LOGOUT_FORM_LIMIT);
    const fields = body ? [...new URLSearchParams(body.toString('utf8')).entries()] : [];
    const answers = fields.filter(([name]) => name === 'logout');
    // the form has two fields (its token, the answer): a body of many more may read otherwise to the provider's parser
    if (body && fields.length <= LOGOUT_FORM_FIELDS && answers.length === 1 && answers[0][1] === 'yes') return withBody(req, body);
    if (!body) res.setHeader('Connection', 'close');
    const session = await provider.Session.get({ req, res } as unknown as KoaContextWithOIDC);
    const asked = (session.state ?? {}) as { clientId?: string; postLogoutRedirectUri?: string; state?: string };
    const client = asked.clientId ? await provider.Client.find(asked.clientId) : undefined;
    res.redirect(303, stayHref({ post_logout_redirect_uri: asked.postLogoutRedirectUri, state: asked.state }, client));
    return undefined;
  }

  const authorizationForm = express.urlencoded({ extended: false, limit: '8kb', parameterLimit: 100 });
  /** POST /oidc/auth: its form, checked as a query string is (domain/request-values.ts), as a GET of the same parameters. */
  function authorizationByPost(req: Request, res: Response, next: NextFunction): void {
    markFailedPage(res, { locale: pageLocale(undefined, req.headers['accept-language']) });
    if (!req.is('application/x-www-form-urlencoded')) return next(errors.unreadableBody('send the authorization request as an application/x-www-form-urlencoded form, or as a link', 415));
    authorizationForm(req, res, (err?: unknown) => {
      if (err) return next(err);
      const found = unsafeField(req.body);
      if (found) return next(errors.unsafeInput(found[0], found[1]));
      res.redirect(303, `${OIDC_ROUTES.authorization}?${querystring.stringify(req.body as querystring.ParsedUrlQueryInput)}`);
    });
  }

  return {
    providerFor: async (app: Application) => (await builtFor(app)).provider,
    /** Express middleware: the provider's paths go to the application's provider. */
    route: (resolveApp: (host: string | undefined) => Promise<Application>) => async (req: Request, res: Response, next: NextFunction) => {
      if (!isOidcPath(req.path)) return next();
      try {
        const app = await resolveApp(req.headers.host);
        if (!isOpenIdProvider(app)) return next();
        // an authorization request sent as a form (OpenID Connect Core 3.1.2.1) is the same request as a link:
        // the browser is sent to it (the provider's session cookie stays SameSite=Lax, which a cross-site POST would not carry)
        if (req.method === 'POST' && req.path === OIDC_ROUTES.authorization) return void authorizationByPost(req, res, next);
        // the resume takes nothing but the browser's interaction cookie: a query string there only misleads the provider's error handling
        if (isResume(req.path)) req.url = req.path;
        // what the provider's request does and why, read by the adapter while it answers and by the guards in front of it after
        const request = providerRequestOf(req, res);
        // the endpoint as the provider matches it (in any case, with a trailing slash), for the guards in front of it
        const endpoint = req.path.toLowerCase().replace(/\/+$/, '');
        // a device's user code typed: counted from this address and in the application before the provider looks it up
        if (req.method === 'POST' && endpoint === OIDC_ROUTES.code_verification && await userCodesSpent(app, req, res, request)) return;
        const { handle, provider } = await builtFor(app);
        if (req.path === OIDC_ROUTES.authorization) {
          req.url = withOfflineConsent(req.url);
          if (await refusedOfflineAccess(provider, req, res)) return;
        }
        // a pushed request is a POST (RFC 9126 2.3: anything else is 405)
        const pushing = endpoint === OIDC_ROUTES.pushed_authorization_request;
        if (pushing && req.method !== 'POST' && req.method !== 'OPTIONS') {
          res.setHeader('Allow', 'POST');
          return void res.status(405).json({ error: 'invalid_request', error_description: 'a pushed authorization request is sent with POST', request_id: request.origin.requestId });
        }
        // a pushed request is an authorization request too: offline_access in it gets consent as in a link
        const pushed = pushing && req.method === 'POST' && req.is('application/x-www-form-urlencoded') ? await pushedWithOfflineConsent(req) : req;
        if (!pushed) {
          res.setHeader('Connection', 'close');
          return void res.status(413).json({ error: 'invalid_request', error_description: `the pushed request is larger than ${PUSHED_BODY_LIMIT / 1024} KB`, request_id: request.origin.requestId });
        }
        // the logout question's answer: only a "yes" reaches the provider
        const confirming = req.method === 'POST' && endpoint === `${OIDC_ROUTES.end_session}/confirm`;
        const asked = confirming ? await withProviderRequest(req, res, () => confirmedLogout(provider, req, res), request) : pushed;
        if (!asked) return;
        withProviderRequest(req, res, () => handle(asked, res), request);
      } catch (e) {
        next(e);
      }
    },
  };
}
