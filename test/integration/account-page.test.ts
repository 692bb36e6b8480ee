import request from 'supertest';
import type TestAgent from 'supertest/lib/agent';
import { newestMail } from '../../src/mail-files';
import { basic, manualClock, startTestApp, type TestApp } from '../helpers/backend';
import { stored } from '../helpers/stored';
import { sha256Hex } from '../../src/domain/secrets';
import { disableUser } from '../../src/usecases/operators/disable-user';
import { enableUser } from '../../src/usecases/operators/enable-user';
import { operatorActing } from '../../src/usecases/operators/deps';
import { oathtool } from '../helpers/totp';

// The account page (docs/account-page.md) over HTTP, as a browser without JavaScript uses it: its
// sign-in through the hosted /signin, its server-side browser session (idle and absolute
// lifetimes, revocable), and each section calling the same use cases as the API, with a recent
// sign-in asked for before a change of how the account signs in. Passkeys, which need a browser,
// are in test/e2e/account-browser.test.ts.

const clock = manualClock(new Date(Math.floor(Date.now() / 30_000) * 30_000 + 5_000));
const PASSWORD = 'correct horse battery';
let t: TestApp;
let owner: string;
let loginId: string;

const post = (path: string, params: Record<string, string>) => request(t.app).post(path).type('form').send(params);
const admin = (path: string, params: Record<string, string>) => request(t.app).post(path).set('Authorization', owner).type('form').send(params);
/** The record's versions waiting to be written or written (each a job of the outbox's versions queue). */
const versionsOf = (id: number) => stored(t.runtime.db).rows<{ payload: string }>("SELECT payload FROM outbox WHERE queue = 'versions' AND entity_id = ?", [id]);
const csrfOf = (html: string) => /name="csrf" value="([^"]*)"/.exec(html)![1];
const noticeOf = (html: string) => /<p class="notice" id="page-notice" role="alert">([^<]*)<\/p>/.exec(html)?.[1];
const doneOf = (html: string) => /<p class="notice done" role="status">([^<]*)<\/p>/.exec(html)?.[1];
/** The path and query of a redirect (the callback is on PUBLIC_BASE_URL, which is this same app). */
const pathOf = (location: string) => { const u = new URL(location, 'http://x'); return `${u.pathname}${u.search}`; };

async function account() {
  const email = `acct-${Math.random().toString(36).slice(2)}@example.com`;
  const created = await request(t.app).post('/entity.create').set('Authorization', owner).type('form')
    .send({ type_name: 'user', attributes: JSON.stringify({ email, password: PASSWORD, givenName: 'Ada', familyName: 'Lovelace' }) });
  expect(created.body.stat).toBe('ok');
  return { email, id: created.body.id as number };
}

/** A browser signing in to the account page with its password: the hosted sign-in, then the callback. Answers the browser on /account. */
async function signedInBrowser(email: string, agent: TestAgent = request.agent(t.app), start = '/account') {
  const first = await agent.get(start);
  expect(first.status).toBe(303);
  const signin = await agent.get(pathOf(first.headers.location));
  expect(signin.status).toBe(200);
  const hidden = Object.fromEntries([...signin.text.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].slice(0, 5).map((m) => [m[1], m[2].replace(/&amp;/g, '&')]));
  const posted = await agent.post('/signin').type('form').send({ ...hidden, signInEmailAddress: email, currentPassword: PASSWORD });
  expect(posted.status).toBe(303);
  const back = await agent.get(pathOf(posted.headers.location));
  expect(back.status).toBe(303);
  expect(back.headers.location).toBe('/account?locale=en-US');
  const page = await agent.get('/account');
  expect(page.status).toBe(200);
  return { agent, page, csrf: csrfOf(page.text) };
}

beforeAll(async () => {
  t = await startTestApp({ clock, env: { LOGIN_LIMIT_ADDRESS: '10000/900' } });
  owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
  loginId = t.local.clients.login.client_id;
});
afterAll(() => t.close());

