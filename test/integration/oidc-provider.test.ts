import { createPublicKey, verify as verifySignature, webcrypto, type JsonWebKey } from 'node:crypto';
import request from 'supertest';
import { basic, createApp, manualClock } from '../helpers/backend';
import { resolveLocalhostNames, servedTestApp } from '../helpers/browser';
import { openidClient } from '../helpers/openid-client';
import { rotateSigningKeys } from '../../src/usecases/keys/signing-keys';
import { disableUser } from '../../src/usecases/operators/disable-user';
import { ACR_MULTI_FACTOR, ACR_PHISHING_RESISTANT } from '../../src/domain/session';
import { buildApp } from '../../src/app';
import { createLogger } from '../../src/logger';
import { createRuntime } from '../../src/runtime';
import { stored } from '../helpers/stored';
import { cookieBrowser, firstForm } from '../helpers/social';
import { APP, PASSWORD, oathtool, oidcSignIn } from '../helpers/oidc-sign-in';
import { operatorActing } from '../../src/usecases/operators/deps';

// Gatehouse as an OpenID provider (docs/openid-connect.md), checked by a relying party nobody here
// wrote: openid-client 6 discovers it, authenticates with the login client's secret, and uses the
// client credentials grant, introspection (RFC 7662) and revocation (RFC 7009). The keys: ES256 and
// RS256, the next ones published before they sign, never a private part.

// at the start of a 30-second step, so that the authenticator's next code is known
const clock = manualClock(new Date(Math.floor(Date.now() / 30_000) * 30_000 + 2_000));
let restoreNames: () => void;
let served: Awaited<ReturnType<typeof servedTestApp>>;
let login: { client_id: string; client_secret: string };
let admin: ReturnType<typeof oidcSignIn>['admin'];
let account: ReturnType<typeof oidcSignIn>['account'];
let discovered: ReturnType<typeof oidcSignIn>['discovered'];
let authorize: ReturnType<typeof oidcSignIn>['authorize'];
const oidc = openidClient();

beforeAll(async () => {
  // served as localhost: another application answers at its own host, conf.localhost
  restoreNames = resolveLocalhostNames();
  served = await servedTestApp({ clock, env: { LOGIN_LIMIT_ADDRESS: '10000/900' } });
  ({ login, admin, account, discovered, authorize } = oidcSignIn(served, clock));
  // an application is an OpenID provider unless it turns it off
  expect((await admin('/settings/set', { for_client_id: login.client_id, key: 'grant_types', value: 'authorization_code refresh_token client_credentials' })).body.stat).toBe('ok');
  expect((await admin('/settings/set', { for_client_id: login.client_id, key: 'redirect_uris', value: APP })).body.stat).toBe('ok');
  // the application's settings are cached for a few seconds per process
  clock.advance(5_100);
});

afterAll(async () => {
  await served?.close();
  restoreNames?.();
});

/** Turns an authenticator app on for the account (through the API, its first code oathtool's): its secret. */
async function withAuthenticator(email: string): Promise<string> {
  const post = (path: string, params: Record<string, string>) => request(served.t.app).post(path).type('form').send(params);
  const signed = await post('/oauth/auth_native_traditional', { client_id: login.client_id, locale: 'en-US', signInEmailAddress: email, currentPassword: PASSWORD });
  expect(signed.body.stat).toBe('ok');
  const enrolled = await post('/oauth/totp_enroll_native', { access_token: signed.body.access_token });
  expect(enrolled.body.stat).toBe('ok');
  const confirmed = await post('/oauth/totp_confirm_native', { access_token: signed.body.access_token, code: oathtool(enrolled.body.secret, clock.now()) });
  expect(confirmed.body.stat).toBe('ok');
  return enrolled.body.secret as string;
}

/** A JWT's header and payload, read without checking anything. */
const jwtParts = (jwt: string) => jwt.split('.').slice(0, 2).map((p) => JSON.parse(Buffer.from(p, 'base64url').toString()) as Record<string, unknown>);


it('is on unless the application turns it off', async () => {
  expect((await request(served.t.app).get('/.well-known/openid-configuration')).status).toBe(200);
  expect((await admin('/settings/set_default', { key: 'openid_provider', value: 'off' })).body.stat).toBe('ok');
  // settings (and keys) are cached for a few seconds per process
  clock.advance(5_100);
  try {
    expect((await request(served.t.app).get('/.well-known/openid-configuration')).status).toBe(404);
  } finally {
    expect((await admin('/settings/set_default', { key: 'openid_provider', value: 'on' })).body.stat).toBe('ok');
    clock.advance(5_100);
  }
  expect((await admin('/settings/set_default', { key: 'openid_provider', value: 'maybe' })).body).toMatchObject({ code: 200 });
});

