import request from 'supertest';
import { basic, manualClock } from '../helpers/backend';
import { servedTestApp } from '../helpers/browser';
import { openidClient } from '../helpers/openid-client';
import { rotateSigningKeys } from '../../src/usecases/keys/signing-keys';
import { stored } from '../helpers/stored';
import { cookieBrowser, firstForm } from '../helpers/social';

// Gatehouse as an OpenID provider (docs/openid-connect.md), checked by a relying party nobody here
// wrote: openid-client 6 discovers it, authenticates with the login client's secret, and uses the
// client credentials grant, introspection (RFC 7662) and revocation (RFC 7009). The keys: ES256 and
// RS256, the next ones published before they sign, never a private part.

const clock = manualClock();
let served: Awaited<ReturnType<typeof servedTestApp>>;
let owner: string;
let login: { client_id: string; client_secret: string };
const oidc = openidClient();

const admin = (path: string, body: Record<string, string>) => request(served.t.app).post(path).set('Authorization', owner).type('form').send(body);

beforeAll(async () => {
  served = await servedTestApp({ host: '127.0.0.1', clock, env: { LOGIN_LIMIT_ADDRESS: '10000/900' } });
  owner = basic(served.t.local.clients.owner.client_id, served.t.local.clients.owner.client_secret);
  login = served.t.local.clients.login;
  expect((await admin('/settings/set_default', { key: 'openid_provider', value: 'on' })).body.stat).toBe('ok');
  expect((await admin('/settings/set', { for_client_id: login.client_id, key: 'grant_types', value: 'authorization_code refresh_token client_credentials' })).body.stat).toBe('ok');
  expect((await admin('/settings/set', { for_client_id: login.client_id, key: 'redirect_uris', value: APP })).body.stat).toBe('ok');
  // the application's settings are cached for a few seconds per process
  clock.advance(5_100);
});

const APP = 'https://app.example.com/cb';
const PASSWORD = 'correct horse battery';

async function account() {
  const email = `oidc-${Math.random().toString(36).slice(2)}@example.com`;
  const created = await admin('/entity.create', { type_name: 'user', attributes: JSON.stringify({ email, password: PASSWORD, givenName: 'Ada', familyName: 'Lovelace' }) });
  expect(created.body.stat).toBe('ok');
  const record = await admin('/entity', { type_name: 'user', id: String(created.body.id) });
  return { email, uuid: record.body.result.uuid as string };
}

/**
 * A browser signing in through the provider: the authorization request, the hosted sign-in with the
 * password, the interactions; answers the redirect to the app (code, state, iss), not followed.
 */
async function authorize(config: Awaited<ReturnType<typeof discovered>>, email: string, extra: Record<string, string> = {}, browser = cookieBrowser()) {
  const verifier = oidc.randomPKCECodeVerifier();
  const state = oidc.randomState();
  const nonce = oidc.randomNonce();
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: APP, scope: 'openid email profile offline_access', prompt: 'consent', state, nonce,
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', ...extra,
  });
  const stopAt = (next: URL) => next.origin !== served.base;
  let page = await browser.go(url.toString(), { stopAt });
  // whether the hosted sign-in asked (else the browser's session answered)
  const asked = new URL(page.url).pathname === '/signin';
  if (asked) {
    const form = firstForm(page.body, page.url);
    page = await browser.go(form.action, { method: 'POST', form: { ...form.fields, signInEmailAddress: email, currentPassword: PASSWORD }, stopAt });
  }
  return { back: new URL(page.url), verifier, state, nonce, browser, asked };
}
afterAll(() => served?.close());

/** openid-client's view of the provider, as the login client (plain http: a local test server). */
const discovered = () => oidc.discovery(new URL(served.base), login.client_id, login.client_secret, undefined, { execute: [oidc.allowInsecureRequests] });

it('is off until the application turns it on', async () => {
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