describe('signing in to the account page', () => {
  it('sends a browser without a session to the hosted sign-in, which comes back to the page\'s callback; the session is an HttpOnly cookie', async () => {
    const a = await account();
    const agent = request.agent(t.app);
    const first = await agent.get('/account').query({ locale: 'fr-FR' });
    expect(first.status).toBe(303);
    const target = new URL(first.headers.location, 'http://x');
    expect(target.pathname).toBe('/signin');
    expect(target.searchParams.get('client_id')).toBe(loginId);
    expect(target.searchParams.get('redirect_uri')).toBe(`${t.runtime.services.baseUrls.of('local')}/account/callback`);
    expect(target.searchParams.get('locale')).toBe('fr-FR');
    const stateCookie = String(first.headers['set-cookie']);
    expect(stateCookie).toMatch(/gh_account_state=[0-9a-f]{32}[A-Za-z0-9_-]+; Max-Age=1800; Path=\/account\/callback; Expires=[^;]+; HttpOnly; SameSite=Lax/);

    const { page } = await signedInBrowser(a.email, agent);
    expect(page.text).toContain(`Signed in as ${a.email}`);
    for (const heading of ['Profile', 'Password', 'Passkeys', 'Two-step sign-in', 'Linked accounts', 'Where you are signed in']) expect(page.text).toContain(`>${heading}</h2>`);
    expect(page.headers['content-security-policy']).toContain("form-action 'self'");
    expect(page.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(page.headers['cache-control']).toBe('no-store');
    // the profile form is the flow's editProfileForm, filled from the record
    expect(page.text).toMatch(/name="firstName"[^>]*value="Ada"/);
    // this browser is one of the account's sessions, signed in with a password just now
    expect(page.text).toMatch(/<strong>This browser<\/strong><br>Signed in <time datetime="[^"]+" lang="en-US">[^<]+ UTC<\/time> with your password\./);
  });

  it('a callback without this browser\'s state, a replayed code, or no code starts no session', async () => {
    const a = await account();
    const { agent } = await signedInBrowser(a.email);
    // another browser, with the code of this one's next sign-in
    const again = await agent.get('/account/reauth');
    const signin = await agent.get(pathOf(again.headers.location));
    const hidden = Object.fromEntries([...signin.text.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)].slice(0, 5).map((m) => [m[1], m[2]]));
    const posted = await agent.post('/signin').type('form').send({ ...hidden, signInEmailAddress: a.email, currentPassword: PASSWORD });
    const callback = pathOf(posted.headers.location);
    const stranger = request.agent(t.app);
    const refused = await stranger.get(callback);
    expect(refused.status).toBe(400);
    expect(refused.headers['content-type']).toContain('text/html');
    expect(refused.text).toContain('This sign-in was started in another browser, or took too long.');
    expect(refused.headers['set-cookie'] ?? []).not.toEqual(expect.arrayContaining([expect.stringMatching(/^gh_account=/)]));
    expect((await stranger.get('/account')).status).toBe(303);
    // the browser that started it: once; the code again starts nothing
    expect((await agent.get(callback)).status).toBe(303);
    expect((await agent.get('/account')).status).toBe(200);
    const replayed = await request.agent(t.app).get(callback).set('Cookie', `gh_account_state=${new URL(callback, 'http://x').searchParams.get('state')}`);
    expect(replayed.status).toBe(400);
    expect((await agent.get('/account/callback').query({ state: 'x' })).status).toBe(400);
  });

  it('opens whatever login clients are added: the application\'s own signs in unless the link or account_client_id names another', async () => {
    const added = await admin('/clients/add', { description: 'second login', features: '["login_client"]' });
    expect(added.body.stat).toBe('ok');
    try {
      const res = await request(t.app).get('/account');
      expect(res.status).toBe(303);
      expect(new URL(res.headers.location, 'http://x').searchParams.get('client_id')).toBe(loginId);
      // the link may name the client; a client that is no login client is refused
      const named = await request(t.app).get('/account').query({ client_id: added.body.client_id });
      expect(new URL(named.headers.location, 'http://x').searchParams.get('client_id')).toBe(added.body.client_id);
      const owner = await request(t.app).get('/account').query({ client_id: t.local.clients.owner.client_id });
      expect(owner.status).toBe(400);
      expect(owner.text).toContain('account_client_id');
    } finally {
      await admin('/clients/delete', { client_id_for_deletion: added.body.client_id });
    }
  });

  it('the lifetimes and the client are settings of the application, checked when set', async () => {
    for (const [key, value, says] of [
      ['account_session_seconds', '60', 'from 300 to 2592000'], ['account_session_idle_seconds', 'half an hour', 'from 60 to 86400'], ['account_client_id', 'a b', 'login client'],
    ]) {
      const res = await admin('/settings/set_default', { key, value });
      expect(res.body).toMatchObject({ stat: 'error', code: 200, error_description: expect.stringContaining(says) });
    }
    // a shorter idle time, read at once by the next request
    const a = await account();
    const { agent } = await signedInBrowser(a.email);
    expect((await admin('/settings/set_default', { key: 'account_session_idle_seconds', value: '120' })).body.stat).toBe('ok');
    clock.advance(6_000);
    try {
      expect((await agent.get('/account')).status).toBe(200);
      clock.advance(150_000);
      expect((await agent.get('/account')).status).toBe(303);
    } finally {
      expect((await admin('/settings/set_default', { key: 'account_session_idle_seconds', value: '1800' })).body.stat).toBe('ok');
      clock.advance(6_000);
    }
  });

  it('a session ends after 30 minutes idle, at its absolute end, when signed out, and when the account is disabled', async () => {
    const a = await account();
    const idle = await signedInBrowser(a.email);
    clock.advance(29 * 60_000);
    expect((await idle.agent.get('/account')).status).toBe(200);
    clock.advance(29 * 60_000);
    expect((await idle.agent.get('/account')).status).toBe(200);
    clock.advance(31 * 60_000);
    expect((await idle.agent.get('/account')).status).toBe(303);

    // used every 25 minutes, it still ends 12 hours after its sign-in
    const busy = await signedInBrowser(a.email);
    for (let minutes = 25; minutes < 12 * 60; minutes += 25) {
      clock.advance(25 * 60_000);
      expect((await busy.agent.get('/account')).status).toBe(200);
    }
    clock.advance(25 * 60_000);
    expect((await busy.agent.get('/account')).status).toBe(303);

    const out = await signedInBrowser(a.email);
    const signedOut = await out.agent.post('/account/signout').type('form').send({ csrf: out.csrf });
    expect(signedOut.status).toBe(200);
    expect(signedOut.text).toContain('You are signed out.');
    expect((await out.agent.get('/account')).status).toBe(303);

    const disabled = await signedInBrowser(a.email);
    const operator = { app: (await t.runtime.db.applications.findByName('local'))!, entityId: a.id, acting: operatorActing('test') };
    await disableUser(t.runtime.services, operator);
    expect((await disabled.agent.get('/account')).status).toBe(303);
    await enableUser(t.runtime.services, operator);
    // enabled again, the session it had stays ended
    expect((await disabled.agent.get('/account')).status).toBe(303);
  });

  it('a POST without the page\'s token, or from another site, changes nothing', async () => {
    const a = await account();
    const { agent, csrf } = await signedInBrowser(a.email);
    const forged = await agent.post('/account/profile').type('form').send({ emailAddress: a.email, firstName: 'Mallory', lastName: 'X', displayName: 'm' });
    expect(forged.status).toBe(403);
    expect(noticeOf(forged.text)).toContain('This page expired before you sent it');
    const crossSite = await agent.post('/account/profile').set('Sec-Fetch-Site', 'cross-site').type('form')
      .send({ csrf, emailAddress: a.email, firstName: 'Mallory', lastName: 'X', displayName: 'm' });
    expect(crossSite.status).toBe(403);
    const record = await admin('/entity', { type_name: 'user', id: String(a.id) });
    expect(record.body.result.givenName).toBe('Ada');
    // linking an identity starts from the page's own link, with its token
    const link = await agent.get('/account/identities/link').query({ provider: 'testidp' });
    expect(link.status).toBe(403);
    expect(noticeOf(link.text)).toContain('This page expired before you sent it');
    const unknown = await agent.get('/account/identities/link').query({ provider: 'nowhere', csrf });
    expect(unknown.status).toBe(404);
    expect(unknown.headers['content-type']).toContain('text/html');
    // a POST without a session goes back to the page (to sign in), doing nothing
    const stranger = await request(t.app).post('/account/profile').type('form').send({ csrf, firstName: 'Mallory' });
    expect(stranger.status).toBe(303);
  });
});

