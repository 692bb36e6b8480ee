import { createHash, randomUUID, webcrypto } from 'node:crypto';
import { calculateJwkThumbprint, decodeJwt, exportJWK, SignJWT, type KeyLike } from 'jose';
import { manualClock } from '../helpers/backend';
import { servedTestApp } from '../helpers/browser';
import { APP, oidcSignIn, PASSWORD } from '../helpers/oidc-sign-in';
import { cookieBrowser, firstForm } from '../helpers/social';
import { sha256Hex } from '../../src/domain/secrets';

// The OpenID Foundation's FAPI 2.0 Security Profile plan (fapi2-security-profile-final-test-plan:
// private_key_jwt, DPoP, OpenID Connect, plain FAPI, unsigned requests, plain responses), module by
// module (docs/openid-connect.md#certification), with openid-client 6 as the relying party where it
// speaks the flow and hand-made requests where a module sends what no client would: each test is
// named after the modules it covers and checks what they check. Modules that wait (an expired code
// or request_uri) check the lifetime instead of waiting it out; the TLS checks of
// ensure-holder-of-key-required are the proxy's in front of Gatehouse.

const clock = manualClock();
let served: Awaited<ReturnType<typeof servedTestApp>>;
let s: ReturnType<typeof oidcSignIn>;
let person: { email: string; uuid: string };
let one: FapiClient;
let two: FapiClient;

type FapiClient = Awaited<ReturnType<typeof fapiClient>>;
type KeyPair = { privateKey: webcrypto.CryptoKey; publicKey: webcrypto.CryptoKey };

/** A FAPI 2.0 client: its own P-256 key (private_key_jwt), a DPoP key, openid-client's view of it. */
async function fapiClient(settings: Record<string, string> = {}) {
  const added = await s.admin('/clients/add', { description: 'a FAPI 2.0 client', features: '["login_client"]' });
  const id = added.body.client_id as string;
  const pair = await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify']) as KeyPair;
  const { d: _d, key_ops: _ops, ext: _ext, ...publicJwk } = await webcrypto.subtle.exportKey('jwk', pair.privateKey);
  for (const [key, value] of Object.entries({
    jwks: JSON.stringify({ keys: [publicJwk] }), token_endpoint_auth_method: 'private_key_jwt', redirect_uris: APP, grant_types: 'authorization_code refresh_token',
    security_profile: 'fapi2', ...settings,
  })) {
    expect((await s.admin('/settings/set', { for_client_id: id, key, value })).body).toMatchObject({ stat: 'ok' });
  }
  clock.advance(5_100);
  const config = await s.oidc.discovery(new URL(served.base), id, undefined, s.oidc.PrivateKeyJwt(pair.privateKey), { execute: [s.oidc.allowInsecureRequests] });
  const dpopKeys = await s.oidc.randomDPoPKeyPair();
  return { id, pair, config, dpopKeys, dpop: s.oidc.getDPoPHandle(config, dpopKeys) };
}

beforeAll(async () => {
  served = await servedTestApp({ clock, env: { LOGIN_LIMIT_ADDRESS: '10000/900' } });
  s = oidcSignIn(served, clock);
  person = await s.account();
  one = await fapiClient();
  two = await fapiClient();
}, 60_000);
afterAll(() => served?.close());

/** What an authorization request asks: PKCE S256, a state and a nonce, and `extra` (a parameter set to '' is left out). */
async function asked(extra: Record<string, string> = {}) {
  const verifier = s.oidc.randomPKCECodeVerifier();
  const state = s.oidc.randomState();
  const nonce = s.oidc.randomNonce();
  const params: Record<string, string> = {
    redirect_uri: APP, scope: 'openid email offline_access', state, nonce, code_challenge: await s.oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', ...extra,
  };
  for (const [k, v] of Object.entries(params)) if (v === '') delete params[k];
  return { params, verifier, state: params.state, nonce: params.nonce };
}

