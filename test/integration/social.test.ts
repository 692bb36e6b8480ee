import http from 'node:http';
import request from 'supertest';
import { formatTimestamp } from '../../src/domain/timestamps';
import { createHttpServer } from '../../src/http-server';
import { createLogger } from '../../src/logger';
import { newestMail } from '../../src/mail-files';
import { basic, FLOWS, manualClock, startTestApp, type TestApp, createApp } from '../helpers/backend';
import { freePort } from '../helpers/processes';
import { cookieBrowser, firstForm, signInAtProvider, socialToken, startOidcProvider } from '../helpers/social';
import { stored } from '../helpers/stored';

const TOKEN_URL = 'https://app.example.test/social-token';
const REDIRECT = 'https://app.example.test/done';

let t: TestApp;
const clock = manualClock();
let server: http.Server;
let base: string;
let provider: Awaited<ReturnType<typeof startOidcProvider>>;
let owner: string;
let loginId: string;

const post = (path: string, body: Record<string, string>, headers: Record<string, string> = {}) =>
  request(t.app).post(path).type('form').set(headers).send(body);
const shared = (extra: Record<string, string> = {}) => ({ client_id: loginId, locale: 'en-US', ...extra });
const start = (tokenUrl = TOKEN_URL, name = 'testidp') => `${base}/social/${name}/start?${new URLSearchParams({ token_url: tokenUrl })}`;
const tokenFor = async (login: string) => (await socialToken(start(), login)).token;
const authNative = (token: string, extra: Record<string, string> = {}) => post('/oauth/auth_native', shared({ token, redirect_uri: REDIRECT, ...extra }));

beforeAll(async () => {
  t = await startTestApp({ clock, logger: createLogger(process.env.TEST_LOG ?? 'silent') });
  owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
  loginId = t.local.clients.login.client_id;
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  server = createHttpServer(t.app, t.runtime.config.http, createLogger('silent'));
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  provider = await startOidcProvider([`${base}/social/testidp/callback`]);
  const added = await post('/providers/add', {
    name: 'testidp', issuer: provider.issuer, provider_client_id: 'gatehouse', provider_client_secret: 'provider-secret',
  }, { Authorization: owner });
  expect(added.body).toMatchObject({ stat: 'ok', result: { name: 'testidp', kind: 'oidc', scopes: ['openid', 'email', 'profile'] } });
  expect((await post('/settings/set', { for_client_id: loginId, key: 'social_token_urls', value: TOKEN_URL }, { Authorization: owner })).body.stat).toBe('ok');
});
afterAll(async () => {
  await provider?.stop();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await t.close();
});

describe('identity providers (admin API)', () => {
  it('lists providers without their secrets, refuses bad or duplicate ones, removes them', async () => {
    const list = await post('/providers/list', {}, { Authorization: owner });
    expect(list.body.results).toEqual([{ name: 'testidp', kind: 'oidc', issuer: provider.issuer, clientId: 'gatehouse', scopes: ['openid', 'email', 'profile'] }]);
    expect(JSON.stringify(list.body)).not.toContain('provider-secret');
    const add = (extra: Record<string, string>) => post('/providers/add', { name: 'other', issuer: 'https://idp.example.test', provider_client_id: 'x', provider_client_secret: 'y', ...extra }, { Authorization: owner });
    expect((await add({ name: 'testidp' })).body).toMatchObject({ code: 200, argument_name: 'name' });
    expect((await add({ name: 'Bad Name' })).body).toMatchObject({ code: 200, argument_name: 'name' });
    expect((await add({ issuer: 'http://idp.example.test' })).body).toMatchObject({ code: 200, argument_name: 'issuer' });
    expect((await add({ kind: 'saml' })).body).toMatchObject({ code: 200, argument_name: 'kind' });
    // the provider's client id and secret are named as this endpoint names them
    expect((await add({ provider_client_id: 'x'.repeat(256) })).body).toMatchObject({ code: 200, argument_name: 'provider_client_id' });
    expect((await add({ provider_client_secret: 'y'.repeat(513) })).body).toMatchObject({ code: 200, argument_name: 'provider_client_secret' });
    expect((await add({ scopes: 'openid "quoted"' })).body).toMatchObject({ code: 200, argument_name: 'scopes' });
    expect((await add({})).body.stat).toBe('ok');
    expect((await post('/providers/remove', { name: 'other' }, { Authorization: owner })).body.stat).toBe('ok');
    expect((await post('/providers/remove', { name: 'other' }, { Authorization: owner })).body).toMatchObject({ code: 200 });
  });
});