it('discovery: the issuer is the application\'s address, the endpoints are under /oidc/, and openid-client accepts it', async () => {
  const config = await discovered();
  const meta = config.serverMetadata();
  expect(meta.issuer).toBe(served.base);
  expect(meta.token_endpoint).toBe(`${served.base}/oidc/token`);
  expect(meta.jwks_uri).toBe(`${served.base}/oidc/jwks`);
  expect(meta.introspection_endpoint).toBe(`${served.base}/oidc/token/introspection`);
  expect(meta.revocation_endpoint).toBe(`${served.base}/oidc/token/revocation`);
  expect(meta.code_challenge_methods_supported).toEqual(['S256']);
  expect(meta.id_token_signing_alg_values_supported).toEqual(expect.arrayContaining(['ES256', 'RS256']));
  expect(meta.id_token_signing_alg_values_supported).not.toContain('none');
  expect(meta.scopes_supported).toEqual(expect.arrayContaining(['openid', 'offline_access', 'profile', 'email', 'phone', 'address']));
});

it('JWKS: a current and a next key of ES256 and RS256, public parts only; a rotation publishes a new next key and keeps the old one', async () => {
  const jwks = (await request(served.t.app).get('/oidc/jwks')).body as { keys: Record<string, string>[] };
  expect(jwks.keys.map((k) => k.alg).sort()).toEqual(['ES256', 'ES256', 'RS256', 'RS256']);
  for (const k of jwks.keys) {
    expect(k).toMatchObject({ use: 'sig', kid: expect.any(String) });
    for (const secret of ['d', 'p', 'q', 'dp', 'dq', 'qi']) expect(k).not.toHaveProperty(secret);
  }
  // stored sealed: no private part in clear anywhere in the table
  const rows = await stored(served.t.runtime.db).rows<{ private_sealed: string; public_jwk: string }>('SELECT private_sealed, public_jwk FROM signing_keys');
  expect(JSON.stringify(rows)).not.toMatch(/"d":/);
  const app = (await served.t.runtime.db.applications.findByName('local'))!;
  const { services } = served.t.runtime;
  const acting = { actor: { kind: 'operator' as const, name: 'test' }, origin: {} };
  // a next key published moments ago is not ready to sign
  await expect(rotateSigningKeys(services, { applicationId: app.id, applicationName: 'local', acting })).rejects.toMatchObject({ reason: 'nothing_to_do' });
  const rotated = await rotateSigningKeys(services, { applicationId: app.id, applicationName: 'local', acting, force: true });
  const before = new Set(jwks.keys.map((k) => k.kid));
  // what signs now was published before
  for (const k of rotated.current) expect(before.has(k.kid)).toBe(true);
  expect(rotated.retired).toHaveLength(2);
  clock.advance(5_100);
  const after = (await request(served.t.app).get('/oidc/jwks')).body as { keys: { kid: string }[] };
  expect(after.keys).toHaveLength(6);
  for (const kid of before) expect(after.keys.map((k) => k.kid)).toContain(kid);
});

it('client credentials: a token for the client itself, active at introspection until revoked; the wrong secret gets nothing', async () => {
  const config = await discovered();
  const token = await oidc.clientCredentialsGrant(config);
  expect(token.access_token).toEqual(expect.any(String));
  expect(token.token_type).toMatch(/^bearer$/i);
  const active = await oidc.tokenIntrospection(config, token.access_token);
  expect(active).toMatchObject({ active: true, client_id: login.client_id });
  // stored as its hash only
  expect(JSON.stringify(await stored(served.t.runtime.db).rows("SELECT value_hash FROM credentials WHERE kind = 'oidc_client_token'"))).not.toContain(token.access_token);
  await oidc.tokenRevocation(config, token.access_token);
  expect(await oidc.tokenIntrospection(config, token.access_token)).toEqual({ active: false });

  const wrong = await oidc.discovery(new URL(served.base), login.client_id, 'not the secret', undefined, { execute: [oidc.allowInsecureRequests] });
  await expect(oidc.clientCredentialsGrant(wrong)).rejects.toMatchObject({ error: 'invalid_client' });
});

it('a client that is not a login client, or unknown, is not an OpenID client', async () => {
  const owner = served.t.local.clients.owner;
  const config = await oidc.discovery(new URL(served.base), owner.client_id, owner.client_secret, undefined, { execute: [oidc.allowInsecureRequests] });
  await expect(oidc.clientCredentialsGrant(config)).rejects.toMatchObject({ error: 'invalid_client' });
  const unknown = await oidc.discovery(new URL(served.base), 'nobody', 'x', undefined, { execute: [oidc.allowInsecureRequests] });
  await expect(oidc.clientCredentialsGrant(unknown)).rejects.toMatchObject({ error: 'invalid_client' });
});