describe('the sections', () => {
  it('profile: saved through editProfileForm, a new version of the record; a wrong field is shown in the form', async () => {
    const a = await account();
    const { agent, csrf } = await signedInBrowser(a.email);
    const bad = await agent.post('/account/profile').type('form').send({ csrf, emailAddress: 'not an address', firstName: 'Ada', lastName: 'Byron', displayName: 'ada' });
    expect(bad.status).toBe(400);
    expect(bad.text).toMatch(/id="f-emailAddress-error" role="alert">[^<]+<\/p>/);
    expect(bad.text).toMatch(/name="lastName"[^>]*value="Byron"/);
    const saved = await agent.post('/account/profile').type('form').send({ csrf, emailAddress: a.email, firstName: 'Augusta', lastName: 'Byron', displayName: 'ada' });
    expect(saved.status).toBe(303);
    expect(saved.headers.location).toBe('/account?locale=en-US&done=profile');
    const page = await agent.get(saved.headers.location);
    expect(doneOf(page.text)).toBe('Your profile is saved.');
    expect(page.text).toMatch(/name="firstName"[^>]*value="Augusta"/);
  });

  it('password: the current one is required; a new one ends the account\'s other sessions, not this one', async () => {
    const a = await account();
    const { agent, csrf } = await signedInBrowser(a.email);
    const api = await post('/oauth/auth_native_traditional', { client_id: loginId, locale: 'en-US', signInEmailAddress: a.email, currentPassword: PASSWORD, response_type: 'code_and_token', redirect_uri: 'http://localhost/x' });
    const other = await signedInBrowser(a.email);
    const wrong = await agent.post('/account/password').type('form').send({ csrf, currentPassword: 'not it at all', newPassword: 'a new long passphrase', newPasswordConfirm: 'a new long passphrase' });
    expect(wrong.status).toBe(400);
    expect(wrong.text).toContain('role="alert">');
    const common = await agent.post('/account/password').type('form').send({ csrf, currentPassword: PASSWORD, newPassword: 'passwordpassword', newPasswordConfirm: 'passwordpassword' });
    expect(common.status).toBe(400);
    expect(common.text).toMatch(/id="f-newPassword-error" role="alert">[^<]+<\/p>/);
    const changed = await agent.post('/account/password').type('form').send({ csrf, currentPassword: PASSWORD, newPassword: 'a new long passphrase', newPasswordConfirm: 'a new long passphrase' });
    expect(changed.status).toBe(303);
    expect(changed.headers.location).toContain('done=password');
    expect((await agent.get('/account')).status).toBe(200);
    expect((await other.agent.get('/account')).status).toBe(303);
    expect(api.body.access_token).toBeDefined();
    expect((await post('/oauth/update_profile_native', { client_id: loginId, locale: 'en-US', access_token: api.body.access_token, firstName: 'x' })).body.code).toBe(413);
  });

  it('sessions: the account\'s apps and browsers, each signed out alone or all but this one', async () => {
    const a = await account();
    const { agent, csrf } = await signedInBrowser(a.email);
    const code = await post('/oauth/auth_native_traditional', {
      client_id: loginId, locale: 'en-US', signInEmailAddress: a.email, currentPassword: PASSWORD, response_type: 'code', redirect_uri: 'http://localhost/x',
    });
    expect(code.body.stat).toBe('ok');
    const pair = await request(t.app).post('/oauth/token').type('form').auth(loginId, t.local.clients.login.client_secret)
      .send({ grant_type: 'authorization_code', code: code.body.authorization_code, redirect_uri: 'http://localhost/x' });
    expect(pair.body.refresh_token).toBeDefined();
    await signedInBrowser(a.email);
    const page = await agent.get('/account');
    const ids = [...page.text.matchAll(/<input type="hidden" name="session" value="([^"]+)">/g)].map((m) => m[1]);
    expect(ids).toHaveLength(2);
    expect(page.text).toContain('App: ');
    expect(page.text).toContain('Account page: ');
    // a session of another account, or made up, is not this account's
    const unknown = await agent.post('/account/sessions/end').type('form').send({ csrf, session: 'f'.repeat(32) });
    expect(unknown.status).toBe(400);
    expect(noticeOf(unknown.text)).toContain('is not one of this account');
    const appSession = ids.find((id) => page.text.indexOf(id) > page.text.indexOf('App: '))!;
    const ended = await agent.post('/account/sessions/end').type('form').send({ csrf, session: appSession });
    expect(ended.headers.location).toContain('done=sessionEnded');
    const refreshed = await request(t.app).post('/oauth/token').type('form').auth(loginId, t.local.clients.login.client_secret)
      .send({ grant_type: 'refresh_token', refresh_token: pair.body.refresh_token });
    expect(refreshed.body.stat).toBe('error');
    const all = await agent.post('/account/sessions/end').type('form').send({ csrf, others: '1' });
    expect(all.headers.location).toContain('done=othersEnded');
    const after = await agent.get(all.headers.location);
    expect(doneOf(after.text)).toBe('Your other sessions are signed out.');
    expect([...after.text.matchAll(/name="session"/g)]).toHaveLength(0);
  });

  it('two-step sign-in: turned on with the QR code and a first code, recovery codes shown once, renewed and turned off with a code; each an email, and no version (a snapshot does not show how the account signs in)', async () => {
    const a = await account();
    const { agent, csrf } = await signedInBrowser(a.email);
    const versionsBefore = (await versionsOf(a.id)).length;
    const enroll = await agent.post('/account/totp/enroll').type('form').send({ csrf });
    expect(enroll.status).toBe(200);
    expect(enroll.text).toContain('<svg');
    const secret = /<code id="secret">([A-Z2-7]+)<\/code>/.exec(enroll.text)![1];
    const wrong = await agent.post('/account/totp/enroll').type('form').send({ csrf: csrfOf(enroll.text), secret, code: '000000' === oathtool(secret, clock.now()) ? '111111' : '000000' });
    expect(wrong.status).toBe(400);
    expect(wrong.text).toContain(`<code id="secret">${secret}</code>`);
    const confirmed = await agent.post('/account/totp/enroll').type('form').send({ csrf: csrfOf(wrong.text), secret, code: oathtool(secret, clock.now()) });
    expect(confirmed.status).toBe(200);
    const codes = [...confirmed.text.matchAll(/<li><code>([^<]+)<\/code><\/li>/g)].map((m) => m[1]);
    expect(codes).toHaveLength(10);
    await (t.runtime.queue as { idle?: () => Promise<void> }).idle?.();
    expect((await newestMail(t.runtime.config.mailDir!, a.email))?.subject).toMatch(/Two-step sign-in is on/);
    const page = await agent.get('/account');
    expect(page.text).toContain('On: after your password');
    expect(page.text).toContain('10 recovery codes left.');
    // the next step's code renews the codes, and turns it off
    clock.advance(30_000);
    const renewed = await agent.post('/account/recovery-codes').type('form').send({ csrf, code: oathtool(secret, clock.now()) });
    expect(renewed.status).toBe(200);
    expect([...renewed.text.matchAll(/<li><code>([^<]+)<\/code><\/li>/g)].map((m) => m[1])).not.toEqual(codes);
    clock.advance(30_000);
    const badOff = await agent.post('/account/totp/remove').type('form').send({ csrf, code: '12' });
    expect(badOff.status).toBe(400);
    expect(noticeOf(badOff.text)).toBeTruthy();
    const off = await agent.post('/account/totp/remove').type('form').send({ csrf, code: oathtool(secret, clock.now()) });
    expect(off.headers.location).toContain('done=totpOff');
    expect((await agent.get('/account')).text).toContain('Off. Turn it on');
    // no version for either (the record as a reader sees it did not change); none holds the secret or a code
    const versionsAfter = await versionsOf(a.id);
    expect(versionsAfter).toHaveLength(versionsBefore);
    const written = JSON.stringify(versionsAfter);
    for (const secretValue of [secret, ...codes]) expect(written).not.toContain(secretValue);
  });

  it('two-step sign-in: the code that just turned it on neither renews the recovery codes nor turns it off, and the page says it was used', async () => {
    const a = await account();
    const { agent, csrf } = await signedInBrowser(a.email);
    const enroll = await agent.post('/account/totp/enroll').type('form').send({ csrf });
    const secret = /<code id="secret">([A-Z2-7]+)<\/code>/.exec(enroll.text)![1];
    const code = oathtool(secret, clock.now());
    expect((await agent.post('/account/totp/enroll').type('form').send({ csrf: csrfOf(enroll.text), secret, code })).status).toBe(200);
    for (const path of ['/account/recovery-codes', '/account/totp/remove']) {
      const again = await agent.post(path).type('form').send({ csrf, code });
      expect(again.status).toBe(400);
      expect(again.text).toContain('This code was used already. Wait for the next code your authenticator app shows');
    }
    expect((await agent.get('/account')).text).toContain('10 recovery codes left.');
  });

  it('a change of how the account signs in needs a sign-in within 5 minutes: after that the page asks to sign in again', async () => {
    const a = await account();
    const { agent, csrf } = await signedInBrowser(a.email);
    clock.advance(6 * 60_000);
    const page = await agent.get('/account');
    expect(page.text).toContain('For your security, sign in again before changing how you sign in.');
    const enroll = await agent.post('/account/totp/enroll').type('form').send({ csrf });
    expect(enroll.status).toBe(403);
    expect(enroll.text).toContain('<a href="/account/reauth">Sign in again</a>');
    const begin = await agent.post('/account/passkeys/begin').type('form').send({ csrf });
    expect(begin.status).toBe(400);
    expect(begin.body).toEqual({ reauth: true });
    // signing in again replaces this browser's session: still one session of this browser
    const fresh = await signedInBrowser(a.email, agent, '/account/reauth');
    expect(fresh.page.text).not.toContain('For your security');
    expect([...fresh.page.text.matchAll(/<strong>This browser<\/strong>/g)]).toHaveLength(1);
    expect([...fresh.page.text.matchAll(/Account page: /g)]).toHaveLength(0);
  });
});