const stopAt = (next: URL) => next.origin !== new URL(served.base).origin;

/** A browser at `url` signing in with the password when asked: where it is sent back to (not followed), and the page. */
async function follow(url: URL | string, browser = cookieBrowser()) {
  let page = await browser.go(url.toString(), { stopAt });
  if (new URL(page.url).pathname === '/signin') {
    const form = firstForm(page.body, page.url);
    page = await browser.go(form.action, { method: 'POST', form: { ...form.fields, signInEmailAddress: person.email, currentPassword: PASSWORD }, stopAt });
  }
  return { back: new URL(page.url), page, browser };
}

/** A pushed request with a DPoP proof, the browser's sign-in, and the code redeemed with the same key. */
async function signIn(c: FapiClient, extra: Record<string, string> = {}) {
  const a = await asked(extra);
  const url = await s.oidc.buildAuthorizationUrlWithPAR(c.config, a.params, { DPoP: c.dpop });
  const { back } = await follow(url);
  const tokens = await s.oidc.authorizationCodeGrant(c.config, back, { pkceCodeVerifier: a.verifier, expectedState: a.state, expectedNonce: a.nonce }, undefined, { DPoP: c.dpop });
  return { ...a, url, back, tokens };
}

/** A client assertion of `c`, its claims changed by `claims` (a claim set to undefined left out). */
async function assertion(c: FapiClient, claims: Record<string, unknown> = {}) {
  const now = Math.floor(clock.now().getTime() / 1000);
  const body = Object.fromEntries(Object.entries({ iss: c.id, sub: c.id, aud: served.base, jti: randomUUID(), iat: now, exp: now + 60, ...claims }).filter(([, v]) => v !== undefined));
  return new SignJWT(body).setProtectedHeader({ alg: 'ES256' }).sign(c.pair.privateKey);
}

/** A DPoP proof of `keys` for `htm` `htu`, its claims and header changed by `claims` and `header`. */
async function proof(keys: KeyPair, htm: string, htu: string, claims: Record<string, unknown> = {}, header: Record<string, unknown> = {}) {
  const body = Object.fromEntries(Object.entries({ htm, htu, jti: randomUUID(), iat: Math.floor(Date.now() / 1000), ...claims }).filter(([, v]) => v !== undefined));
  return new SignJWT(body).setProtectedHeader({ typ: 'dpop+jwt', alg: 'ES256', jwk: await exportJWK(keys.publicKey), ...header }).sign(keys.privateKey as KeyLike);
}

/**
 * A form POST to the provider's `path` as client `c` (its assertion, unless `auth` says otherwise), with a DPoP proof of
 * `keys` when given: a FAPI 2.0 client's proofs need the server's nonce, asked for once (use_dpop_nonce) and sent again.
 */