describe('the authorization code flow through the hosted sign-in', () => {
  it('PKCE, the hosted /signin, the ID token checked by openid-client (iss, aud, nonce, amr, auth_time), userinfo', async () => {
    const a = await account();
    const config = await discovered();
    const { back, verifier, state, nonce, browser } = await authorize(config, a.email);
    expect(`${back.origin}${back.pathname}`).toBe(APP);
    expect(back.searchParams.get('state')).toBe(state);
    expect(back.searchParams.get('iss')).toBe(served.base);
    const tokens = await oidc.authorizationCodeGrant(config, back, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce });
    const claims = tokens.claims()!;
    expect(claims).toMatchObject({ iss: served.base, aud: login.client_id, sub: a.uuid, nonce, amr: ['pwd'] });
    // the profile is userinfo's: the ID token says who and how, not what
    expect(claims.email).toBeUndefined();
    expect(typeof claims.auth_time).toBe('number');
    expect(tokens.refresh_token).toEqual(expect.any(String));
    const info = await oidc.fetchUserInfo(config, tokens.access_token, a.uuid);
    expect(info).toMatchObject({ sub: a.uuid, email: a.email, email_verified: false, given_name: 'Ada', family_name: 'Lovelace', name: 'Ada Lovelace' });
    // no value that signs anyone in is stored: not the code, the tokens, nor the provider's session cookie
    const rows = JSON.stringify(await stored(served.t.runtime.db).rows('SELECT * FROM credentials')) + JSON.stringify(await stored(served.t.runtime.db).rows('SELECT * FROM oidc_state'));
    const sessionCookie = [...browser.jar.values()].find((c) => c.name === '_session')?.value;
    for (const value of [back.searchParams.get('code')!, tokens.access_token, tokens.refresh_token!, tokens.id_token!, sessionCookie!]) {
      expect(value).toBeTruthy();
      expect(rows).not.toContain(value);
    }
  });

  it('a second sign-in in the same browser is not asked again (single sign-on); prompt=none without a session answers login_required', async () => {
    const a = await account();
    const config = await discovered();
    const first = await authorize(config, a.email);
    expect(first.back.searchParams.get('code')).toBeTruthy();
    // the same browser: straight back with a code, no sign-in page
    const again = await authorize(config, a.email, { prompt: 'none', scope: 'openid email' }, first.browser);
    expect(first.asked).toBe(true);
    expect(again.asked).toBe(false);
    expect(again.back.searchParams.get('code')).toBeTruthy();
    const tokens = await oidc.authorizationCodeGrant(config, again.back, { pkceCodeVerifier: again.verifier, expectedState: again.state, expectedNonce: again.nonce });
    expect(tokens.claims()!.sub).toBe(a.uuid);
    // another browser
    const stranger = await authorize(config, a.email, { prompt: 'none', scope: 'openid' }, cookieBrowser());
    expect(stranger.back.searchParams.get('error')).toBe('login_required');
  });

  it('refresh rotates; a refresh token used again gets invalid_grant and ends its family', async () => {
    const a = await account();
    const config = await discovered();
    const { back, verifier, state, nonce } = await authorize(config, a.email);
    const tokens = await oidc.authorizationCodeGrant(config, back, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce });
    const rotated = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    expect(rotated.refresh_token).not.toBe(tokens.refresh_token);
    await expect(oidc.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    await expect(oidc.refreshTokenGrant(config, rotated.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    expect(await oidc.tokenIntrospection(config, rotated.access_token)).toEqual({ active: false });
  });

  it('a code used twice: invalid_grant, and the tokens it gave revoked; 20 parallel redemptions of one code: one success', async () => {
    const a = await account();
    const config = await discovered();
    const { back, verifier, state, nonce } = await authorize(config, a.email);
    const tokens = await oidc.authorizationCodeGrant(config, back, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce });
    await expect(oidc.authorizationCodeGrant(config, back, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce })).rejects.toMatchObject({ error: 'invalid_grant' });
    expect(await oidc.tokenIntrospection(config, tokens.access_token)).toEqual({ active: false });

    const race = await authorize(config, a.email);
    const tries = await Promise.allSettled(Array.from({ length: 20 }, () =>
      oidc.authorizationCodeGrant(config, race.back, { pkceCodeVerifier: race.verifier, expectedState: race.state, expectedNonce: race.nonce })));
    expect(tries.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    for (const lost of tries.filter((r): r is PromiseRejectedResult => r.status === 'rejected')) expect(lost.reason).toMatchObject({ error: 'invalid_grant' });
  });

  it('a wrong PKCE verifier, or a redirect_uri off the client\'s list (no redirect), is refused', async () => {
    const a = await account();
    const config = await discovered();
    const { back, state, nonce } = await authorize(config, a.email);
    await expect(oidc.authorizationCodeGrant(config, back, { pkceCodeVerifier: oidc.randomPKCECodeVerifier(), expectedState: state, expectedNonce: nonce }))
      .rejects.toMatchObject({ error: 'invalid_grant' });
    const evil = oidc.buildAuthorizationUrl(config, { redirect_uri: 'https://evil.example/cb', scope: 'openid', state: 'x', code_challenge: 'a'.repeat(43), code_challenge_method: 'S256' });
    const res = await fetch(evil, { redirect: 'manual' });
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    // a page in the application's look, saying what to fix, under the pages' strict policy
    const page = await res.text();
    expect(page).toContain('The sign-in could not be completed');
    expect(page).toContain('is not one of the client');
    expect(res.headers.get('content-security-policy')).toContain("default-src 'none'");
  });

  it('prompt=login asks again in a browser that has a session; a client set to ES256 gets ES256 ID tokens', async () => {
    const a = await account();
    const config = await discovered();
    const first = await authorize(config, a.email);
    expect(first.back.searchParams.get('code')).toBeTruthy();
    // the same browser, asked to sign in again: the sign-in page again, then a code
    const again = await authorize(config, a.email, { prompt: 'login' }, first.browser);
    expect(again.asked).toBe(true);
    expect(again.back.searchParams.get('code')).toBeTruthy();
    // without prompt=login the session answers
    expect((await authorize(config, a.email, {}, first.browser)).asked).toBe(false);
    expect((await admin('/settings/set', { for_client_id: login.client_id, key: 'id_token_signed_response_alg', value: 'ES256' })).body.stat).toBe('ok');
    clock.advance(5_100);
    try {
      const es = await authorize(config, a.email, {}, first.browser);
      const tokens = await oidc.authorizationCodeGrant(config, es.back, { pkceCodeVerifier: es.verifier, expectedState: es.state, expectedNonce: es.nonce });
      const header = JSON.parse(Buffer.from(tokens.id_token!.split('.')[0], 'base64url').toString()) as { alg: string; kid: string };
      expect(header.alg).toBe('ES256');
      const jwks = (await request(served.t.app).get('/oidc/jwks')).body as { keys: { kid: string; alg: string }[] };
      expect(jwks.keys.find((k) => k.kid === header.kid)?.alg).toBe('ES256');
    } finally {
      await admin('/settings/set', { for_client_id: login.client_id, key: 'id_token_signed_response_alg', value: 'RS256' });
      clock.advance(5_100);
    }
  });

  it('signing out of the account page ends the apps\' silent sign-ins in that browser', async () => {
    const a = await account();
    const config = await discovered();
    const first = await authorize(config, a.email);
    expect((await authorize(config, a.email, { prompt: 'none', scope: 'openid' }, first.browser)).back.searchParams.get('code')).toBeTruthy();
    const page = await first.browser.go(`${served.base}/account`);
    const token = /name="csrf" value="([^"]+)"/.exec(page.body)![1];
    await first.browser.go(`${served.base}/account/signout`, { method: 'POST', form: { csrf: token } });
    const after = await authorize(config, a.email, { prompt: 'none', scope: 'openid' }, first.browser);
    expect(after.back.searchParams.get('error')).toBe('login_required');
  });

  it('a client introspects its own tokens only', async () => {
    const added = await admin('/clients/add', { description: 'another app', features: '["login_client"]' });
    const other = { id: added.body.client_id as string, secret: added.body.client_secret as string };
    // a machine client: no redirect URIs, the client credentials grant only
    expect((await admin('/settings/set', { for_client_id: other.id, key: 'grant_types', value: 'client_credentials' })).body.stat).toBe('ok');
    const otherConfig = await oidc.discovery(new URL(served.base), other.id, other.secret, undefined, { execute: [oidc.allowInsecureRequests] });
    const config = await discovered();
    const token = await oidc.clientCredentialsGrant(config);
    expect(await oidc.tokenIntrospection(otherConfig, token.access_token)).toEqual({ active: false });
    expect((await oidc.tokenIntrospection(config, token.access_token)).active).toBe(true);
  });
});

