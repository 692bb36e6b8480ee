import request from 'supertest';
import { manualClock } from '../helpers/backend';
import { servedTestApp } from '../helpers/browser';
import { firstForm } from '../helpers/social';
import { stored } from '../helpers/stored';
import { APP, oidcSignIn } from '../helpers/oidc-sign-in';

// The OpenID provider goes through the use cases (docs/openid-connect.md#events): each of its
// writes records its event in the write's transaction — the grant given, a code redeemed, a token
// refreshed, a reused refresh token's grant ended, a token revoked by its app, a sign-out, a
// client's own token — and the person's appear in their activity. openid-client 6 is the app.

const clock = manualClock();
let served: Awaited<ReturnType<typeof servedTestApp>>;
let s: ReturnType<typeof oidcSignIn>;

beforeAll(async () => {
  served = await servedTestApp({ clock, env: { LOGIN_LIMIT_ADDRESS: '10000/900' } });
  s = oidcSignIn(served, clock);
  for (const [key, value] of [['grant_types', 'authorization_code refresh_token client_credentials'], ['redirect_uris', APP],
    ['post_logout_redirect_uris', 'https://app.example.com/signed-out']]) {
    expect((await s.admin('/settings/set', { for_client_id: s.login.client_id, key, value })).body.stat).toBe('ok');
  }
  clock.advance(5_100);
});
afterAll(() => served?.close());

/** A second login client of the application, showing the login client's flow, with `settings`. */
async function loginClient(description: string, settings: Record<string, string>) {
  const added = await s.admin('/clients/add', { description, features: '["login_client"]' });
  const flow = await s.admin('/settings/get', { for_client_id: s.login.client_id, key: 'default_flow_version' });
  for (const [key, value] of Object.entries({ default_flow_name: 'standard', default_flow_version: String(flow.body.result), redirect_uris: APP, ...settings })) {
    expect((await s.admin('/settings/set', { for_client_id: added.body.client_id, key, value })).body.stat).toBe('ok');
  }
  clock.advance(5_100);
  return added.body as { client_id: string; client_secret: string };
}

/** The events of an account, oldest first: their types and data. */
const eventsOf = async (uuid: string) => {
  const id = (await served.t.runtime.db.records.find((await served.t.runtime.db.applications.findByName('local'))!.id, { uuid }))!.id;
  return (await served.t.runtime.db.events.latest((await served.t.runtime.db.applications.findByName('local'))!.id, 100, id)).reverse();
};