describe('a passkey offered after a registration (passkey_after_registration=offer)', () => {
  const APP = 'https://app.example.com/callback';
  beforeAll(async () => {
    for (const [key, value] of [['redirect_uris', APP], ['passkey_after_registration', 'offer']]) {
      expect((await admin('/settings/set', { for_client_id: loginId, key, value })).body.stat).toBe('ok');
    }
  });
  afterAll(async () => {
    await admin('/settings/set', { for_client_id: loginId, key: 'passkey_after_registration', value: 'off' });
  });

  it('without a passkey added: the registration goes through the account page\'s callback to the offer, and "continue" gives the app a code that works', async () => {
    clock.advance(6_000);
    const agent = request.agent(t.app);
    const entry = { client_id: loginId, redirect_uri: APP, state: 'st-4', locale: 'en-US' };
    const form = await agent.get('/register').query(entry);
    const email = `offer-${Math.random().toString(36).slice(2)}@example.com`;
    const registered = await agent.post('/register').type('form').send({
      ...entry, csrf: csrfOf(form.text), emailAddress: email, newPassword: PASSWORD, newPasswordConfirm: PASSWORD, firstName: 'Grace', lastName: 'Hopper', displayName: 'grace',
    });
    expect(registered.status).toBe(303);
    expect(registered.headers.location).toMatch(/\/account\/callback\?code=[0-9a-f]+&state=/);
    const callback = await agent.get(pathOf(registered.headers.location));
    expect(callback.status).toBe(303);
    expect(callback.headers.location).toBe('/register/passkey?locale=en-US');
    const offer = await agent.get(callback.headers.location);
    expect(offer.status).toBe(200);
    expect(offer.text).toContain('<h1>Your account is ready</h1>');
    expect(offer.headers['content-security-policy']).toContain("form-action 'self' https://app.example.com");
    const token = csrfOf(offer.text);
    // where it goes back to is the session's, whatever a request says; a forged continue does nothing
    const named = await agent.get('/register/passkey').query({ ...entry, redirect_uri: 'https://evil.example/cb' });
    expect(named.status).toBe(200);
    expect(named.text).not.toContain('evil.example');
    expect((await agent.post('/register/continue').type('form').send({ ...entry, csrf: 'forged' })).status).toBe(403);
    // an account page session of another browser has no offer: the page says so
    const other = await signedInBrowser((await account()).email);
    expect((await other.agent.get('/register/passkey')).status).toBe(400);
    expect((await other.agent.post('/register/continue').type('form').send({ csrf: other.csrf })).status).toBe(400);
    const bad = await agent.post('/register/passkey').type('form').send({ ...entry, csrf: token, credential: '{"id":"x"}' });
    expect(bad.status).toBe(400);
    expect(noticeOf(bad.text)).toBeTruthy();
    const done = await agent.post('/register/continue').type('form').send({ csrf: token });
    expect(done.status).toBe(303);
    // the offer's session ends with it: nothing is left signed in in this browser, and it gives no second code
    expect((await agent.get('/account')).status).toBe(303);
    expect((await agent.post('/register/continue').type('form').send({ csrf: token })).headers.location).toBe('/account?locale=en-US');
    const back = new URL(done.headers.location);
    expect(`${back.origin}${back.pathname}`).toBe(APP);
    expect(back.searchParams.get('state')).toBe('st-4');
    const tokens = await request(t.app).post('/oauth/token').auth(loginId, t.local.clients.login.client_secret).type('form')
      .send({ grant_type: 'authorization_code', code: back.searchParams.get('code'), redirect_uri: APP });
    expect(tokens.body).toMatchObject({ access_token: expect.any(String), refresh_token: expect.any(String) });
    // the app's session says how the person signed in: the registration's password
    const [row] = await stored(t.runtime.db).rows<{ extra: string }>("SELECT extra FROM credentials WHERE kind = 'access_token' AND value_hash = ?",
      [sha256Hex(tokens.body.access_token)]);
    expect(JSON.parse(row.extra).session).toMatchObject({ amr: ['pwd'], factors: ['password'] });
  });
});