describe('the ID token and alg none', () => {
  it('aud is the client, azp (if any) the client, iat now, exp an hour later; signed by a published key', async () => {
    const a = await account();
    const config = await discovered();
    const { back, verifier, state, nonce } = await authorize(config, a.email);
    const tokens = await oidc.authorizationCodeGrant(config, back, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce });
    const [header, claims] = jwtParts(tokens.id_token!);
    expect(claims.aud).toBe(login.client_id);
    if (claims.azp !== undefined) expect(claims.azp).toBe(login.client_id);
    const now = Math.floor(Date.now() / 1000);
    expect(Math.abs((claims.iat as number) - now)).toBeLessThanOrEqual(5);
    expect((claims.exp as number) - (claims.iat as number)).toBe(3600);
    expect(['ES256', 'RS256']).toContain(header.alg);
    const jwks = (await request(served.t.app).get('/oidc/jwks')).body as { keys: { kid: string }[] };
    expect(jwks.keys.map((k) => k.kid)).toContain(header.kid);
  });

  it('alg none is accepted nowhere: not offered, not a client setting, not in a request object, an ID token hint or a client assertion', async () => {
    const meta = (await request(served.t.app).get('/.well-known/openid-configuration')).body as Record<string, unknown>;
    for (const [key, value] of Object.entries(meta)) if (key.endsWith('_alg_values_supported')) expect(value).not.toContain('none');
    expect((await admin('/settings/set', { for_client_id: login.client_id, key: 'id_token_signed_response_alg', value: 'none' })).body).toMatchObject({ stat: 'error' });
    const unsigned = (payload: Record<string, unknown>) =>
      `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}.`;
    const now = Math.floor(Date.now() / 1000);
    // a request object: no code comes of it
    const requested = new URL(`${served.base}/oidc/auth`);
    requested.search = new URLSearchParams({
      client_id: login.client_id, response_type: 'code', scope: 'openid', redirect_uri: APP,
      request: unsigned({ client_id: login.client_id, redirect_uri: APP, response_type: 'code', scope: 'openid', iss: login.client_id, aud: served.base }),
    }).toString();
    const answer = await fetch(requested, { redirect: 'manual' });
    const location = answer.headers.get('location');
    if (location) expect(new URL(location).searchParams.get('error')).toEqual(expect.any(String));
    else expect(answer.status).toBe(400);
    if (location) expect(new URL(location).searchParams.get('code')).toBeNull();
    // an ID token hint at logout
    const hint = unsigned({ iss: served.base, aud: login.client_id, sub: 'someone', iat: now, exp: now + 600 });
    const ended = await fetch(`${served.base}/oidc/session/end?id_token_hint=${hint}`, { redirect: 'manual' });
    expect(ended.status).toBe(400);
    // a client assertion
    const asserted = await request(served.t.app).post('/oidc/token').type('form').send({
      grant_type: 'client_credentials', client_id: login.client_id,
      client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
      client_assertion: unsigned({ iss: login.client_id, sub: login.client_id, aud: `${served.base}/oidc/token`, jti: 'none-1', exp: now + 60 }),
    });
    expect(asserted.status).toBe(401);
    expect(asserted.body.error).toBe('invalid_client');
  });
});

