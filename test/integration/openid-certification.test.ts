import request from 'supertest';
import { servedTestApp } from '../helpers/browser';
import { APP, oidcSignIn, PASSWORD } from '../helpers/oidc-sign-in';
import { cookieBrowser, firstForm } from '../helpers/social';

// The OpenID Foundation's certification plans for an OpenID provider, module by module
// (docs/openid-connect.md#certification): the Basic OP plan (a code flow client with a secret),
// the Config OP plan (discovery) and the RP-initiated logout plan. Each test is named after the
// module and checks what that module checks, through the front door with openid-client as the
// relying party. Modules that need a feature Gatehouse does not offer (request objects, request_uri)
// pass as the plans allow: the request is refused with the error the specification names for it.
// The modules that wait (max_age=1, a code reused after 30 seconds) wait a little: what they check
// does not depend on the time (the codes are single use by a conditional update, whenever).

const OUT = 'https://app.example.com/signed-out';
let served: Awaited<ReturnType<typeof servedTestApp>>;
let s: ReturnType<typeof oidcSignIn>;
let config: Awaited<ReturnType<ReturnType<typeof oidcSignIn>['discovered']>>;
let person: { email: string; uuid: string };
const clock = { now: () => new Date() };

beforeAll(async () => {
  served = await servedTestApp({ env: { LOGIN_LIMIT_ADDRESS: '10000/900' } });
  s = oidcSignIn(served, clock);
  for (const [key, value] of [['redirect_uris', APP], ['post_logout_redirect_uris', OUT], ['grant_types', 'authorization_code refresh_token']]) {
    expect((await s.admin('/settings/set', { for_client_id: s.login.client_id, key, value })).body.stat).toBe('ok');
  }
  // the settings reach the provider within 5 seconds
  await new Promise((r) => setTimeout(r, 5_100));
  config = await s.discovered();
  const email = `cert-${Date.now()}@example.com`;
  const created = await s.admin('/entity.create', { type_name: 'user', attributes: JSON.stringify({
    email, password: PASSWORD, givenName: 'Ada', familyName: 'Lovelace', displayName: 'Ada Lovelace', mobile: '+44 20 7946 0000',
    address: { street_address: '12 St James\'s Square', locality: 'London', country: 'GB' },
  }) });
  expect(created.body.stat).toBe('ok');
  person = { email, uuid: (await s.admin('/entity', { type_name: 'user', id: String(created.body.id) })).body.result.uuid };
}, 60_000);
afterAll(async () => {
  await served?.close();
});

/** A sign-in through the provider as the person, then the code redeemed: the tokens and the browser. */
async function signedIn(extra: Record<string, string> = {}, browser = cookieBrowser()) {
  const got = await s.authorize(config, person.email, extra, browser);
  const tokens = await s.oidc.authorizationCodeGrant(config, got.back, { pkceCodeVerifier: got.verifier, expectedState: got.state, expectedNonce: got.nonce });
  return { ...got, tokens };
}
/** The authorization endpoint asked by hand: where the browser is sent (not followed off the provider). */
const authorizeRaw = (params: Record<string, string>, browser = cookieBrowser()) =>
  browser.go(`${served.base}/oidc/auth?${new URLSearchParams(params)}`, { stopAt: (next) => next.origin !== served.base });
const basicParams = () => ({ client_id: s.login.client_id, redirect_uri: APP, response_type: 'code', scope: 'openid', state: 'st', nonce: 'nn' });