describe('the browser flow', () => {
  it('the picker lists the providers, localized; a token_url off the allow-list is refused with a page saying why', async () => {
    const picker = await request(base).get('/social/signin').query({ token_url: TOKEN_URL, locale: 'fr-FR' });
    expect(picker.status).toBe(200);
    expect(picker.text).toContain('Se connecter avec Testidp'); // the provider's name as people write it
    expect(picker.headers['content-security-policy']).toContain("default-src 'none'");
    const refused = await request(base).get('/social/testidp/start').query({ token_url: 'https://evil.example.test/steal' });
    expect(refused.status).toBe(400);
    expect(refused.headers.location).toBeUndefined();
    expect(refused.text).toContain('not on the allow-list');
    expect((await request(base).get('/social/nosuch/start').query({ token_url: TOKEN_URL })).status).toBe(404);
  });

  it('redirects with PKCE, state and nonce; the callback posts a 40-character token to token_url, once', async () => {
    const browser = cookieBrowser();
    const first = await fetch(start(), { redirect: 'manual' });
    const authorize = new URL(first.headers.get('location')!);
    expect(authorize.origin).toBe(provider.issuer);
    expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorize.searchParams.get('state')).toMatch(/.{16,}/);
    expect(authorize.searchParams.get('nonce')).toMatch(/.{16,}/);

    const { token, page, tokenUrl } = await socialToken(start(), 'alice', browser);
    expect(token).toMatch(/^[0-9a-f]{40}$/);
    expect(tokenUrl).toBe(TOKEN_URL);
    expect(page.body).toContain('document.forms[0].submit()');
    expect(page.body).toContain(`<input type="hidden" name="token" value="${token}">`);
    // the same callback again, even from the same browser: already completed
    const callback = new URL(page.url);
    const replay = await request(base).get(`${callback.pathname}${callback.search}`).set('Cookie', `gatehouse_social=${callback.searchParams.get('state')}`);
    expect(replay.status).toBe(400);
    expect(replay.text).toContain('already completed');
    // and the cookie that bound it to this browser was cleared
    expect((await browser.go(page.url)).body).toContain('started in another browser');
  });

  it('a callback in another browser (no state cookie), or with a forged state, is refused', async () => {
    const first = await fetch(start(), { redirect: 'manual' });
    const state = new URL(first.headers.get('location')!).searchParams.get('state')!;
    const elsewhere = await request(base).get('/social/testidp/callback').query({ state, code: 'x' });
    expect(elsewhere.status).toBe(400);
    expect(elsewhere.text).toContain('started in another browser');
    const forged = await request(base).get('/social/testidp/callback').set('Cookie', 'gatehouse_social=forgedforgedforgedforged').query({ state: 'forgedforgedforgedforged', code: 'x' });
    expect(forged.status).toBe(400);
  });

  it('an ID token that does not answer this sign-in, or a code without its PKCE verifier, is refused with an error page', async () => {
    // the nonce changed between the browser and the provider: the ID token carries the wrong one
    const wrongNonce = await signInAtProvider(start(), 'mallory', cookieBrowser(), (u) => u.searchParams.set('nonce', 'n'.repeat(43)));
    expect(wrongNonce.status).toBe(502);
    // people read what happened; the library's detail (nonce mismatch) stays in the log
    expect(wrongNonce.body).toContain('The sign-in with Testidp could not be completed. Start it again.');
    expect(wrongNonce.body).not.toMatch(/nonce|expected|received/i);
    // the code challenge changed: the code cannot be exchanged with this sign-in's verifier
    const wrongPkce = await signInAtProvider(start(), 'mallory', cookieBrowser(), (u) => u.searchParams.set('code_challenge', 'c'.repeat(43)));
    expect(wrongPkce.status).toBe(502);
    expect(wrongPkce.body).toContain('could not be completed');
    // no token was issued for either
    const tokens = await stored(t.runtime.db).rows<{ extra: string | null }>("SELECT extra FROM credentials WHERE kind = 'social_token'");
    expect(tokens.some((row) => row.extra?.includes('#mallory'))).toBe(false);
  });

  it('sign-ins started from one address are limited (each stores a sign-in in progress)', async () => {
    const limited = await startTestApp({ env: { LOGIN_LIMIT_ADDRESS: '2/600' } });
    try {
      const owner2 = basic(limited.local.clients.owner.client_id, limited.local.clients.owner.client_secret);
      const admin = (p: string, body: Record<string, string>) => request(limited.app).post(p).set('Authorization', owner2).type('form').send(body);
      await admin('/providers/add', { name: 'idp', issuer: `http://127.0.0.1:${await freePort()}`, provider_client_id: 'x', provider_client_secret: 'y' });
      await admin('/settings/set', { for_client_id: limited.local.clients.login.client_id, key: 'social_token_urls', value: TOKEN_URL });
      const startOnce = () => request(limited.app).get('/social/idp/start').query({ token_url: TOKEN_URL });
      const statuses = [(await startOnce()).status, (await startOnce()).status];
      const third = await startOnce();
      expect(statuses).toEqual([502, 502]); // the provider is down, but each start counted
      expect(third.status).toBe(429);
      expect(third.headers['retry-after']).toMatch(/^\d+$/);
      expect(third.text).toContain('Too many sign-ins were started from this address');
    } finally {
      await limited.close();
    }
  });

  it('a provider that cannot be reached gets an error page, not a hang', async () => {
    const closed = await freePort();
    await post('/providers/add', { name: 'down', issuer: `http://127.0.0.1:${closed}`, provider_client_id: 'x', provider_client_secret: 'y' }, { Authorization: owner });
    const res = await request(base).get('/social/down/start').query({ token_url: TOKEN_URL });
    expect(res.status).toBe(502);
    expect(res.text).toContain('Down could not be reached. Try again in a few minutes.');
    expect(res.text).not.toMatch(/127\.0\.0\.1|ECONNREFUSED|connect /);
  });
});