describe('logout and keys', () => {
  it('RP-initiated logout: confirmed in the browser, back at the app with its state; the browser is signed out of the application', async () => {
    const a = await account();
    expect((await admin('/settings/set', { for_client_id: login.client_id, key: 'post_logout_redirect_uris', value: 'https://app.example.com/signed-out' })).body.stat).toBe('ok');
    clock.advance(5_100);
    const config = await discovered();
    const first = await authorize(config, a.email);
    const tokens = await oidc.authorizationCodeGrant(config, first.back, { pkceCodeVerifier: first.verifier, expectedState: first.state, expectedNonce: first.nonce });
    const stopAt = (next: URL) => next.origin !== served.base;
    const end = oidc.buildEndSessionUrl(config, { id_token_hint: tokens.id_token!, post_logout_redirect_uri: 'https://app.example.com/signed-out', state: 'bye' });
    const confirm = await first.browser.go(end.toString(), { stopAt });
    // the provider asks the person (a link alone must not sign anyone out)
    expect(confirm.status).toBe(200);
    expect(confirm.body).toContain('Do you want to sign out of');
    const form = firstForm(confirm.body, confirm.url);
    expect(form.fields.xsrf).toEqual(expect.any(String));
    const left = await first.browser.go(form.action, { method: 'POST', form: { ...form.fields, logout: 'yes' }, stopAt });
    const back = new URL(left.url);
    expect(`${back.origin}${back.pathname}`).toBe('https://app.example.com/signed-out');
    expect(back.searchParams.get('state')).toBe('bye');
    // no silent sign-in in that browser any more, and the account page asks for a sign-in
    expect((await authorize(config, a.email, { prompt: 'none', scope: 'openid' }, first.browser)).back.searchParams.get('error')).toBe('login_required');
    const page = await first.browser.go(`${served.base}/account?client_id=${login.client_id}`, { stopAt });
    expect(new URL(page.url).pathname).toBe('/signin');
    // a post_logout_redirect_uri off the client's list: not redirected to
    const evil = oidc.buildEndSessionUrl(config, { id_token_hint: tokens.id_token!, post_logout_redirect_uri: 'https://evil.example/out' });
    const refused = await fetch(evil, { redirect: 'manual' });
    expect(refused.status).toBe(400);
    expect(refused.headers.get('location')).toBeNull();
  });

  it('a key rotation while tokens are live: old ID tokens still verify with the published keys, old tokens still work, new ones are signed with the next key', async () => {
    const a = await account();
    const config = await discovered();
    const first = await authorize(config, a.email);
    const tokens = await oidc.authorizationCodeGrant(config, first.back, { pkceCodeVerifier: first.verifier, expectedState: first.state, expectedNonce: first.nonce });
    const [oldHeader] = jwtParts(tokens.id_token!);
    const published = ((await request(served.t.app).get('/oidc/jwks')).body as { keys: { kid: string }[] }).keys.map((k) => k.kid);
    const app = (await served.t.runtime.db.applications.findByName('local'))!;
    const rotated = await rotateSigningKeys(served.t.runtime.services, {
      applicationId: app.id, applicationName: 'local', acting: { actor: { kind: 'operator', name: 'test' }, origin: {} }, force: true,
    });
    clock.advance(5_100);
    const jwks = ((await request(served.t.app).get('/oidc/jwks')).body as { keys: (JsonWebKey & { kid: string })[] }).keys;
    // the old ID token's key is still published, and its signature checks out with it
    const oldKey = jwks.find((k) => k.kid === oldHeader.kid)!;
    expect(oldKey).toBeDefined();
    const [h, p, s] = tokens.id_token!.split('.');
    const pub = createPublicKey({ key: oldKey, format: 'jwk' });
    const data = Buffer.from(`${h}.${p}`);
    const signature = Buffer.from(s, 'base64url');
    expect(oldHeader.alg === 'RS256' ? verifySignature('sha256', data, pub, signature) : verifySignature('sha256', data, { key: pub, dsaEncoding: 'ieee-p1363' }, signature)).toBe(true);
    // the tokens of before go on working
    expect((await oidc.fetchUserInfo(config, tokens.access_token, a.uuid)).sub).toBe(a.uuid);
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    const [newHeader] = jwtParts(refreshed.id_token!);
    // signed with a key that was published before it signed, and is current now
    expect(newHeader.kid).not.toBe(oldHeader.kid);
    expect(published).toContain(newHeader.kid);
    expect(rotated.current.map((k) => k.kid)).toContain(newHeader.kid);
  });
});