describe('downloading one\'s data (docs/lifecycle.md#export)', () => {
  it('the page\'s button answers the export as a file, the same document /entity.export answers; a forged POST gets none', async () => {
    const a = await account();
    // disabled for a while by an operator, with a reason the person is not shown
    const app = (await t.runtime.db.applications.findByName('local'))!;
    await disableUser(t.runtime.services, { app, entityId: a.id, acting: operatorActing('test'), until: new Date(clock.now().getTime() + 1000), reason: 'internal note 7731' });
    clock.advance(1001);
    const { agent, page, csrf } = await signedInBrowser(a.email);
    expect(page.text).toContain('Download my data');
    const file = await agent.post('/account/export').type('form').send({ csrf });
    expect(file.status).toBe(200);
    expect(file.headers['content-type']).toMatch(/^application\/json/);
    expect(file.headers['content-disposition']).toMatch(/^attachment; filename="local-account-\d{4}-\d\d-\d\d\.json"$/);
    expect(file.headers['cache-control']).toBe('no-store');
    const doc = JSON.parse(file.text);
    const api = (await request(t.app).post('/entity.export').set('Authorization', owner).type('form').send({ id: String(a.id) })).body.result;
    expect(doc.record).toEqual(api.record);
    // the disable is in the person's activity, without the operators' words, and over
    expect(doc.activity.find((e: { type: string }) => e.type === 'account.disabled')).toEqual(expect.not.objectContaining({ reason: expect.anything() }));
    expect(file.text).not.toContain('internal note 7731');
    expect(doc.account.disabled).toBeNull();
    expect(JSON.stringify(api)).toContain('internal note 7731');
    expect(doc.sessions.some((s: { kind: string }) => s.kind === 'browser_session')).toBe(true);
    // without the page's form token: the page again, no file
    const forged = await agent.post('/account/export').type('form').send({ csrf: 'forged' });
    expect(forged.status).toBe(403);
    expect(forged.headers['content-disposition']).toBeUndefined();
  });
});