describe('/oauth/auth_native and /oauth/register_native', () => {
  it('unknown identity: 310 with prereg_fields from the profile; register_native creates the record; the next sign-in finds it', async () => {
    const token = await tokenFor('alice');
    const unknown = await authNative(token, { registration_form: 'socialRegistrationForm' });
    expect(unknown.body).toMatchObject({
      stat: 'error', code: 310, error: 'record_not_found',
      prereg_fields: { emailAddress: 'alice@example.test', firstName: 'Alice', lastName: 'Tester', displayName: 'Alice Tester', birthdate: '1815-12-10', mobile: null },
    });
    const bad = await post('/oauth/register_native', shared({ token, emailAddress: 'not an email', firstName: 'Alice', lastName: 'Tester', displayName: 'Alice' }));
    expect(bad.body).toMatchObject({ code: 390 });
    const registered = await post('/oauth/register_native', shared({ token, emailAddress: 'alice@example.test', firstName: 'Alice', lastName: 'Tester', displayName: 'Alice' }));
    expect(registered.body).toMatchObject({ stat: 'ok', is_new: true, access_token: expect.any(String), capture_user: { email: 'alice@example.test', emailVerified: expect.any(String) } });
    expect(registered.body.capture_user.profiles).toEqual([{
      id: expect.any(Number), identifier: `${provider.issuer}#alice`, domain: '127.0.0.1', provider: 'testidp', created: expect.any(String),
      profile: expect.objectContaining({ identifier: `${provider.issuer}#alice`, providerName: 'testidp', verifiedEmail: 'alice@example.test' }),
    }]);
    // the token is spent: a second registration with it is refused
    expect((await post('/oauth/register_native', shared({ token, emailAddress: 'alice2@example.test', firstName: 'A', lastName: 'T', displayName: 'A' }))).body).toMatchObject({ code: 200, argument_name: 'token' });

    const again = await authNative(await tokenFor('alice'));
    expect(again.body).toMatchObject({ stat: 'ok', is_new: false, capture_user: { email: 'alice@example.test', lastLogin: expect.any(String) } });
  });

  it('register_native needs a token that auth_native answered 310 for; unknown tokens are 200', async () => {
    const token = await tokenFor('erin');
    expect((await post('/oauth/register_native', shared({ token, emailAddress: 'erin@example.test', firstName: 'E', lastName: 'T', displayName: 'E' }))).body)
      .toMatchObject({ code: 200, argument_name: 'token' });
    expect((await authNative('f'.repeat(40))).body).toMatchObject({ code: 200, argument_name: 'token' });
    expect((await post('/oauth/auth_native', shared({ redirect_uri: REDIRECT }))).body).toMatchObject({ code: 100, argument_name: 'token' });
  });

  it('thin_registration creates the record at once (emailVerified only when the provider verified it); no email is still 310', async () => {
    const thin = await authNative(await tokenFor('bob'), { thin_registration: 'true' });
    expect(thin.body).toMatchObject({
      stat: 'ok', is_new: true,
      capture_user: { email: 'bob@example.test', displayName: 'Bob Tester', givenName: 'Bob', familyName: 'Tester', emailVerified: expect.any(String) },
    });
    const unverified = await authNative(await tokenFor('unverified-uma'), { thin_registration: 'true' });
    expect(unverified.body).toMatchObject({ stat: 'ok', is_new: true, capture_user: { email: 'unverified-uma@example.test', emailVerified: null } });
    expect((await authNative(await tokenFor('noemail-ned'), { thin_registration: 'true' })).body).toMatchObject({ code: 310 });
  });

  it('an email a password account holds: 380 with the existing account; merge_token at password sign-in links the identity, once', async () => {
    const carol = { emailAddress: 'carol@example.test', newPassword: 'correct horse battery', newPasswordConfirm: 'correct horse battery', firstName: 'Carol', lastName: 'Tester', displayName: 'Carol' };
    expect((await post('/oauth/register_native_traditional', shared(carol))).body.stat).toBe('ok');
    const token = await tokenFor('carol');
    const inUse = await authNative(token);
    expect(inUse.body).toMatchObject({
      stat: 'error', code: 380, error: 'email_address_in_use', existing_provider: 'capture', existing_display_name: 'Carol',
      existing_date_created: expect.stringMatching(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{6} \+0000$/),
    });
    const signIn = (extra: Record<string, string>) => post('/oauth/auth_native_traditional', shared({ signInEmailAddress: 'carol@example.test', currentPassword: 'correct horse battery', ...extra }));
    const merged = await signIn({ merge_token: token });
    expect(merged.body.stat).toBe('ok');
    expect(merged.body.capture_user.profiles).toHaveLength(1);
    expect((await signIn({ merge_token: token })).body).toMatchObject({ stat: 'error', code: 200, argument_name: 'merge_token' });
    // a later password sign-in answers the linked identity (read with the account) and records it in its snapshot
    const again = await signIn({});
    expect(again.body.capture_user.profiles).toEqual(merged.body.capture_user.profiles);
    const snapshot = await post('/versions/entity', { type_name: 'user', id: String(again.body.capture_user.id), timestamp: formatTimestamp(clock.now()) }, { Authorization: owner });
    expect(snapshot.body.result).toEqual(again.body.capture_user);
    expect((await authNative(await tokenFor('carol'))).body).toMatchObject({ stat: 'ok', is_new: false, capture_user: { email: 'carol@example.test' } });
  });

  it('20 parallel presentations of one token: exactly one sign-in', async () => {
    const token = await tokenFor('alice');
    const answers = await Promise.all(Array.from({ length: 20 }, () => authNative(token)));
    expect(answers.filter((r) => r.body.stat === 'ok')).toHaveLength(1);
    for (const r of answers.filter((x) => x.body.stat !== 'ok')) expect(r.body).toMatchObject({ code: 200, argument_name: 'token' });
  });
});