describe('a stronger sign-in on request (acr_values)', () => {
  it('two factors asked of a session of a password: prompt=none cannot, a sign-in with the authenticator can; the ID token says acr and amr', async () => {
    const a = await account();
    const config = await discovered();
    const first = await authorize(config, a.email);
    expect(first.back.searchParams.get('code')).toBeTruthy();
    const secret = await withAuthenticator(a.email);
    const meta = config.serverMetadata();
    expect(meta.acr_values_supported).toEqual(expect.arrayContaining([ACR_MULTI_FACTOR, ACR_PHISHING_RESISTANT]));
    const silent = await authorize(config, a.email, { prompt: 'none', acr_values: ACR_MULTI_FACTOR }, first.browser);
    expect(silent.back.searchParams.get('error')).toBe('login_required');
    const stepped = await authorize(config, a.email, { acr_values: ACR_MULTI_FACTOR }, first.browser, secret);
    expect(stepped.asked).toBe(true);
    const tokens = await oidc.authorizationCodeGrant(config, stepped.back, { pkceCodeVerifier: stepped.verifier, expectedState: stepped.state, expectedNonce: stepped.nonce });
    expect(tokens.claims()).toMatchObject({ acr: ACR_MULTI_FACTOR, amr: expect.arrayContaining(['pwd', 'otp']) });
    // the session meets it now: not asked again
    const again = await authorize(config, a.email, { acr_values: ACR_MULTI_FACTOR }, first.browser);
    expect(again.asked).toBe(false);
    expect(again.back.searchParams.get('code')).toBeTruthy();
  });

  it('acr_values is a wish: an account that cannot give two factors signs in with what it has, and the ID token claims no acr it did not meet', async () => {
    const a = await account();
    const config = await discovered();
    const signIn = await authorize(config, a.email, { acr_values: `${ACR_PHISHING_RESISTANT} ${ACR_MULTI_FACTOR}` });
    expect(signIn.asked).toBe(true);
    expect(signIn.back.searchParams.get('error')).toBeNull();
    const tokens = await oidc.authorizationCodeGrant(config, signIn.back, { pkceCodeVerifier: signIn.verifier, expectedState: signIn.state, expectedNonce: signIn.nonce });
    expect(tokens.claims()).toMatchObject({ sub: a.uuid, amr: ['pwd'] });
    expect(tokens.claims()!.acr).toBeUndefined();
    // the session stands for the next request that wishes for more: the account has nothing more to give, so it is not asked again
    const again = await authorize(config, a.email, { acr_values: ACR_MULTI_FACTOR }, signIn.browser);
    expect(again.asked).toBe(false);
    expect(again.back.searchParams.get('code')).toBeTruthy();
  });

  it('an essential acr (the claims parameter) that the account cannot give: back at the app with unmet_authentication_requirements, and no code', async () => {
    const a = await account();
    const config = await discovered();
    const claims = JSON.stringify({ id_token: { acr: { essential: true, values: [ACR_PHISHING_RESISTANT, ACR_MULTI_FACTOR] } } });
    const { back } = await authorize(config, a.email, { claims });
    expect(back.searchParams.get('error')).toBe('unmet_authentication_requirements');
    expect(back.searchParams.get('error_description')).toMatch(/authenticator app or a passkey/);
    expect(back.searchParams.get('code')).toBeNull();
    // the claims parameter releases nothing a scope of the client's would not
    const wider = await authorize(config, a.email, { scope: 'openid', claims: JSON.stringify({ userinfo: { 'https://x.example/secret': null } }) });
    expect(wider.back.searchParams.get('error')).toBe('invalid_request');
  });
});