async function post(path: string, c: FapiClient, form: Record<string, string>, options: { keys?: KeyPair; auth?: Record<string, string>; proofClaims?: Record<string, unknown> } = {}) {
  const url = `${served.base}${path}`;
  const send = async (nonce?: string) => {
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
    if (options.keys) headers.dpop = await proof(options.keys, 'POST', url, { ...(nonce && { nonce }), ...options.proofClaims });
    const auth = options.auth ?? { client_id: c.id, client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer', client_assertion: await assertion(c) };
    return fetch(url, { method: 'POST', headers, body: new URLSearchParams({ ...auth, ...form }) });
  };
  let res = await send();
  const nonce = res.headers.get('dpop-nonce');
  if (res.status === 400 && nonce && options.keys) {
    const body = await res.clone().json() as { error?: string };
    if (body.error === 'use_dpop_nonce') res = await send(nonce);
  }
  const out = { status: res.status, body: await res.json() as Record<string, any>, headers: res.headers };
  return out;
}

/** A pushed request by hand: its request_uri, or the error. */
const par = (c: FapiClient, params: Record<string, string>, options: Parameters<typeof post>[3] = {}) => post('/oidc/request', c, { client_id: c.id, response_type: 'code', ...params }, options);

/** The authorization endpoint with a pushed request's request_uri (and `extra` parameters beside it). */
const authorizeUrl = (c: FapiClient, requestUri: string, extra: Record<string, string> = {}) =>
  `${served.base}/oidc/auth?${new URLSearchParams({ client_id: c.id, request_uri: requestUri, ...extra })}`;

/** userinfo with a DPoP-bound access token and a proof of `keys` (claims changed by `claims`), the scheme spelled `scheme`. */
async function userinfo(accessToken: string, keys: KeyPair, claims: Record<string, unknown> = {}, scheme = 'DPoP', header: Record<string, unknown> = {}) {
  const url = `${served.base}/oidc/me`;
  const dpop = await proof(keys, 'GET', url, { ath: createHash('sha256').update(accessToken).digest('base64url'), ...claims }, header);
  return fetch(url, { headers: { authorization: `${scheme} ${accessToken}`, dpop } });
}

describe('FAPI 2.0 Security Profile (fapi2-security-profile-final-test-plan: private_key_jwt, DPoP)', () => {
  it('fapi2-security-profile-final-discovery-end-point-verification: discovery names PAR, PKCE S256, the issuer in responses, DPoP and FAPI\'s algorithms', async () => {
    const m = one.config.serverMetadata();
    expect(m.pushed_authorization_request_endpoint).toBe(`${served.base}/oidc/request`);
    expect(m.code_challenge_methods_supported).toEqual(['S256']);
    expect(m.authorization_response_iss_parameter_supported).toBe(true);
    expect(m.token_endpoint_auth_methods_supported).toContain('private_key_jwt');
    expect(m.token_endpoint_auth_signing_alg_values_supported).toEqual(expect.arrayContaining(['ES256', 'PS256', 'EdDSA']));
    expect(m.token_endpoint_auth_signing_alg_values_supported).not.toContain('none');
    expect(m.dpop_signing_alg_values_supported).toEqual(['ES256', 'PS256', 'EdDSA']);
    expect(m.response_types_supported).toContain('code');
    expect(m.grant_types_supported).toEqual(expect.arrayContaining(['authorization_code', 'refresh_token']));
    expect(m.id_token_signing_alg_values_supported).toContain('ES256');
  });

  it('fapi2-security-profile-final-happy-flow, -ensure-dpopproof-at-par-endpoint-binding-success: two clients sign in (PAR, PKCE, DPoP); their tokens are bound to their keys, their ID tokens ES256', async () => {
    for (const c of [one, two]) {
      const got = await signIn(c);
      expect(got.back.searchParams.get('iss')).toBe(served.base);
      expect(got.tokens.token_type).toBe('dpop');
      expect(got.tokens.claims()).toMatchObject({ iss: served.base, aud: c.id, sub: person.uuid, nonce: got.nonce });
      expect(JSON.parse(Buffer.from(got.tokens.id_token!.split('.')[0], 'base64url').toString()).alg).toBe('ES256');
      expect((await s.oidc.fetchUserInfo(c.config, got.tokens.access_token, person.uuid, { DPoP: c.dpop })).sub).toBe(person.uuid);
    }
  });

  it('fapi2-security-profile-final-user-rejects-authentication: the person refuses on the consent page; the app gets access_denied with the issuer', async () => {
    const asking = await fapiClient({ consent_page: 'on' });
    const a = await asked();
    const { page, browser } = await follow(await s.oidc.buildAuthorizationUrlWithPAR(asking.config, a.params, { DPoP: asking.dpop }));
    const form = firstForm(page.body, page.url);
    const back = new URL((await browser.go(form.action, { method: 'POST', form: { ...form.fields, choice: 'deny' }, stopAt })).url);
    expect(Object.fromEntries(back.searchParams)).toMatchObject({ error: 'access_denied', state: a.state, iss: served.base });
  });

  it('fapi2-security-profile-final-ensure-authorization-request-without-state-success, -without-nonce-success, -with-64-char-nonce-success, -with-long-nonce, -with-long-state, -ensure-other-scope-order-succeeds', async () => {
    const noState = await signIn(one, { state: '' });
    expect(noState.back.searchParams.has('state')).toBe(false);
    const noNonce = await signIn(one, { nonce: '' });
    expect(noNonce.tokens.claims()).not.toHaveProperty('nonce');
    for (const length of [64, 384]) {
      const nonce = 'n'.repeat(length);
      expect((await signIn(one, { nonce })).tokens.claims()!.nonce).toBe(nonce);
    }
    const state = 's'.repeat(384);
    expect((await signIn(one, { state })).back.searchParams.get('state')).toBe(state);
    expect((await signIn(one, { scope: 'offline_access email openid' })).tokens.claims()!.sub).toBe(person.uuid);
  });

  it('fapi2-security-profile-final-test-claims-parameter-identity-claims: claims asked for in the claims parameter are in the ID token', async () => {
    const got = await signIn(one, { claims: JSON.stringify({ id_token: { email: null } }) });
    expect(got.tokens.claims()!.email).toBe(person.email);
  });

  it('fapi2-security-profile-final-access-token-type-header-case-sensitivity: userinfo takes the scheme in any case', async () => {
    const { tokens } = await signIn(one);
    for (const scheme of ['DPoP', 'dpop', 'DPOP']) expect((await userinfo(tokens.access_token, one.dpopKeys, {}, scheme)).status).toBe(200);
  });

  it('fapi2-security-profile-final-check-dpop-proof-nbf-exp, -ensure-dpopproof-with-iat-10seconds-before-succeeds, -after-succeeds: proofs with nbf and exp, or 10 s off, are taken; one minutes off without a nonce is not', async () => {
    const { tokens } = await signIn(one);
    const now = Math.floor(Date.now() / 1000);
    for (const claims of [{ nbf: now, exp: now + 300 }, { iat: now - 10 }, { iat: now + 10 }]) expect((await userinfo(tokens.access_token, one.dpopKeys, claims)).status).toBe(200);
    for (const iat of [now - 600, now + 600]) expect((await userinfo(tokens.access_token, one.dpopKeys, { iat })).status).toBe(401);
    // at the token endpoint and the pushed request too (where a FAPI 2.0 client's proofs carry the server's nonce)
    let refreshToken = tokens.refresh_token!;
    for (const claims of [{ nbf: now, exp: now + 300 }, { iat: now - 10 }, { iat: now + 10 }]) {
      const refreshed = await post('/oidc/token', one, { grant_type: 'refresh_token', refresh_token: refreshToken }, { keys: one.dpopKeys, proofClaims: claims });
      expect(refreshed.status).toBe(200);
      refreshToken = refreshed.body.refresh_token;
      expect((await par(one, (await asked()).params, { keys: one.dpopKeys, proofClaims: claims })).status).toBe(201);
    }
  });

  it('fapi2-security-profile-final-ensure-mismatched-dpop-jkt-fails, -ensure-token-endpoint-fails-with-mismatched-dpop-proof-jkt, -with-mismatched-dpop-jkt, -ensure-dpop-auth-code-binding-success', async () => {
    const other = await s.oidc.randomDPoPKeyPair();
    const otherJkt = await calculateJwkThumbprint(await exportJWK(other.publicKey));
    const ownJkt = await calculateJwkThumbprint(await exportJWK(one.dpopKeys.publicKey));
    // a dpop_jkt that is not the proof's key, at the pushed request
    expect((await par(one, { ...(await asked()).params, dpop_jkt: otherJkt }, { keys: one.dpopKeys })).body.error).toBe('invalid_request');
    // the code bound by the pushed request's proof: redeemed with another key, refused
    const bound = await asked();
    const { back } = await follow(await s.oidc.buildAuthorizationUrlWithPAR(one.config, bound.params, { DPoP: one.dpop }));
    await expect(s.oidc.authorizationCodeGrant(one.config, back, { pkceCodeVerifier: bound.verifier, expectedState: bound.state }, undefined, { DPoP: s.oidc.getDPoPHandle(one.config, other) }))
      .rejects.toMatchObject({ error: 'invalid_grant' });
    // bound by dpop_jkt alone (no proof at the push): another key refused, its own taken
    for (const [jkt, ok] of [[otherJkt, false], [ownJkt, true]] as const) {
      const a = await asked({ dpop_jkt: jkt });
      const at = await follow(await s.oidc.buildAuthorizationUrlWithPAR(one.config, a.params));
      const redeemed = s.oidc.authorizationCodeGrant(one.config, at.back, { pkceCodeVerifier: a.verifier, expectedState: a.state, expectedNonce: a.nonce }, undefined, { DPoP: one.dpop });
      if (ok) expect((await redeemed).token_type).toBe('dpop');
      else await expect(redeemed).rejects.toMatchObject({ error: 'invalid_grant' });
    }
  });

  it('fapi2-security-profile-final-dpop-negative-tests: a proof for another method or address, without or with the wrong ath, of typ jwt, alg none, or a bad signature is refused', async () => {
    const { tokens } = await signIn(one);
    expect((await userinfo(tokens.access_token, one.dpopKeys)).status).toBe(200);
    for (const claims of [{ htm: 'POST' }, { htu: `${served.base}/oidc/token` }, { ath: undefined }, { ath: 'A'.repeat(43) }, { jti: undefined }]) {
      expect((await userinfo(tokens.access_token, one.dpopKeys, claims)).status).toBe(401);
    }
    expect((await userinfo(tokens.access_token, one.dpopKeys, {}, 'DPoP', { typ: 'JWT' })).status).toBe(401);
    const good = await proof(one.dpopKeys, 'GET', `${served.base}/oidc/me`, { ath: createHash('sha256').update(tokens.access_token).digest('base64url') });
    const [h, p] = good.split('.');
    const none = `${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(h, 'base64url').toString()), alg: 'none' })).toString('base64url')}.${p}.`;
    const tampered = `${h}.${Buffer.from(JSON.stringify({ ...decodeJwt(good), htm: 'GET', jti: randomUUID() })).toString('base64url')}.${good.split('.')[2]}`;
    for (const dpop of [none, tampered]) {
      expect((await fetch(`${served.base}/oidc/me`, { headers: { authorization: `DPoP ${tokens.access_token}`, dpop } })).status).toBe(401);
    }
    // a bearer use of the bound token
    expect((await fetch(`${served.base}/oidc/me`, { headers: { authorization: `Bearer ${tokens.access_token}` } })).status).toBe(401);
  });

  it('fapi2-security-profile-final-ensure-different-nonce-inside-and-outside-request-object, -different-state-inside-and-outside, -state-only-outside-request-object-not-used: only what was pushed counts', async () => {
    const a = await asked();
    const pushed = await par(one, a.params, { keys: one.dpopKeys });
    expect(pushed.status).toBe(201);
    const { back } = await follow(authorizeUrl(one, pushed.body.request_uri, { nonce: 'outside', state: 'outside' }));
    expect(back.searchParams.get('state')).toBe(a.state);
    const tokens = await s.oidc.authorizationCodeGrant(one.config, back, { pkceCodeVerifier: a.verifier, expectedState: a.state, expectedNonce: a.nonce }, undefined, { DPoP: one.dpop });
    expect(tokens.claims()!.nonce).toBe(a.nonce);
    const stateless = await asked({ state: '' });
    const pushedStateless = await par(one, stateless.params, { keys: one.dpopKeys });
    const out = await follow(authorizeUrl(one, pushedStateless.body.request_uri, { state: 'outside' }));
    expect(out.back.searchParams.get('code')).toEqual(expect.any(String));
    expect(out.back.searchParams.has('state')).toBe(false);
  });

  it('fapi2-security-profile-final-ensure-request-object-without-redirect-uri-fails, -ensure-redirect-uri-in-authorization-request, -plain-fapi-tolerate-unregistered-redirect-uri: a pushed request without redirect_uri, or with one not registered, is refused', async () => {
    expect((await par(one, (await asked({ redirect_uri: '' })).params)).body.error).toBe('invalid_request');
    expect((await par(one, (await asked({ redirect_uri: 'https://evil.example/cb' })).params)).body.error).toMatch(/^invalid_(request|redirect_uri)$/);
  });

  it('fapi2-security-profile-final-ensure-unsigned-authorization-request-without-using-par-fails, -ensure-response-type-code-idtoken-fails, -ensure-response-type-token-fails', async () => {
    const a = await asked();
    const direct = await follow(`${served.base}/oidc/auth?${new URLSearchParams({ client_id: one.id, response_type: 'code', ...a.params })}`);
    expect(direct.back.searchParams.get('error')).toBe('invalid_request');
    expect(direct.back.searchParams.get('code')).toBeNull();
    for (const responseType of ['code id_token', 'token']) {
      expect((await par(one, { ...(await asked()).params, response_type: responseType })).body.error).toMatch(/^(unsupported_response_type|invalid_request|unauthorized_client)$/);
    }
  });

  it('fapi2-security-profile-final-ensure-client-id-in-token-endpoint, -ensure-authorization-code-is-bound-to-client, -attempt-reuse-authorization-code-after-one-second', async () => {
    const a = await asked();
    const { back } = await follow(await s.oidc.buildAuthorizationUrlWithPAR(one.config, a.params, { DPoP: one.dpop }));
    const code = back.searchParams.get('code')!;
    const form = { grant_type: 'authorization_code', code, redirect_uri: APP, code_verifier: a.verifier };
    // the other client's client_id with this client's assertion
    // the other client's client_id, and an assertion naming it signed with this client's key
    const mixed = await post('/oidc/token', one, form, {
      keys: one.dpopKeys, auth: { client_id: two.id, client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer', client_assertion: await assertion(one, { iss: two.id, sub: two.id }) },
    });
    expect([mixed.status, mixed.body.error]).toEqual([401, 'invalid_client']);
    // the other client, authenticated as itself
    expect((await post('/oidc/token', two, form, { keys: one.dpopKeys })).body.error).toBe('invalid_grant');
    expect((await post('/oidc/token', one, form, { keys: one.dpopKeys })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1_000));
    expect((await post('/oidc/token', one, form, { keys: one.dpopKeys })).body.error).toBe('invalid_grant');
  });

  it('fapi2-security-profile-final-ensure-token-endpoint-fails-with-expired-auth-code: a code lives 60 seconds (the suite waits it out; here its row says so)', async () => {
    const a = await asked();
    const { back } = await follow(await s.oidc.buildAuthorizationUrlWithPAR(one.config, a.params, { DPoP: one.dpop }));
    const app = (await served.t.runtime.db.applications.findByName('local'))!;
    const row = (await served.t.runtime.db.credentials.find(app.id, 'oidc_code', sha256Hex(back.searchParams.get('code')!)))!;
    expect((row.expiresAt.getTime() - row.createdAt!.getTime()) / 1000).toBeCloseTo(60, 0);
  });

  it('fapi2-security-profile-final-ensure-holder-of-key-required: a token request without a DPoP proof is refused', async () => {
    const a = await asked();
    const { back } = await follow(await s.oidc.buildAuthorizationUrlWithPAR(one.config, a.params, { DPoP: one.dpop }));
    const res = await post('/oidc/token', one, { grant_type: 'authorization_code', code: back.searchParams.get('code')!, redirect_uri: APP, code_verifier: a.verifier });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(/^(invalid_request|invalid_dpop_proof|invalid_grant)$/);
  });

  it('fapi2-security-profile-final-ensure-signed-client-assertion-with-RS256-fails, -ensure-client-assertion-in-token-endpoint, -with-exp-is-5-minutes-in-past-fails, -with-wrong-aud-fails, -with-no-sub-fails', async () => {
    const { tokens } = await signIn(one);
    const refresh = { grant_type: 'refresh_token', refresh_token: tokens.refresh_token! };
    const jwtBearer = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
    const now = Math.floor(clock.now().getTime() / 1000);
    for (const auth of [
      { client_id: one.id } as Record<string, string>,
      { client_id: one.id, client_assertion_type: jwtBearer, client_assertion: await assertion(one, { iat: now - 360, exp: now - 300 }) },
      { client_id: one.id, client_assertion_type: jwtBearer, client_assertion: await assertion(one, { aud: 'https://elsewhere.example' }) },
      { client_id: one.id, client_assertion_type: jwtBearer, client_assertion: await assertion(one, { sub: undefined }) },
    ]) {
      const res = await post('/oidc/token', one, refresh, { keys: one.dpopKeys, auth });
      expect([res.status, res.body.error]).toEqual([expect.any(Number), expect.stringMatching(/^invalid_(client|request)$/)]);
      expect(res.status).toBeGreaterThanOrEqual(400);
    }
    // (RS256: a client with an RSA key, refused in oidc-high-security.test.ts; this client's key is EC, for which the suite skips the module)
    expect((await post('/oidc/token', one, refresh, { keys: one.dpopKeys })).status).toBe(200);
  });

  it('fapi2-security-profile-final-refresh-token: the refresh token refreshes with DPoP, is bound to its client, and is refused without client authentication', async () => {
    const { tokens } = await signIn(one);
    const refreshed = await s.oidc.refreshTokenGrant(one.config, tokens.refresh_token!, undefined, { DPoP: one.dpop });
    expect(refreshed.token_type).toBe('dpop');
    expect((await post('/oidc/token', two, { grant_type: 'refresh_token', refresh_token: refreshed.refresh_token! }, { keys: one.dpopKeys })).body.error).toBe('invalid_grant');
    expect((await post('/oidc/token', one, { grant_type: 'refresh_token', refresh_token: refreshed.refresh_token! }, { keys: one.dpopKeys, auth: { client_id: one.id } })).body.error)
      .toMatch(/^invalid_(client|request)$/);
    // (the rotated token is spent)
    await expect(s.oidc.refreshTokenGrant(one.config, tokens.refresh_token!, undefined, { DPoP: one.dpop })).rejects.toMatchObject({ error: 'invalid_grant' });
  });

  it('fapi2-security-profile-final-par-ensure-reused-request-uri-prior-to-auth-completion-succeeds, -par-attempt-reuse-request_uri, -par-attempt-to-use-expired-request_uri, -par-without-duplicate-parameters', async () => {
    const a = await asked();
    const pushed = await par(one, a.params, { keys: one.dpopKeys });
    expect(pushed.body.expires_in).toBeLessThanOrEqual(600);
    const browser = cookieBrowser();
    // opened twice before the sign-in: both show it
    for (const _ of [1, 2]) expect(new URL((await browser.go(authorizeUrl(one, pushed.body.request_uri), { stopAt })).url).pathname).toBe('/signin');
    // only client_id and request_uri: the sign-in completes
    const { back } = await follow(authorizeUrl(one, pushed.body.request_uri), browser);
    expect(back.searchParams.get('code')).toEqual(expect.any(String));
    // spent: a second use gets no code
    const again = await follow(authorizeUrl(one, pushed.body.request_uri));
    expect(again.back.searchParams.get('code')).toBeNull();
  });

  it('fapi2-security-profile-final-par-attempt-to-use-request_uri-for-different-client, -par-authorization-request-containing-request_uri-form-param, -par-attempt-invalid-http-method', async () => {
    const pushed = await par(one, (await asked()).params, { keys: one.dpopKeys });
    const stolen = await follow(authorizeUrl(two, pushed.body.request_uri));
    expect(stolen.back.searchParams.get('code')).toBeNull();
    expect((await par(one, { ...(await asked()).params, request_uri: pushed.body.request_uri })).body.error).toMatch(/^(invalid_request|invalid_request_object|request_uri_not_supported)$/);
    const get = await fetch(`${served.base}/oidc/request?client_id=${one.id}`);
    expect([get.status, get.headers.get('allow'), (await get.json() as { error: string }).error]).toEqual([405, 'POST', 'invalid_request']);
  });

  it('fapi2-security-profile-final-par-ensure-pkce-required, -par-plain-pkce-rejected, -ensure-pkce-code-verifier-required, -incorrect-pkce-code-verifier-rejected', async () => {
    expect((await par(one, (await asked({ code_challenge: '', code_challenge_method: '' })).params)).body.error).toBe('invalid_request');
    expect((await par(one, (await asked({ code_challenge: 'x'.repeat(43), code_challenge_method: 'plain' })).params)).body.error).toBe('invalid_request');
    const a = await asked();
    const { back } = await follow(await s.oidc.buildAuthorizationUrlWithPAR(one.config, a.params, { DPoP: one.dpop }));
    const form = { grant_type: 'authorization_code', code: back.searchParams.get('code')!, redirect_uri: APP };
    expect((await post('/oidc/token', one, form, { keys: one.dpopKeys })).body.error).toMatch(/^invalid_(grant|request)$/);
    expect((await post('/oidc/token', one, { ...form, code_verifier: s.oidc.randomPKCECodeVerifier() }, { keys: one.dpopKeys })).body.error).toBe('invalid_grant');
  });

  it('fapi2-security-profile-final-par-ensure-jwt-client-assertions-nbf-8-seconds-in-the-future-is-accepted, -nbf-over-60-seconds-in-the-future-fails, -par-test-array-as-audience-fails, -par-endpoint-url-as-audience-fails, -token-endpoint-url-as-audience-fails', async () => {
    const jwtBearer = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
    const now = Math.floor(Date.now() / 1000);
    const pushedWith = async (claims: Record<string, unknown>) => par(one, (await asked()).params, {
      auth: { client_id: one.id, client_assertion_type: jwtBearer, client_assertion: await assertion(one, claims) },
    });
    expect((await pushedWith({ nbf: now + 8, iat: now + 8, exp: now + 68 })).status).toBe(201);
    expect((await pushedWith({ nbf: now + 65, iat: now + 65, exp: now + 125 })).status).toBeGreaterThanOrEqual(400);
    for (const aud of [[served.base], `${served.base}/oidc/request`, `${served.base}/oidc/token`]) {
      const res = await pushedWith({ aud });
      expect([res.status >= 400, res.body.error]).toEqual([true, 'invalid_client']);
    }
  });

  it('beyond the plan: a pushed request for offline_access gets its refresh token (consent added as for a link, at any spelling of the path); one larger than 56 KB is 413 with the reason', async () => {
    const a = await asked({ scope: 'openid offline_access' });
    const pushed = await post('/oidc/Request/', one, { client_id: one.id, response_type: 'code', ...a.params });
    expect(pushed.status).toBe(201);
    const { back } = await follow(authorizeUrl(one, pushed.body.request_uri));
    const tokens = await s.oidc.authorizationCodeGrant(one.config, back, { pkceCodeVerifier: a.verifier, expectedState: a.state, expectedNonce: a.nonce }, undefined, { DPoP: one.dpop });
    expect(tokens.refresh_token).toEqual(expect.any(String));
    const large = await post('/oidc/request', one, { client_id: one.id, response_type: 'code', ...a.params, padding: 'x'.repeat(60 * 1024) });
    expect([large.status, large.body.error, large.body.error_description]).toEqual([413, 'invalid_request', 'the pushed request is larger than 56 KB']);
  });
});