describe('merging an identity into an account', () => {
  const PAGE_REDIRECT = 'https://app.example.test/pages-done';
  const entry = () => ({ client_id: loginId, redirect_uri: PAGE_REDIRECT, locale: 'en-US' });
  const hostedStart = () => `${base}/social/testidp/start?${new URLSearchParams({ ...entry(), hosted: '1' })}`;
  const register = (name: string) => post('/oauth/register_native_traditional', shared({
    emailAddress: `${name}@example.test`, newPassword: 'correct horse battery', newPasswordConfirm: 'correct horse battery', firstName: 'V', lastName: 'T', displayName: name,
  }));
  const identities = async (email: string) => {
    const local = (await t.runtime.db.applications.findByName('local'))!;
    const record = (await t.runtime.db.records.find(local.id, { email }))!;
    return t.runtime.db.social.profiles.forEntity(local.id, record.id);
  };
  beforeAll(async () => {
    expect((await post('/settings/set', { for_client_id: loginId, key: 'redirect_uris', value: PAGE_REDIRECT }, { Authorization: owner })).body.stat).toBe('ok');
  });

  it('auth_native offers no merge (310, not 380) for an email the provider did not verify, thin registration included', async () => {
    expect((await register('unverified-una')).body.stat).toBe('ok');
    const claimed = await authNative(await tokenFor('unverified-una'), { registration_form: 'socialRegistrationForm' });
    expect(claimed.body).toMatchObject({ stat: 'error', code: 310, prereg_fields: { emailAddress: 'unverified-una@example.test' } });
    expect(claimed.body.error_description).toContain('did not verify');
    expect(claimed.body.existing_provider).toBeUndefined();
    const thin = await authNative(await tokenFor('unverified-una'), { thin_registration: 'true' });
    expect(thin.body).toMatchObject({ stat: 'error', code: 310 });
    expect(await identities('unverified-una@example.test')).toEqual([]);
  });

  it('the hosted merge: the callback\'s own page links the identity once the password is right', async () => {
    expect((await register('merlin')).body.stat).toBe('ok');
    const browser = cookieBrowser();
    const page = await signInAtProvider(hostedStart(), 'merlin', browser);
    expect(page.status).toBe(200);
    expect(page.body).toContain('link your Testidp account');
    const form = firstForm(page.body, page.url);
    expect(form.fields.merge_token).toMatch(/^[0-9a-f]{40}$/);
    const done = await browser.go(form.action, { method: 'POST', form: { ...form.fields, signInEmailAddress: 'merlin@example.test', currentPassword: 'correct horse battery' } }, 1).catch(() => undefined);
    expect(done).toBeUndefined(); // a redirect, not followed (1 hop)
    expect(browser.lastLocation).toMatch(/^https:\/\/app\.example\.test\/pages-done\?code=/);
    expect(await identities('merlin@example.test')).toEqual([expect.objectContaining({ identifier: `${provider.issuer}#merlin` })]);
  });

  it('a cross-site POST to /signin with an attacker\'s merge_token: refused, and the page carries nothing of it; the victim\'s sign-in links nothing', async () => {
    expect((await register('victor')).body.stat).toBe('ok');
    // the attacker's identity claims the victim's (verified) address: 380 gives them a merge_token
    const attackerToken = await tokenFor('victor');
    expect((await authNative(attackerToken)).body).toMatchObject({ code: 380 });

    // the victim's browser, sent by the attacker's page: no CSRF cookie
    const victim = cookieBrowser();
    const forged = await victim.go(`${base}/signin`, { method: 'POST', form: { ...entry(), merge_token: attackerToken, provider: 'Evil<b>Corp', csrf: 'x'.repeat(32) } });
    expect(forged.status).toBe(403);
    expect(forged.body).not.toContain(attackerToken);
    expect(forged.body).not.toContain('EvilCorp');
    expect(forged.body).not.toContain('Evil&lt;b&gt;Corp');
    expect(forged.body).not.toContain('name="merge_token"');
    // the victim signs in on that genuine page
    const form = firstForm(forged.body, forged.url);
    await victim.go(form.action, { method: 'POST', form: { ...form.fields, signInEmailAddress: 'victor@example.test', currentPassword: 'correct horse battery' } }, 1).catch(() => undefined);
    expect(victim.lastLocation).toMatch(/pages-done\?code=/);
    expect(await identities('victor@example.test')).toEqual([]);

    // even with the page's own CSRF token, a merge_token this browser was not given is refused
    const signin = await victim.go(`${base}/signin?${new URLSearchParams(entry())}`);
    const own = firstForm(signin.body, signin.url);
    const planted = await victim.go(own.action, { method: 'POST', form: {
      ...own.fields, merge_token: attackerToken, provider: 'testidp', signInEmailAddress: 'victor@example.test', currentPassword: 'correct horse battery',
    } });
    expect(planted.status).toBe(403);
    expect(planted.body).toContain('not started in this browser');
    expect(planted.body).not.toContain(attackerToken);
    expect(await identities('victor@example.test')).toEqual([]);
    // the attacker's token is still unspent, and still not the victim's: its own sign-in finds no linked account
    expect((await authNative(attackerToken)).body).toMatchObject({ code: 380 });
  });

  it('a hosted social sign-in of an account that must add a second factor first shows the enrollment step, not an error', async () => {
    expect((await register('enroll-ella')).body.stat).toBe('ok');
    // the identity linked by the hosted merge
    const linking = cookieBrowser();
    const merge = firstForm((await signInAtProvider(hostedStart(), 'enroll-ella', linking)).body, base);
    await linking.go(merge.action, { method: 'POST', form: { ...merge.fields, signInEmailAddress: 'enroll-ella@example.test', currentPassword: 'correct horse battery' } }, 1)
      .catch(() => undefined);
    expect(await identities('enroll-ella@example.test')).toHaveLength(1);
    // the pages see a setting once the application's cached row is older than a few seconds
    const setDefault = async (value: string) => {
      expect((await post('/settings/set_default', { key: 'second_factor', value }, { Authorization: owner })).body.stat).toBe('ok');
      clock.advance(60_000);
    };
    await setDefault('required');
    try {
      const page = await signInAtProvider(hostedStart(), 'enroll-ella', cookieBrowser());
      expect(page.status).toBe(200);
      const form = firstForm(page.body, page.url);
      expect(form.action).toBe(`${base}/signin/enroll`);
      expect(form.fields.enroll_token).toMatch(/^[0-9a-f]{40}$/);
    } finally {
      await setDefault('optional');
    }
  });

  it('/register/social takes only a token its own callback page gave this browser', async () => {
    const other = cookieBrowser();
    const page = await signInAtProvider(hostedStart(), 'newcomer-nia', other);
    const form = firstForm(page.body, page.url);
    expect(form.action).toBe(`${base}/register/social`);
    // the token copied into another browser (which has a page and CSRF token of its own)
    const thief = cookieBrowser();
    const own = firstForm((await thief.go(`${base}/signin?${new URLSearchParams(entry())}`)).body, base);
    const stolen = await thief.go(`${base}/register/social`, { method: 'POST', form: { ...form.fields, csrf: own.fields.csrf } });
    expect(stolen.status).toBe(403);
    expect(stolen.body).not.toContain(form.fields.token);
    // the browser the callback answered registers with it
    await other.go(form.action, { method: 'POST', form: form.fields }, 1).catch(() => undefined);
    expect(other.lastLocation).toMatch(/pages-done\?code=/);
  });
});