describe('private_key_jwt: a client that proves itself with its own key', () => {
  it('its public key set as a setting (never a private part); an assertion works once: of 20 racing copies, one', async () => {
    const added = await admin('/clients/add', { description: 'a backend with a key', features: '["login_client"]' });
    const id = added.body.client_id as string;
    const pair = await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify']);
    // its public part, as a JWK set carries it (no key_ops of WebCrypto's)
    const { d, key_ops: _ops, ext: _ext, ...publicJwk } = await webcrypto.subtle.exportKey('jwk', pair.privateKey);
    expect(d).toBeTruthy();
    const refused = await admin('/settings/set', { for_client_id: id, key: 'jwks', value: JSON.stringify({ keys: [{ ...publicJwk, d }] }) });
    expect(refused.body).toMatchObject({ stat: 'error', error_description: expect.stringMatching(/private part/) });
    for (const [key, value] of [['jwks', JSON.stringify({ keys: [publicJwk] })], ['token_endpoint_auth_method', 'private_key_jwt'], ['grant_types', 'client_credentials']]) {
      expect((await admin('/settings/set', { for_client_id: id, key, value })).body.stat).toBe('ok');
    }
    clock.advance(5_100);
    // openid-client signs the assertion with the private key
    const config = await oidc.discovery(new URL(served.base), id, undefined, oidc.PrivateKeyJwt(pair.privateKey), { execute: [oidc.allowInsecureRequests] });
    const token = await oidc.clientCredentialsGrant(config);
    expect((await oidc.tokenIntrospection(config, token.access_token)).active).toBe(true);
    // an assertion caught on its way, sent again 20 times at once
    let body = '';
    const catching = await oidc.discovery(new URL(served.base), id, undefined, oidc.PrivateKeyJwt(pair.privateKey), { execute: [oidc.allowInsecureRequests] });
    catching[oidc.customFetch] = async (_url, options) => {
      body = String(options.body);
      return new Response(JSON.stringify({ error: 'invalid_client' }), { status: 401, headers: { 'content-type': 'application/json' } });
    };
    await expect(oidc.clientCredentialsGrant(catching)).rejects.toBeDefined();
    expect(body).toContain('client_assertion=');
    const replays = await Promise.all(Array.from({ length: 20 }, () => request(served.t.app).post('/oidc/token').type('form').send(body)));
    expect(replays.filter((r) => r.status === 200)).toHaveLength(1);
    for (const r of replays.filter((x) => x.status !== 200)) expect(r.body.error).toBe('invalid_client');
    // the secret no longer authenticates it
    const bySecret = await request(served.t.app).post('/oidc/token').auth(id, added.body.client_secret as string).type('form').send({ grant_type: 'client_credentials' });
    expect(bySecret.body.error).toBe('invalid_client');
  });
});

describe('isolation and pods', () => {
  it('another application is another provider: its issuer, its keys; its tokens are refused by this one', async () => {
    const conf = await createApp(served.t.runtime, 'conf');
    const confBase = served.base.replace('//localhost', '//conf.localhost');
    const confOwner = basic(conf.clients.owner.client_id, conf.clients.owner.client_secret);
    const confAdmin = (path: string, body: Record<string, string>) =>
      request(served.t.app).post(path).set('Host', new URL(confBase).host).set('Authorization', confOwner).type('form').send(body);
    expect((await confAdmin('/settings/set_default', { key: 'openid_provider', value: 'on' })).body.stat).toBe('ok');
    expect((await confAdmin('/settings/set', { for_client_id: conf.clients.login.client_id, key: 'redirect_uris', value: APP })).body.stat).toBe('ok');
    clock.advance(5_100);
    const confConfig = await oidc.discovery(new URL(confBase), conf.clients.login.client_id, conf.clients.login.client_secret, undefined, { execute: [oidc.allowInsecureRequests] });
    expect(confConfig.serverMetadata().issuer).toBe(confBase);
    const confCreated = await confAdmin('/entity.create', { type_name: 'user', attributes: JSON.stringify({ email: 'conf@example.com', password: PASSWORD }) });
    expect(confCreated.body.stat).toBe('ok');
    const signIn = await authorize(confConfig, 'conf@example.com');
    const tokens = await oidc.authorizationCodeGrant(confConfig, signIn.back, { pkceCodeVerifier: signIn.verifier, expectedState: signIn.state, expectedNonce: signIn.nonce });
    expect(tokens.claims()).toMatchObject({ iss: confBase, aud: conf.clients.login.client_id });
    const confKids = ((await fetch(`${confBase}/oidc/jwks`).then((r) => r.json())) as { keys: { kid: string }[] }).keys.map((k) => k.kid);
    const localKids = ((await request(served.t.app).get('/oidc/jwks')).body as { keys: { kid: string }[] }).keys.map((k) => k.kid);
    expect(confKids.filter((k) => localKids.includes(k))).toEqual([]);

    // at the first application: its access token is nobody's, its refresh token nothing, its client unknown, its ID token no hint
    const config = await discovered();
    expect(await oidc.tokenIntrospection(config, tokens.access_token)).toEqual({ active: false });
    await expect(oidc.fetchUserInfo(config, tokens.access_token, oidc.skipSubjectCheck)).rejects.toBeDefined();
    await expect(oidc.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    const stranger = await oidc.discovery(new URL(served.base), conf.clients.login.client_id, conf.clients.login.client_secret, undefined, { execute: [oidc.allowInsecureRequests] });
    await expect(oidc.refreshTokenGrant(stranger, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_client' });
    const hinted = await fetch(`${served.base}/oidc/session/end?id_token_hint=${tokens.id_token!}`, { redirect: 'manual' });
    expect(hinted.status).toBe(400);
    // and at its own, they work
    expect((await oidc.fetchUserInfo(confConfig, tokens.access_token, tokens.claims()!.sub)).email).toBe('conf@example.com');
  });

  it('20 parallel redemptions of one code across two pods: one success, the rest invalid_grant', async () => {
    const second = createRuntime(served.t.backend.config, createLogger('silent'));
    const podB = buildApp({ services: second.services, defaultApp: 'local' });
    try {
      const a = await account();
      const config = await discovered();
      const race = await authorize(config, a.email);
      const form = { grant_type: 'authorization_code', code: race.back.searchParams.get('code')!, redirect_uri: APP, code_verifier: race.verifier };
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) =>
        request(i % 2 ? podB : served.t.app).post('/oidc/token').auth(login.client_id, login.client_secret).type('form').send(form)));
      expect(answers.filter((r) => r.status === 200)).toHaveLength(1);
      for (const lost of answers.filter((r) => r.status !== 200)) expect(lost.body).toMatchObject({ error: 'invalid_grant' });
      // the winner's tokens ended with the grant: a code used twice is a code stolen
      const won = answers.find((r) => r.status === 200)!;
      expect(await oidc.tokenIntrospection(config, won.body.access_token as string)).toEqual({ active: false });
    } finally {
      await second.close();
    }
  });
});