it('a sign-in through the provider: the grant given (implied for a login client) with offline_access and no prompt at all, the code redeemed, each refresh, a reuse that ends the grant', async () => {
  const a = await s.account();
  const config = await s.discovered();
  // offline_access with no prompt: a login client's consent is implied, and the app gets its refresh token
  const got = await s.authorize(config, a.email, { scope: 'openid email offline_access', prompt: '' });
  const tokens = await s.oidc.authorizationCodeGrant(config, got.back, { pkceCodeVerifier: got.verifier, expectedState: got.state, expectedNonce: got.nonce });
  expect(tokens.refresh_token).toEqual(expect.any(String));
  expect(tokens.scope?.split(' ')).toEqual(expect.arrayContaining(['openid', 'email', 'offline_access']));
  const refreshed = await s.oidc.refreshTokenGrant(config, tokens.refresh_token!);
  // the first refresh token again: it leaked, and its grant ends (the second refresh token no longer works)
  await expect(s.oidc.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
  await expect(s.oidc.refreshTokenGrant(config, refreshed.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });

  const events = await eventsOf(a.uuid);
  const types = events.map((e) => e.type);
  expect(types.filter((t) => t !== 'record.updated' && t !== 'record.created' && t !== 'account.registered')).toEqual([
    'account.signed_in', 'oidc.grant_given', 'oidc.code_redeemed', 'oidc.token_refreshed', 'token.reuse_detected',
  ]);
  const byType = Object.fromEntries(events.map((e) => [e.type, e]));
  expect(byType['oidc.grant_given']).toMatchObject({
    actor: { kind: 'account', clientId: s.login.client_id }, data: { consent: 'implied', scopes: expect.arrayContaining(['openid', 'email', 'offline_access']) },
  });
  expect(byType['oidc.code_redeemed']).toMatchObject({ actor: { kind: 'account', clientId: s.login.client_id }, origin: { address: '127.0.0.1' } });
  expect(byType['oidc.token_refreshed'].origin.userAgent).toEqual(expect.any(String));
  expect(byType['token.reuse_detected']).toMatchObject({ actor: { kind: 'system' }, data: { revoked: expect.any(Number) } });
  // the sign-in through the app is shown with the app's login client, as its activity says
  const activity = await request(served.t.app).post('/entity.activity').set('Authorization', s.owner).type('form').send({ type_name: 'user', uuid: a.uuid });
  expect(activity.body.results.map((e: { type: string }) => e.type)).toEqual(['token.reuse_detected', 'oidc.grant_given', 'account.signed_in', 'account.registered']);
  expect(activity.body.results[2]).toMatchObject({ client_id: s.login.client_id, method: 'password' });
});

it('an app that revokes its refresh token ends the grant (oidc.grant_revoked); a client\'s own token is oidc.client_credentials_issued', async () => {
  const a = await s.account();
  const config = await s.discovered();
  const got = await s.authorize(config, a.email);
  const tokens = await s.oidc.authorizationCodeGrant(config, got.back, { pkceCodeVerifier: got.verifier, expectedState: got.state, expectedNonce: got.nonce });
  await s.oidc.tokenRevocation(config, tokens.refresh_token!);
  expect((await eventsOf(a.uuid)).map((e) => e.type)).toContain('oidc.grant_revoked');
  const revoked = (await eventsOf(a.uuid)).find((e) => e.type === 'oidc.grant_revoked')!;
  expect(revoked).toMatchObject({ actor: { kind: 'client', clientId: s.login.client_id }, data: { revoked: expect.any(Number) } });

  const own = await s.oidc.clientCredentialsGrant(config, { scope: 'openid' });
  expect(own.access_token).toEqual(expect.any(String));
  const rows = await stored(served.t.runtime.db).rows<{ type: string; actor_kind: string; subject_kind: string; data: string }>(
    "SELECT type, actor_kind, subject_kind, data FROM events WHERE type = 'oidc.client_credentials_issued'", [],
  );
  expect(rows).toEqual([expect.objectContaining({ actor_kind: 'client', subject_kind: 'client' })]);
});

it('a sign-out from the app (RP-initiated logout) is oidc.logout, and the account page\'s session ends (account.signed_out)', async () => {
  const a = await s.account();
  const config = await s.discovered();
  const first = await s.authorize(config, a.email);
  const tokens = await s.oidc.authorizationCodeGrant(config, first.back, { pkceCodeVerifier: first.verifier, expectedState: first.state, expectedNonce: first.nonce });
  const stopAt = (next: URL) => next.origin !== served.base;
  const end = s.oidc.buildEndSessionUrl(config, { id_token_hint: tokens.id_token!, post_logout_redirect_uri: 'https://app.example.com/signed-out' });
  const confirm = await first.browser.go(end.toString(), { stopAt });
  const form = firstForm(confirm.body, confirm.url);
  await first.browser.go(form.action, { method: 'POST', form: { ...form.fields, logout: 'yes' }, stopAt });
  const types = (await eventsOf(a.uuid)).map((e) => e.type);
  expect(types).toEqual(expect.arrayContaining(['oidc.logout', 'account.signed_out']));
  expect(types.filter((t) => t === 'oidc.logout')).toHaveLength(1);
  // the address the session ended from is the browser's, as for every other event
  const signedOut = (await eventsOf(a.uuid)).find((e) => e.type === 'account.signed_out')!;
  expect(signedOut.origin?.address).toMatch(/^(127\.0\.0\.1|::1|::ffff:127\.0\.0\.1)/);
});

it('no event of the provider holds a code, a token, a secret or a cookie', async () => {
  const rows = await stored(served.t.runtime.db).rows<Record<string, unknown>>("SELECT * FROM events WHERE type LIKE 'oidc.%' OR type LIKE 'token.%'", []);
  expect(rows.length).toBeGreaterThan(5);
  const text = JSON.stringify(rows);
  expect(text).not.toContain(s.login.client_secret);
  // no value shaped like a provider's opaque token or code (43 base64url characters) in what an event keeps
  for (const row of rows) expect(String(row.data)).not.toMatch(/[A-Za-z0-9_-]{40,}/);
});

it('offline_access with prompt=login still gets a refresh token (consent implied); a client without the refresh_token grant is told invalid_scope, not given less unsaid', async () => {
  const a = await s.account();
  const config = await s.discovered();
  const got = await s.authorize(config, a.email, { scope: 'openid offline_access', prompt: 'login' });
  const tokens = await s.oidc.authorizationCodeGrant(config, got.back, { pkceCodeVerifier: got.verifier, expectedState: got.state, expectedNonce: got.nonce });
  expect(tokens.refresh_token).toEqual(expect.any(String));
  // a second login client without the refresh_token grant
  const added = await loginClient('no refresh', { grant_types: 'authorization_code' });
  const other = await s.oidc.discovery(new URL(served.base), added.client_id, added.client_secret, undefined, { execute: [s.oidc.allowInsecureRequests] });
  const verifier = s.oidc.randomPKCECodeVerifier();
  const url = s.oidc.buildAuthorizationUrl(other, { redirect_uri: APP, scope: 'openid offline_access', state: 'st', code_challenge: await s.oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' });
  const page = await fetch(url, { redirect: 'manual' });
  if (page.status !== 303 && page.status !== 302) throw new Error(await page.text());
  const back = new URL(page.headers.get('location')!);
  expect(`${back.origin}${back.pathname}`).toBe(APP);
  expect(Object.fromEntries(back.searchParams)).toEqual({
    error: 'invalid_scope', error_description: expect.stringContaining('offline_access needs the refresh_token grant'), state: 'st', iss: served.base,
  });
  // openid-client takes it as the provider's answer: the error, from this issuer
  await expect(s.oidc.authorizationCodeGrant(other, back, { pkceCodeVerifier: verifier, expectedState: 'st' })).rejects.toMatchObject({ error: 'invalid_scope' });
});

describe('a login client with its consent page on (consent_page=on)', () => {
  let asked: { client_id: string; client_secret: string };
  beforeAll(async () => {
    asked = await loginClient('Partner app', { consent_page: 'on' });
    expect((await s.admin('/settings/set', { for_client_id: asked.client_id, key: 'consent_page', value: 'maybe' })).body)
      .toMatchObject({ code: 200, error_description: expect.stringContaining('must be on') });
    clock.advance(5_100);
  });
  const config = () => s.oidc.discovery(new URL(served.base), asked.client_id, asked.client_secret, undefined, { execute: [s.oidc.allowInsecureRequests] });

  it('asks the person, naming the app and what it asks for; allowed, the app gets its tokens and the grant says consent given', async () => {
    const a = await s.account();
    const c = await config();
    const got = await s.authorize(c, a.email, { scope: 'openid email offline_access', prompt: '' });
    expect(got.page.status).toBe(200);
    expect(got.page.body).toContain('Allow Partner app to use your account?');
    expect(got.page.body).toContain('Your email address');
    expect(got.page.body).toContain('Staying signed in when you are not using it');
    const form = firstForm(got.page.body, got.page.url);
    // a form without its token does nothing
    const forged = await got.browser.go(form.action, { method: 'POST', form: { choice: 'allow' }, stopAt: (n) => n.origin !== served.base });
    expect(forged.status).toBe(400);
    const back = await got.browser.go(form.action, { method: 'POST', form: { ...form.fields, choice: 'allow' }, stopAt: (n) => n.origin !== served.base });
    const tokens = await s.oidc.authorizationCodeGrant(c, new URL(back.url), { pkceCodeVerifier: got.verifier, expectedState: got.state, expectedNonce: got.nonce });
    expect(tokens.refresh_token).toEqual(expect.any(String));
    const grant = (await eventsOf(a.uuid)).find((e) => e.type === 'oidc.grant_given')!;
    expect(grant).toMatchObject({ data: { consent: 'given', scopes: expect.arrayContaining(['email', 'offline_access']) }, actor: { clientId: asked.client_id } });
    // granted: the next sign-in in that browser is not asked again
    const again = await s.authorize(c, a.email, { scope: 'openid email', prompt: '' }, got.browser);
    expect(again.back.searchParams.get('code')).toEqual(expect.any(String));
  });

  it('refused: the app is told access_denied, and the account\'s activity says what was refused', async () => {
    const a = await s.account();
    const c = await config();
    const got = await s.authorize(c, a.email, { scope: 'openid phone' });
    const form = firstForm(got.page.body, got.page.url);
    const back = new URL((await got.browser.go(form.action, { method: 'POST', form: { ...form.fields, choice: 'deny' }, stopAt: (n) => n.origin !== served.base })).url);
    expect(back.searchParams.get('error')).toBe('access_denied');
    const activity = await request(served.t.app).post('/entity.activity').set('Authorization', s.owner).type('form').send({ type_name: 'user', uuid: a.uuid, types: 'oidc.consent_refused' });
    expect(activity.body.results).toEqual([expect.objectContaining({ type: 'oidc.consent_refused', scopes: expect.arrayContaining(['phone']), client_id: asked.client_id })]);
  });
});