describe('linking is a change of how the account signs in', () => {
  it('needs a sign-in minutes old; an undo of an email change unlinks what was linked since', async () => {
    const eve = await post('/oauth/register_native_traditional', shared({
      emailAddress: 'eve@example.test', newPassword: 'correct horse battery', newPasswordConfirm: 'correct horse battery', firstName: 'Eve', lastName: 'T', displayName: 'Eve',
    }));
    const code = (await post('/access/getVerificationCode', { type_name: 'user', uuid: eve.body.capture_user.uuid, attribute_name: 'emailVerified' }, { Authorization: owner })).body.verification_code;
    expect((await post('/access/useVerificationCode', { verification_code: code })).body.stat).toBe('ok');
    const link = (token: string, access: string) => post('/oauth/link_account_native', shared({ token, access_token: access }));
    // a token from a sign-in more than 5 minutes ago (or a stolen one) links nothing
    clock.advance(301_000);
    const stale = await link(await tokenFor('eve-old'), eve.body.access_token);
    expect(stale.body).toMatchObject({ stat: 'error', code: 200, argument_name: 'access_token' });
    // whoever signed in just now changes the address, then links an identity of its own
    const fresh = (await post('/oauth/auth_native_traditional', shared({ signInEmailAddress: 'eve@example.test', currentPassword: 'correct horse battery' }))).body.access_token;
    expect((await post('/oauth/update_profile_native', shared({
      access_token: fresh, form: 'editProfileForm', emailAddress: 'mallory@example.test', firstName: 'Eve', lastName: 'T', displayName: 'Eve',
    }))).body).toEqual({ stat: 'ok' });
    clock.advance(1000);
    expect((await link(await tokenFor('mallory-gh'), fresh)).body).toEqual({ stat: 'ok' });
    await t.runtime.queue.idle!();
    const undo = new URL((await newestMail(t.runtime.config.mailDir, 'eve@example.test'))!.link!);
    const agent = request.agent(t.app);
    const csrf = /name="csrf" value="([^"]+)"/.exec((await agent.get(`${undo.pathname}${undo.search}`)).text)![1];
    expect((await agent.post('/undo-email-change').type('form').send({ code: undo.searchParams.get('code')!, csrf })).status).toBe(200);
    const record = await request(t.app).get('/entity').set('Authorization', owner).query({ type_name: 'user', uuid: eve.body.capture_user.uuid });
    expect(record.body.result).toMatchObject({ email: 'eve@example.test', profiles: [] });
    expect((await authNative(await tokenFor('mallory-gh'))).body).toMatchObject({ stat: 'error', code: 310 });
  });
});