describe('a disabled account', () => {
  it('its OpenID tokens stop working: introspection says inactive, userinfo and refresh refuse', async () => {
    const a = await account();
    const config = await discovered();
    const { back, verifier, state, nonce } = await authorize(config, a.email);
    const tokens = await oidc.authorizationCodeGrant(config, back, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce });
    expect((await oidc.tokenIntrospection(config, tokens.refresh_token!)).active).toBe(true);
    const record = await admin('/entity', { type_name: 'user', uuid: a.uuid });
    const { services } = served.t.runtime;
    const app = (await served.t.runtime.db.applications.findByName('local'))!;
    // as users:disable does
    await disableUser(services, { app, entityId: record.body.result.id as number, acting: operatorActing('test') });
    expect(await oidc.tokenIntrospection(config, tokens.access_token)).toEqual({ active: false });
    expect(await oidc.tokenIntrospection(config, tokens.refresh_token!)).toEqual({ active: false });
    await expect(oidc.fetchUserInfo(config, tokens.access_token, a.uuid)).rejects.toBeDefined();
    await expect(oidc.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
  });
});

describe('claims and scopes', () => {
  it('the application maps claims to attributes: a profile claim\'s source, a claim of its own; what comes from the account itself cannot be mapped', async () => {
    for (const [value, problem] of [['{"email":"workEmail"}', /cannot be mapped/], ['not json', /JSON object/], ['{"x":"a b"}', /must name an attribute/]] as const) {
      expect((await admin('/settings/set_default', { key: 'openid_claims', value })).body).toMatchObject({ stat: 'error', error_description: expect.stringMatching(problem) });
    }
    const mapping = { name: 'displayName', 'https://gatehouse.example/country': 'primaryAddress.country', nickname: 'nothingHere' };
    expect((await admin('/settings/set_default', { key: 'openid_claims', value: JSON.stringify(mapping) })).body.stat).toBe('ok');
    clock.advance(5_100);
    try {
      const email = `claims-${Date.now()}@example.com`;
      const created = await admin('/entity.create', { type_name: 'user', attributes: JSON.stringify({
        email, password: PASSWORD, givenName: 'Ada', familyName: 'Lovelace', displayName: 'The Countess', primaryAddress: { country: 'GB', city: 'London' },
      }) });
      expect(created.body.stat).toBe('ok');
      const config = await discovered();
      expect(config.serverMetadata().claims_supported).toContain('https://gatehouse.example/country');
      const { back, verifier, state, nonce } = await authorize(config, email);
      const tokens = await oidc.authorizationCodeGrant(config, back, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce });
      const info = await oidc.fetchUserInfo(config, tokens.access_token, tokens.claims()!.sub);
      expect(info).toMatchObject({ name: 'The Countess', given_name: 'Ada', 'https://gatehouse.example/country': 'GB', email });
      // mapped to an attribute the record lacks: no claim, not the standard one
      expect(info.nickname).toBeUndefined();
    } finally {
      await admin('/settings/set_default', { key: 'openid_claims', value: '' });
      clock.advance(5_100);
    }
  });

  it('a client limited to some scopes (setting scope) is refused the others', async () => {
    expect((await admin('/settings/set', { for_client_id: login.client_id, key: 'scope', value: 'email profile' })).body).toMatchObject({ stat: 'error', error_description: expect.stringMatching(/must include openid/) });
    expect((await admin('/settings/set', { for_client_id: login.client_id, key: 'scope', value: 'openid email offline_access' })).body.stat).toBe('ok');
    clock.advance(5_100);
    try {
      const a = await account();
      const config = await discovered();
      const refused = await authorize(config, a.email, { scope: 'openid profile' });
      expect(refused.back.searchParams.get('error')).toBe('invalid_scope');
      expect(refused.back.searchParams.get('code')).toBeNull();
      const allowed = await authorize(config, a.email, { scope: 'openid email' });
      expect(allowed.back.searchParams.get('code')).toBeTruthy();
    } finally {
      await admin('/settings/set', { for_client_id: login.client_id, key: 'scope', value: '' });
      clock.advance(5_100);
    }
  });
});