describe('Config OP', () => {
  it('oidcc-discovery-endpoint-verification: the discovery document names the issuer and every endpoint, its values are the ones Core requires', async () => {
    const res = await fetch(`${served.base}/.well-known/openid-configuration`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const m = await res.json() as Record<string, unknown>;
    expect(m.issuer).toBe(served.base);
    for (const key of ['authorization_endpoint', 'token_endpoint', 'userinfo_endpoint', 'jwks_uri', 'end_session_endpoint']) expect(String(m[key])).toMatch(new RegExp(`^${served.base}/oidc/`));
    expect(m.response_types_supported).toEqual(expect.arrayContaining(['code']));
    expect(m.subject_types_supported).toEqual(expect.arrayContaining(['public']));
    expect(m.id_token_signing_alg_values_supported).toEqual(expect.arrayContaining(['RS256']));
    expect(m.scopes_supported).toEqual(expect.arrayContaining(['openid']));
    expect(m.claims_supported).toEqual(expect.arrayContaining(['sub', 'email', 'name']));
    expect(m.claims_parameter_supported).toBe(true);
    const jwks = await request(served.t.app).get(new URL(String(m.jwks_uri)).pathname);
    expect((jwks.body as { keys: { kty: string; use: string }[] }).keys.some((k) => k.kty === 'RSA' && k.use === 'sig')).toBe(true);
  });
});

describe('Basic OP', () => {
  it('oidcc-server: a code flow gives an ID token whose iss, aud, sub, nonce, exp and iat check out', async () => {
    const { tokens, nonce } = await signedIn();
    const claims = tokens.claims()!;
    expect(claims).toMatchObject({ iss: served.base, aud: s.login.client_id, sub: person.uuid, nonce });
    expect(claims.exp).toBeGreaterThan(claims.iat);
  });

  it('oidcc-response-type-missing: no response_type is an error shown to the person (or sent back as unsupported_response_type)', async () => {
    const { response_type: _r, ...params } = basicParams();
    const page = await authorizeRaw(params);
    const back = new URL(page.url);
    if (back.origin === served.base) {
      expect(page.status).toBe(400);
      expect(page.body).toContain('missing');
    } else expect(back.searchParams.get('error')).toMatch(/invalid_request|unsupported_response_type/);
  });

  it('oidcc-userinfo-get, oidcc-userinfo-post-header, oidcc-userinfo-post-body: the access token works in each of the three ways', async () => {
    const { tokens } = await signedIn({ scope: 'openid email' });
    const at = tokens.access_token;
    const get = await request(served.t.app).get('/oidc/me').set('Authorization', `Bearer ${at}`);
    const header = await request(served.t.app).post('/oidc/me').set('Authorization', `Bearer ${at}`);
    const body = await request(served.t.app).post('/oidc/me').type('form').send({ access_token: at });
    for (const res of [get, header, body]) expect([res.status, res.body.sub, res.body.email]).toEqual([200, person.uuid, person.email]);
  });

  it('oidcc-ensure-request-without-nonce-succeeds-for-code-flow: a code without a nonce, and an ID token without one', async () => {
    const got = await s.authorize(config, person.email, { nonce: '' });
    const tokens = await s.oidc.authorizationCodeGrant(config, got.back, { pkceCodeVerifier: got.verifier, expectedState: got.state });
    expect(tokens.claims()!.nonce).toBeUndefined();
  });

  it.each([
    ['oidcc-scope-profile', 'openid profile', ['name', 'given_name', 'family_name']],
    ['oidcc-scope-email', 'openid email', ['email', 'email_verified']],
    ['oidcc-scope-address', 'openid address', ['address']],
    ['oidcc-scope-phone', 'openid phone', ['phone_number']],
    ['oidcc-scope-all', 'openid profile email address phone', ['name', 'email', 'address', 'phone_number']],
    ['oidcc-ensure-other-scope-order-succeeds', 'email openid', ['email']],
  ] as const)('%s: userinfo returns the claims of the scopes asked for', async (_module, scope, claims) => {
    const { tokens } = await signedIn({ scope });
    const info = await s.oidc.fetchUserInfo(config, tokens.access_token, person.uuid);
    for (const claim of claims) expect([claim, info[claim]]).toEqual([claim, expect.anything()]);
  });

  it.each(['page', 'popup'])('oidcc-display-%s: that display value is accepted', async (display) => {
    const { back } = await s.authorize(config, person.email, { display });
    expect(back.searchParams.get('code')).toBeTruthy();
  });

  it('oidcc-prompt-login: prompt=login asks a browser that has a session again, and auth_time moves on', async () => {
    const first = await signedIn();
    await new Promise((r) => setTimeout(r, 1_100));
    const again = await signedIn({ prompt: 'login' }, first.browser);
    expect(again.asked).toBe(true);
    expect(again.tokens.claims()!.auth_time).toBeGreaterThan(first.tokens.claims()!.auth_time!);
  });

  it('oidcc-prompt-none-not-logged-in: prompt=none without a session is login_required, sent back to the app', async () => {
    const page = await authorizeRaw({ ...basicParams(), prompt: 'none' });
    expect(new URL(page.url).searchParams.get('error')).toBe('login_required');
  });

  it('oidcc-prompt-none-logged-in: prompt=none with a session gives a code without asking', async () => {
    const first = await signedIn();
    const silent = await s.authorize(config, person.email, { prompt: 'none' }, first.browser);
    expect(silent.asked).toBe(false);
    expect(silent.back.searchParams.get('code')).toBeTruthy();
  });

  it('oidcc-max-age-1: a session older than max_age asks again; oidcc-max-age-10000: a recent one does not', async () => {
    const first = await signedIn();
    const recent = await signedIn({ max_age: '10000' }, first.browser);
    expect(recent.asked).toBe(false);
    expect(recent.tokens.claims()!.auth_time).toBe(first.tokens.claims()!.auth_time);
    await new Promise((r) => setTimeout(r, 2_100));
    const old = await signedIn({ max_age: '1' }, first.browser);
    expect(old.asked).toBe(true);
    expect(old.tokens.claims()!.auth_time).toBeGreaterThan(first.tokens.claims()!.auth_time!);
  });

  it('oidcc-ensure-request-with-unknown-parameter-succeeds: an unknown parameter is ignored', async () => {
    const { back } = await s.authorize(config, person.email, { extra: 'foobar' });
    expect(back.searchParams.get('code')).toBeTruthy();
  });

  it('oidcc-id-token-hint: a prompt=none request with the ID token as a hint gives a code for the same sub', async () => {
    const first = await signedIn();
    const hinted = await signedIn({ prompt: 'none', id_token_hint: first.tokens.id_token! }, first.browser);
    expect(hinted.tokens.claims()!.sub).toBe(person.uuid);
  });

  it('oidcc-login-hint: login_hint is taken (the sign-in page has it typed in)', async () => {
    const page = await authorizeRaw({ ...basicParams(), login_hint: person.email });
    expect(page.body).toContain(`value="${person.email}"`);
  });

  it('oidcc-ui-locales: ui_locales chooses the sign-in page\'s language; oidcc-claims-locales: claims_locales is accepted', async () => {
    const page = await authorizeRaw({ ...basicParams(), ui_locales: 'fr-FR', claims_locales: 'fr-FR' });
    expect(page.body).toContain('<html lang="fr">');
    const { back } = await s.authorize(config, person.email, { claims_locales: 'de' });
    expect(back.searchParams.get('code')).toBeTruthy();
  });

  it('oidcc-ensure-request-with-acr-values-succeeds: acr_values is a wish, the sign-in succeeds with what the account has', async () => {
    const { tokens } = await signedIn({ acr_values: '1 2' });
    expect(tokens.claims()!.sub).toBe(person.uuid);
  });

  it('oidcc-codereuse and oidcc-codereuse-30seconds: a code used again is invalid_grant, and what it gave is revoked', async () => {
    const got = await s.authorize(config, person.email);
    const tokens = await s.oidc.authorizationCodeGrant(config, got.back, { pkceCodeVerifier: got.verifier, expectedState: got.state, expectedNonce: got.nonce });
    await new Promise((r) => setTimeout(r, 1_000));
    const again = await request(served.t.app).post('/oidc/token').auth(s.login.client_id, s.login.client_secret).type('form')
      .send({ grant_type: 'authorization_code', code: got.back.searchParams.get('code')!, redirect_uri: APP, code_verifier: got.verifier });
    expect([again.status, again.body.error]).toEqual([400, 'invalid_grant']);
    expect(await s.oidc.tokenIntrospection(config, tokens.access_token)).toEqual({ active: false });
  });

  it('oidcc-ensure-registered-redirect-uri and oidcc-ensure-redirect-uri-in-authorization-request: an unregistered or missing redirect_uri is shown, never redirected to', async () => {
    const wrong = await authorizeRaw({ ...basicParams(), redirect_uri: 'https://evil.example/cb' });
    expect(new URL(wrong.url).origin).toBe(served.base);
    expect(wrong.status).toBe(400);
    // redirect_uri is required, also of a client with only one registered (Core 3.1.2.1)
    const { redirect_uri: _r, ...params } = basicParams();
    const missing = await authorizeRaw(params);
    expect(new URL(missing.url).origin).toBe(served.base);
    expect(missing.status).toBe(400);
    expect(missing.body).toContain('redirect_uri');
  });

  it.each([
    ['oidcc-redirect-uri-query-OK', APP, true],
    ['oidcc-redirect-uri-query-mismatch', `${APP}?foo=bar`, false],
    ['oidcc-redirect-uri-query-added', `${APP}?other=1`, false],
  ] as const)('%s: the redirect_uri is compared exactly, query included', async (_module, uri, ok) => {
    const page = await authorizeRaw({ ...basicParams(), redirect_uri: uri });
    expect(new URL(page.url).origin !== served.base || new URL(page.url).pathname === '/signin').toBe(ok);
  });

  it('oidcc-server-client-secret-post: a client that authenticates with its secret in the body', async () => {
    const added = await s.admin('/clients/add', { description: 'secret in the body', features: '["login_client"]' });
    const id = added.body.client_id as string;
    for (const [key, value] of [['redirect_uris', APP], ['token_endpoint_auth_method', 'client_secret_post'], ['default_flow_name', 'standard'], ['default_flow_version', '1']]) {
      expect((await s.admin('/settings/set', { for_client_id: id, key, value })).body.stat).toBe('ok');
    }
    await new Promise((r) => setTimeout(r, 5_100));
    const post = await s.oidc.discovery(new URL(served.base), id, added.body.client_secret as string, s.oidc.ClientSecretPost(added.body.client_secret as string), { execute: [s.oidc.allowInsecureRequests] });
    const got = await s.authorize(post, person.email);
    const tokens = await s.oidc.authorizationCodeGrant(post, got.back, { pkceCodeVerifier: got.verifier, expectedState: got.state, expectedNonce: got.nonce });
    expect(tokens.claims()).toMatchObject({ aud: id, sub: person.uuid });
  }, 60_000);

  it('oidcc-unsigned-request-object-supported-correctly-or-rejected-as-unsupported, oidcc-ensure-request-object-with-redirect-uri: skipped by the suite, as discovery offers no unsigned request object; one sent is refused', async () => {
    // (the module runs only when discovery lists alg none among the request objects' algorithms)
    const config = await (await fetch(`${served.base}/.well-known/openid-configuration`)).json() as Record<string, unknown>;
    expect(config.request_parameter_supported).toBe(true);
    expect(config.request_object_signing_alg_values_supported).not.toContain('none');
    const object = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify({ ...basicParams(), aud: served.base })).toString('base64url')}.`;
    const page = await authorizeRaw({ ...basicParams(), request: object });
    const back = new URL(page.url);
    expect(back.origin === served.base ? page.status : back.searchParams.get('error')).toBe(back.origin === served.base ? 400 : 'invalid_request_object');
  });

  it('oidcc-request-uri-unsigned and oidcc-request-uri-signed-rs256: request_uri is refused as unsupported', async () => {
    const page = await authorizeRaw({ ...basicParams(), request_uri: 'https://app.example.com/request.jwt' });
    const back = new URL(page.url);
    expect(back.origin === served.base ? page.status : back.searchParams.get('error')).toBe(back.origin === served.base ? 400 : 'request_uri_not_supported');
  });

  it('oidcc-claims-essential: a claim asked for as essential in the claims parameter is returned by userinfo', async () => {
    const { tokens } = await signedIn({ scope: 'openid', claims: JSON.stringify({ userinfo: { name: { essential: true } } }) });
    const info = await s.oidc.fetchUserInfo(config, tokens.access_token, person.uuid);
    expect(info.name).toBe('Ada Lovelace');
  });

  it('oidcc-refresh-token: offline_access gives a refresh token that refreshes (rotating) for the same sub', async () => {
    const { tokens } = await signedIn({ scope: 'openid offline_access' });
    expect(tokens.refresh_token).toEqual(expect.any(String));
    const refreshed = await s.oidc.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.claims()!.sub).toBe(person.uuid);
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
  });

  it('oidcc-ensure-request-with-valid-pkce-succeeds: S256 PKCE works; a wrong verifier does not', async () => {
    const got = await s.authorize(config, person.email);
    const wrong = await request(served.t.app).post('/oidc/token').auth(s.login.client_id, s.login.client_secret).type('form')
      .send({ grant_type: 'authorization_code', code: got.back.searchParams.get('code')!, redirect_uri: APP, code_verifier: s.oidc.randomPKCECodeVerifier() });
    expect(wrong.body.error).toBe('invalid_grant');
    const fresh = await signedIn();
    expect(fresh.tokens.access_token).toEqual(expect.any(String));
  });

  it('oidcc-ensure-post-request-succeeds: the authorization request as a form POST', async () => {
    const browser = cookieBrowser();
    const verifier = s.oidc.randomPKCECodeVerifier();
    const form = { ...basicParams(), code_challenge: await s.oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' };
    let page = await browser.go(`${served.base}/oidc/auth`, { method: 'POST', form, stopAt: (next) => next.origin !== served.base });
    const signIn = firstForm(page.body, page.url);
    page = await browser.go(signIn.action, { method: 'POST', form: { ...signIn.fields, signInEmailAddress: person.email, currentPassword: PASSWORD }, stopAt: (next) => next.origin !== served.base });
    const tokens = await s.oidc.authorizationCodeGrant(config, new URL(page.url), { pkceCodeVerifier: verifier, expectedState: 'st', expectedNonce: 'nn' });
    expect(tokens.claims()!.sub).toBe(person.uuid);
  });
});

describe('RP-initiated logout', () => {
  /** A session, the logout request, and the question's answer: where the browser lands. */
  async function logout(params: (idToken: string) => Record<string, string>, answer = true) {
    const first = await signedIn();
    const stopAt = (next: URL) => next.origin !== served.base;
    const question = await first.browser.go(`${served.base}/oidc/session/end?${new URLSearchParams(params(first.tokens.id_token!))}`, { stopAt });
    if (question.status !== 200 || !question.body.includes('op.logoutForm')) return { first, question, landed: question };
    const form = firstForm(question.body, question.url);
    const landed = answer ? await first.browser.go(form.action, { method: 'POST', form: { ...form.fields, logout: 'yes' }, stopAt }) : question;
    return { first, question, landed };
  }
  const signedOut = async (browser: ReturnType<typeof cookieBrowser>) => (await s.authorize(config, person.email, { prompt: 'none' }, browser)).back.searchParams.get('error') === 'login_required';

  it('oidcc-rp-initiated-logout: with the ID token, the post-logout address and a state, the person is asked, signed out and sent back with the state', async () => {
    const { first, landed } = await logout((id) => ({ id_token_hint: id, post_logout_redirect_uri: OUT, state: 'bye' }));
    expect(landed.url).toBe(`${OUT}?state=bye`);
    expect(await signedOut(first.browser)).toBe(true);
  });

  it('oidcc-rp-initiated-logout-no-state: without a state, back at the address without one', async () => {
    const { landed } = await logout((id) => ({ id_token_hint: id, post_logout_redirect_uri: OUT }));
    expect(landed.url).toBe(OUT);
  });

  it('oidcc-rp-initiated-logout-only-state: a state without an address: signed out on the provider\'s own page', async () => {
    const { first, landed } = await logout((id) => ({ id_token_hint: id, state: 'bye' }));
    expect(new URL(landed.url).origin).toBe(served.base);
    expect(landed.body).toContain('You are signed out');
    expect(await signedOut(first.browser)).toBe(true);
  });

  it('oidcc-rp-initiated-logout-no-params and oidcc-rp-initiated-logout-no-post-logout-redirect-uri: the person is asked, then signed out on the provider\'s page', async () => {
    for (const params of [() => ({}), (id: string) => ({ id_token_hint: id })]) {
      const { first, question, landed } = await logout(params);
      expect(question.body).toContain('Do you want to sign out');
      expect(landed.body).toContain('You are signed out');
      expect(await signedOut(first.browser)).toBe(true);
    }
  });

  it('oidcc-rp-initiated-logout-no-id-token-hint: client_id names the client instead, and its post-logout address is used', async () => {
    const { landed } = await logout(() => ({ client_id: s.login.client_id, post_logout_redirect_uri: OUT, state: 'x' }));
    expect(landed.url).toBe(`${OUT}?state=x`);
  });

  it('oidcc-rp-initiated-logout-bad-id-token-hint and -modified-id-token-hint: an ID token that is not one, or altered, is an error page and no redirect', async () => {
    const altered = (id: string) => { const [h, p, sig] = id.split('.'); return `${h}.${p.slice(0, -2)}AA.${sig}`; };
    for (const hint of [() => 'not.a.token', altered]) {
      const { landed } = await logout((id) => ({ id_token_hint: hint(id), post_logout_redirect_uri: OUT }));
      expect(new URL(landed.url).origin).toBe(served.base);
      expect(landed.status).toBe(400);
      expect(landed.body).toContain('<html');
    }
  });

  it('oidcc-rp-initiated-logout-bad-post-logout-redirect-uri and -query-added-to-post-logout-redirect-uri: an address off the client\'s list is an error page, never a redirect', async () => {
    for (const uri of ['https://evil.example/out', `${OUT}?added=1`]) {
      const { landed } = await logout((id) => ({ id_token_hint: id, post_logout_redirect_uri: uri }));
      expect(new URL(landed.url).origin).toBe(served.base);
      expect(landed.status).toBe(400);
      expect(landed.body).toContain('post_logout_redirect_uri');
    }
  });
});