describe('/oauth/link_account_native and /oauth/unlink_account_native', () => {
  it('links an identity (once per application), refuses bad tokens (400) and access tokens (413); unlinks, but never the last way in', async () => {
    const dave = await post('/oauth/register_native_traditional', shared({
      emailAddress: 'dave@example.test', newPassword: 'correct horse battery', newPasswordConfirm: 'correct horse battery', firstName: 'Dave', lastName: 'T', displayName: 'Dave',
    }));
    const access = dave.body.access_token as string;
    const link = (token: string, accessToken = access) => post('/oauth/link_account_native', shared({ token, access_token: accessToken }));
    clock.advance(1000);
    expect((await link(await tokenFor('dave-gh'))).body).toEqual({ stat: 'ok' });
    const linkedAt = clock.now();
    clock.advance(1000);
    expect((await link(await tokenFor('dave-gh'))).body).toMatchObject({ code: 361, error: 'unique_violation', message: expect.any(String) });
    expect((await link('0'.repeat(40))).body).toMatchObject({ code: 400, error: 'engage_error' });
    expect((await link(await tokenFor('dave-other'), 'f'.repeat(40))).body).toMatchObject({ code: 413 });

    const unlink = (identifier: string, accessToken = access) => post('/oauth/unlink_account_native', shared({ identifier_to_remove: identifier, access_token: accessToken }));
    expect((await unlink('https://nowhere.example.test#x')).body).toMatchObject({ code: 200, argument_name: 'identifier_to_remove' });
    expect((await unlink(`${provider.issuer}#dave-gh`)).body).toEqual({ stat: 'ok' });
    expect((await post('/entity', {}, { Authorization: `OAuth ${access}` })).body.result.profiles).toEqual([]);
    // each link and unlink is a version of the record
    const at = async (time: Date) => (await post('/versions/entity', {
      type_name: 'user', id: String(dave.body.capture_user.id), timestamp: formatTimestamp(time),
    }, { Authorization: owner })).body.result.profiles;
    expect(await at(linkedAt)).toEqual([expect.objectContaining({ identifier: `${provider.issuer}#dave-gh` })]);
    expect(await at(new Date(linkedAt.getTime() - 1))).toEqual([]);
    expect(await at(clock.now())).toEqual([]);

    // a social-only account keeps its one identity
    const bob = (await authNative(await tokenFor('bob'))).body.access_token as string;
    expect((await unlink(`${provider.issuer}#bob`, bob)).body).toMatchObject({ code: 200, error_description: expect.stringContaining('only way to sign in') });
    // with two identities, two parallel unlinks: one wins, the other finds the last way in
    expect((await link(await tokenFor('bob-second'), bob)).body).toEqual({ stat: 'ok' });
    const both = await Promise.all([`${provider.issuer}#bob`, `${provider.issuer}#bob-second`].map((id) => unlink(id, bob)));
    expect(both.map((r) => r.body.stat).sort()).toEqual(['error', 'ok']);
    expect(both.find((r) => r.body.stat === 'error')!.body.error_description).toContain('only way to sign in');
  });
});

describe('one identity, one record', () => {
  it('two accounts linking the same identity at the same moment: exactly one wins, the other gets 361', async () => {
    const accounts = await Promise.all(['zed1', 'zed2'].map(async (name) => (await post('/oauth/register_native_traditional', shared({
      emailAddress: `${name}@example.test`, newPassword: 'correct horse battery', newPasswordConfirm: 'correct horse battery', firstName: 'Z', lastName: 'T', displayName: name,
    }))).body.access_token as string));
    const tokens = [await tokenFor('zed'), await tokenFor('zed')];
    const answers = await Promise.all(accounts.map((access, i) => post('/oauth/link_account_native', shared({ token: tokens[i], access_token: access }))));
    expect(answers.map((r) => r.body.stat).sort()).toEqual(['error', 'ok']);
    expect(answers.find((r) => r.body.stat === 'error')!.body).toMatchObject({ code: 361, error: 'unique_violation' });
  });
});

describe('auth_info and an external social login application', () => {
  it('answers the profile behind a token to holders of the application\'s social_api_key', async () => {
    const token = await tokenFor('frank');
    const info = (apiKey: string, tok = token) => request(base).post('/api/v2/auth_info').type('form').send({ apiKey, token: tok });
    expect((await info('anything')).body).toMatchObject({ stat: 'fail', err: { code: 3 } });
    await post('/settings/set_default', { key: 'social_api_key', value: 'k'.repeat(32) }, { Authorization: owner });
    clock.advance(6_000); // the application cache lives 5 s
    expect((await info('wrong')).body).toMatchObject({ stat: 'fail', err: { code: 3 } });
    expect((await info('k'.repeat(32), 'b'.repeat(40))).body).toMatchObject({ stat: 'fail', err: { code: 1 } });
    expect((await info('k'.repeat(32))).body).toMatchObject({ stat: 'ok', profile: { identifier: `${provider.issuer}#frank`, email: 'frank@example.test' } });
  });

  it('apiKey guesses draw on the address\'s budget of failed sign-ins, in parallel too; a key of any length is refused', async () => {
    const limitedClock = manualClock();
    const limited = await startTestApp({ env: { LOGIN_LIMIT_ADDRESS: '3/600' }, clock: limitedClock });
    try {
      const owner2 = basic(limited.local.clients.owner.client_id, limited.local.clients.owner.client_secret);
      await request(limited.app).post('/settings/set_default').set('Authorization', owner2).type('form').send({ key: 'social_api_key', value: 'k'.repeat(32) });
      limitedClock.advance(6_000); // the application cache lives 5 s
      const info = (apiKey: string) => request(limited.app).post('/api/v2/auth_info').type('form').send({ apiKey, token: 'b'.repeat(40) });
      expect((await info('x'.repeat(300))).body).toMatchObject({ stat: 'fail', err: { code: 1, msg: expect.stringContaining('at most 256') } });
      // the right key gives its attempt back: it never uses the budget up
      for (let i = 0; i < 5; i++) expect((await info('k'.repeat(32))).body).toMatchObject({ stat: 'fail', err: { code: 1 } }); // unknown token
      const guesses = await Promise.all(Array.from({ length: 10 }, (_, i) => info(`guess-${i}`)));
      expect(guesses.filter((r) => r.status === 429)).toHaveLength(7);
      const after = await info('k'.repeat(32));
      expect(after.status).toBe(429);
      expect(after.headers['retry-after']).toMatch(/^\d+$/);
      expect(after.body).toMatchObject({ stat: 'fail', err: { code: 3, msg: expect.stringContaining('too many failed attempts') } });
    } finally {
      await limited.close();
    }
  });

  it('a login client with social_login_url redeems tokens of that application through auth_info', async () => {
    await post('/settings/set_default', { key: 'social_api_key', value: 'k'.repeat(32) }, { Authorization: owner });
    clock.advance(6_000); // the application cache lives 5 s
    const shop = await createApp(t.runtime, 'shop', FLOWS);
    const shopOwner = basic(shop.clients.owner.client_id, shop.clients.owner.client_secret);
    const host = { Host: 'shop.localhost' };
    for (const [key, value] of [['social_login_url', base], ['social_login_api_key', 'k'.repeat(32)]]) {
      await post('/settings/set', { for_client_id: shop.clients.login.client_id, key, value }, { Authorization: shopOwner, ...host });
    }
    const token = await tokenFor('gina');
    const res = await post('/oauth/auth_native', { client_id: shop.clients.login.client_id, locale: 'en-US', redirect_uri: REDIRECT, token, thin_registration: 'true' }, host);
    if (res.body.stat !== 'ok') throw new Error(JSON.stringify(res.body));
    expect(res.body).toMatchObject({ stat: 'ok', is_new: true, capture_user: { email: 'gina@example.test' } });
    // the identity belongs to shop's record now, not to local's
    expect((await authNative(await tokenFor('gina'))).body).toMatchObject({ code: 310 });
  });
});
