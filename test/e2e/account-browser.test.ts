import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import request from 'supertest';
import { projectRoot } from '../../src/paths';
import { basic, manualClock, skipUnless, type TestApp } from '../helpers/backend';
import { freePort } from '../helpers/processes';
import { CHROMIUM, deviceWithPasskeys, launchChromium, screenshots, servedTestApp, tabTo, VIEWPORTS } from '../helpers/browser';
import { startOidcProvider } from '../helpers/social';
import { oathtool } from '../helpers/totp';

// The account page (docs/account-page.md) in headless Chromium, with the keyboard only: signing in
// through the hosted /signin, adding a passkey with the DevTools protocol's virtual authenticator,
// naming and removing it, signing in with it, signing out; and no sideways scroll on a phone.

const SHOTS = path.join(projectRoot(), 'docs/pages');
const PASSWORD = 'correct horse battery';
/** The time Gatehouse reads, moved by hand (a sign-in grows old); at the start of a 30-second step, so the next step's code is known. */
const clock = manualClock(new Date(Math.floor(Date.now() / 30_000) * 30_000 + 2_000));
/** The code oathtool (Debian's oathtool) computes for `secret` at `at`. */
skipUnless(fs.existsSync(CHROMIUM), `the browser test needs Chromium at ${CHROMIUM} (apt-get install chromium)`)('the account page in a real browser', () => {
  let t: TestApp;
  let served: Awaited<ReturnType<typeof servedTestApp>>;
  let browser: Browser;
  let base: string;
  let owner: string;
  let provider: Awaited<ReturnType<typeof startOidcProvider>>;
  let appServer: http.Server;
  let appCallback: string;

  beforeAll(async () => {
    served = await servedTestApp({ clock, env: { LOGIN_LIMIT_ADDRESS: '10000/900' } });
    ({ t, base } = served);
    owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
    provider = await startOidcProvider([`${base}/social/testidp/callback`]);
    const added = await request(t.app).post('/providers/add').set('Authorization', owner).type('form')
      .send({ name: 'testidp', issuer: provider.issuer, provider_client_id: 'gatehouse', provider_client_secret: 'provider-secret' });
    expect(added.body.stat).toBe('ok');
    // the app the registration goes back to: its callback page shows what it got
    const appPort = await freePort();
    appCallback = `http://127.0.0.1:${appPort}/callback`;
    appServer = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<p id="app">app</p>'));
    await new Promise<void>((resolve) => appServer.listen(appPort, '127.0.0.1', resolve));
    const login = t.local.clients.login.client_id;
    for (const [key, value] of [['redirect_uris', appCallback], ['passkey_after_registration', 'offer']]) {
      expect((await request(t.app).post('/settings/set').set('Authorization', owner).type('form').send({ for_client_id: login, key, value })).body.stat).toBe('ok');
    }
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await provider?.stop();
    if (appServer) await new Promise<void>((resolve) => appServer.close(() => resolve()));
    await served?.close();
  });

  async function account() {
    const email = `ap-${Math.random().toString(36).slice(2)}@example.com`;
    const created = await request(t.app).post('/entity.create').set('Authorization', owner).type('form')
      .send({ type_name: 'user', attributes: JSON.stringify({ email, password: PASSWORD, givenName: 'Ada', familyName: 'Lovelace' }) });
    expect(created.body.stat).toBe('ok');
    return { email, id: created.body.id as number };
  }

  /** A browser (its own cookies) in Tokyo's time zone, with a virtual platform authenticator: user verification, resident keys. */
  const device = (viewport = VIEWPORTS.desktop) => deviceWithPasskeys(browser, { viewport, timezoneId: 'Asia/Tokyo' });

  /** Types into the field `selector`, reached with Tab. */
  async function typeInto(page: Page, selector: string, value: string): Promise<void> {
    await tabTo(page, selector);
    await page.keyboard.press('Control+A');
    await page.keyboard.type(value);
  }

  /** From /account, through the hosted sign-in with the password, back to /account. */
  async function signInWithPassword(page: Page, email: string): Promise<void> {
    await page.goto(`${base}/account`);
    await page.waitForURL(/\/signin\?/);
    await typeInto(page, '#f-signInEmailAddress', email);
    await typeInto(page, '#f-currentPassword', PASSWORD);
    await Promise.all([page.waitForURL(`${base}/account?locale=en-US`), page.keyboard.press('Enter')]);
  }

  const shoot = (page: Page, name: string) => screenshots(page, SHOTS, name, VIEWPORTS);

  it('keyboard only: sign in, add a passkey, name it, sign out, sign in with the passkey, remove it', async () => {
    const a = await account();
    const d = await device();
    try {
      await signInWithPassword(d.page, a.email);
      expect(await d.page.textContent('main')).toContain(`Signed in as ${a.email}`);

      await tabTo(d.page, '#passkey-add-button');
      await Promise.all([d.page.waitForURL(/done=passkeyAdded/), d.page.keyboard.press('Enter')]);
      expect(await d.page.textContent('.notice.done')).toBe('The passkey is added.');
      const name = d.page.locator('input[name="name"]');
      expect(await name.count()).toBe(1);
      // named after the browser it was made on
      expect(await name.inputValue()).toBe('Chrome / Linux');
      await typeInto(d.page, 'input[name="name"]', 'Work laptop');
      await Promise.all([d.page.waitForURL(/done=passkeyRenamed/), d.page.keyboard.press('Enter')]);
      expect(await d.page.locator('input[name="name"]').inputValue()).toBe('Work laptop');
      await shoot(d.page, 'account');

      await tabTo(d.page, 'form[action="/account/signout"] button');
      await Promise.all([d.page.waitForURL(`${base}/account/signout`), d.page.keyboard.press('Enter')]);
      expect(await d.page.textContent('main')).toContain('You are signed out.');

      // the hosted sign-in's passkey button, no password typed (in a browser without the autofill of
      // passkeys: the virtual authenticator would answer the autofill's request at once)
      await d.page.addInitScript('PublicKeyCredential.isConditionalMediationAvailable = async () => false');
      await d.page.goto(`${base}/account`);
      await d.page.waitForURL(/\/signin\?/);
      await d.page.waitForSelector('#passkey-button:not([hidden])');
      await tabTo(d.page, '#passkey-button');
      await Promise.all([d.page.waitForURL(`${base}/account?locale=en-US`), d.page.keyboard.press('Enter')]);
      expect(await d.page.textContent('main')).toMatch(/This browser\s*Signed in [^.]+ with a passkey\./);
      // times in the viewer's time zone (Tokyo's, UTC+9), each once in a <time> element that says it in UTC
      expect(await d.page.textContent('main')).toMatch(/Last used [^.]+ GMT\+9\./);
      const iso = await d.page.getAttribute('time', 'datetime');
      expect(new Date(iso!).getTime()).toBeGreaterThan(Date.now() - 600_000);
      // the sections are linked at the top; no two fields have one label
      expect(await d.page.locator('nav a').allTextContents()).toEqual(expect.arrayContaining(['Password', 'Passkeys', 'Where you are signed in']));
      const labels = await d.page.locator('main label').allTextContents();
      expect(labels.length).toBe(new Set(labels).size);

      await tabTo(d.page, 'form[action="/account/passkeys/remove"] button');
      await Promise.all([d.page.waitForURL(/done=passkeyRemoved/), d.page.keyboard.press('Enter')]);
      expect(await d.page.textContent('main')).toContain('No passkey yet.');
    } finally {
      await d.context.close();
    }
  });

  /** Signs in at the test provider as `login` and consents. */
  async function atProvider(page: Page, login: string): Promise<void> {
    await page.waitForURL(/\/interaction\//);
    await page.fill('input[name=login]', login);
    await page.fill('input[name=password]', 'anything');
    await page.click('button[type=submit]');
    await page.waitForURL(/\/interaction\//);
    await page.click('button[type=submit]'); // consent
  }

  it('links a social account through its provider, signs in with it, and unlinks it', async () => {
    const a = await account();
    const d = await device();
    try {
      await signInWithPassword(d.page, a.email);
      await d.page.click('text="Link Testidp"');
      await atProvider(d.page, 'lovelace');
      await d.page.waitForURL(/done=identityLinked/);
      expect(await d.page.textContent('.notice.done')).toBe('The account is linked.');
      expect(await d.page.locator('text=Unlink Testidp').count()).toBe(1);
      expect(await d.page.locator('text="Link Testidp"').count()).toBe(0);

      // signed out, the provider signs this account in
      await Promise.all([d.page.waitForURL(`${base}/account/signout`), d.page.click('form[action="/account/signout"] button')]);
      await d.page.addInitScript('PublicKeyCredential.isConditionalMediationAvailable = async () => false');
      await d.page.goto(`${base}/account`);
      await d.page.waitForURL(/\/signin\?/);
      await Promise.all([d.page.waitForURL(`${base}/account?locale=en-US`), d.page.click('text=Continue with Testidp')]);
      expect(await d.page.textContent('main')).toContain(`Signed in as ${a.email}`);
      expect(await d.page.textContent('main')).toMatch(/This browser\s*Signed in [^.]+ with a social account\./);

      // another account cannot link the same identity
      const b = await account();
      const other = await device();
      try {
        await signInWithPassword(other.page, b.email);
        await other.page.click('text="Link Testidp"');
        await atProvider(other.page, 'lovelace');
        await other.page.waitForURL(/\/social\/testidp\/callback/);
        expect(await other.page.textContent('#page-notice')).toContain('already linked');
      } finally {
        await other.context.close();
      }

      await Promise.all([d.page.waitForURL(/done=identityUnlinked/), d.page.click('text=Unlink Testidp')]);
      expect(await d.page.locator('text="Link Testidp"').count()).toBe(1);
    } finally {
      await d.context.close();
    }
  });

  /** Registers on /register (the app's entry), up to the passkey offer. */
  async function registerUpToOffer(page: Page, email: string): Promise<void> {
    const entry = new URLSearchParams({ client_id: t.local.clients.login.client_id, redirect_uri: appCallback, state: 'st-9', locale: 'en-US' });
    await page.goto(`${base}/register?${entry}`);
    for (const [field, value] of [['emailAddress', email], ['newPassword', PASSWORD], ['newPasswordConfirm', PASSWORD], ['firstName', 'Grace'], ['lastName', 'Hopper'], ['displayName', 'grace']]) {
      await page.fill(`#f-${field}`, value);
    }
    await Promise.all([page.waitForURL(/\/register\/passkey\?/), page.click('form[action="/register"] button[type=submit]')]);
    expect(await page.textContent('h1')).toBe('Your account is ready');
  }

  /** The app's side: its code exchanged at the token endpoint, and the record its token reads. */
  async function appGot(url: string): Promise<string> {
    const got = new URL(url);
    expect(got.searchParams.get('state')).toBe('st-9');
    const login = t.local.clients.login;
    const tokens = await request(t.app).post('/oauth/token').auth(login.client_id, login.client_secret).type('form')
      .send({ grant_type: 'authorization_code', code: got.searchParams.get('code'), redirect_uri: appCallback });
    expect(tokens.body.access_token).toBeDefined();
    const me = await request(t.app).post('/entity').set('Authorization', `OAuth ${tokens.body.access_token}`).type('form').send({});
    return me.body.result.email as string;
  }

  it('a registration offers a passkey (passkey_after_registration=offer): added, then the app gets its code; the passkey signs in next time', async () => {
    const email = `offer-${Math.random().toString(36).slice(2)}@example.com`;
    const d = await device();
    try {
      await registerUpToOffer(d.page, email);
      await d.page.click('#passkey-add-button');
      await d.page.waitForSelector('text=The passkey is added: next time, sign in with it.');
      await Promise.all([d.page.waitForURL(/^http:\/\/127\.0\.0\.1:\d+\/callback\?/), d.page.click('text=Continue')]);
      expect(await appGot(d.page.url())).toBe(email);
      // the passkey signs this account in to the account page, no password typed
      await Promise.all([d.page.waitForURL(`${base}/account?locale=en-US`), d.page.goto(`${base}/account/reauth`)]);
      expect(await d.page.textContent('main')).toContain(`Signed in as ${email}`);
    } finally {
      await d.context.close();
    }
  });

  it('a registration\'s offer declined: the app gets its code at once', async () => {
    const email = `decline-${Math.random().toString(36).slice(2)}@example.com`;
    const d = await device();
    try {
      await registerUpToOffer(d.page, email);
      await Promise.all([d.page.waitForURL(/^http:\/\/127\.0\.0\.1:\d+\/callback\?/), d.page.click('text=Not now, continue')]);
      expect(await appGot(d.page.url())).toBe(email);
    } finally {
      await d.context.close();
    }
  });

  it('the last passkey of an account without a password is kept, and the page says why', async () => {
    const a = await account();
    const d = await device();
    try {
      await signInWithPassword(d.page, a.email);
      await d.page.click('#passkey-add-button');
      await d.page.waitForURL(/done=passkeyAdded/);
      // an account whose password an operator removed (it signs in with its passkey only)
      await t.runtime.db.sequelize.query('UPDATE entities SET password_hash = NULL WHERE id = ?', { replacements: [a.id] });
      await Promise.all([d.page.waitForURL(`${base}/account/passkeys/remove`), d.page.click('form[action="/account/passkeys/remove"] button')]);
      expect(await d.page.textContent('#page-notice')).toContain('this passkey is the only way this account signs in');
      expect(await d.page.locator('input[name="name"]').count()).toBe(1);
    } finally {
      await d.context.close();
    }
  });

  it('shows the account its activity (a passkey sign-in, a code sign-in, three wrong passwords, a reused family ended) in its time zone; "this wasn\'t me" ends every other session', async () => {
    const a = await account();
    const login = t.local.clients.login.client_id;
    const api = (path: string, params: Record<string, string>, agent = 'Mozilla/5.0 (X11; Linux x86_64; rv:140.0) Gecko/20100101 Firefox/140.0') =>
      request(t.app).post(path).set('User-Agent', agent).type('form').send(params);
    const token = (params: Record<string, string>) => request(t.app).post('/oauth/token').set('Authorization', basic(login, t.local.clients.login.client_secret))
      .set('User-Agent', 'okhttp/4.12').type('form').send(params);
    const signIn = (password: string) => api('/oauth/auth_native_traditional', {
      client_id: login, locale: 'en-US', signInEmailAddress: a.email, currentPassword: password, response_type: 'code', redirect_uri: appCallback,
    });
    for (let i = 0; i < 3; i++) expect((await signIn('not the password')).body.code).toBe(210);
    // an app's session whose spent refresh token comes back: its family ends
    const first = await signIn(PASSWORD);
    const leaked = await token({ grant_type: 'authorization_code', code: first.body.authorization_code, redirect_uri: appCallback });
    expect((await token({ grant_type: 'refresh_token', refresh_token: leaked.body.refresh_token })).body.stat).toBe('ok');
    expect((await token({ grant_type: 'refresh_token', refresh_token: leaked.body.refresh_token })).body.stat).toBe('error');
    // an authenticator app, and a sign-in that finishes with its code: that session stays live until "this wasn't me"
    const enrolled = await api('/oauth/totp_enroll_native', { access_token: leaked.body.access_token });
    expect(enrolled.body.stat).toBe('error'); // the family's access token ended with it
    const fresh = await signIn(PASSWORD);
    const pair = await token({ grant_type: 'authorization_code', code: fresh.body.authorization_code, redirect_uri: appCallback });
    const on = await api('/oauth/totp_enroll_native', { access_token: pair.body.access_token });
    expect((await api('/oauth/totp_confirm_native', { access_token: pair.body.access_token, code: oathtool(on.body.secret, clock.now()) })).body.stat).toBe('ok');
    clock.advance(30_000);
    const paused = await signIn(PASSWORD);
    const coded = await api('/oauth/mfa_verify_native', { client_id: login, mfa_token: paused.body.mfa_token, code: oathtool(on.body.secret, clock.now()) });
    const other = await token({ grant_type: 'authorization_code', code: coded.body.authorization_code, redirect_uri: appCallback });
    expect(other.body.stat).toBe('ok');

    const d = await device();
    try {
      // a passkey added on the page, then the page signed into with it
      await d.page.addInitScript('PublicKeyCredential.isConditionalMediationAvailable = async () => false');
      await d.page.goto(`${base}/account`);
      await d.page.waitForURL(/\/signin\?/);
      await d.page.fill('#f-signInEmailAddress', a.email);
      await d.page.fill('#f-currentPassword', PASSWORD);
      await Promise.all([d.page.waitForSelector('#code'), d.page.click('form[action="/signin"] button[type=submit]')]);
      await d.page.fill('#code', oathtool(on.body.secret, new Date(clock.now().getTime() + 30_000)));
      await Promise.all([d.page.waitForURL(`${base}/account?locale=en-US`), d.page.click('form[action="/signin/code"] button[type=submit]')]);
      await d.page.click('#passkey-add-button');
      await d.page.waitForURL(/done=passkeyAdded/);
      await Promise.all([d.page.waitForURL(`${base}/account/signout`), d.page.click('form[action="/account/signout"] button')]);
      await d.page.goto(`${base}/account`);
      await d.page.waitForURL(/\/signin\?/);
      await d.page.waitForSelector('#passkey-button:not([hidden])');
      await Promise.all([d.page.waitForURL(`${base}/account?locale=en-US`), d.page.click('#passkey-button')]);

      const shown = await d.page.locator('#h-activity + ul li').allTextContents();
      const line = (what: string, device = '') => shown.find((l) => l.startsWith(what) && l.includes(device));
      expect(line('Signed in with a passkey')).toMatch(/GMT\+9 .*Chrome \/ Linux/);
      // the code sign-in of the app (through the API) and this browser's
      expect(line('Signed in with your password and an authenticator code', 'Firefox')).toMatch(/GMT\+9 .*Firefox \/ Linux · 127\.0\.0\.1/);
      expect(line('Signed in with your password and an authenticator code', 'Chrome')).toBeDefined();
      expect(line('3 failed sign-in attempts: wrong password')).toContain('Firefox / Linux');
      expect(line('A used sign-in token came back')).toBeDefined();
      expect(line('Passkey added')).toBeDefined();
      expect(line('Two-step sign-in turned on')).toBeDefined();
      // the client is named as the sessions name it: its description, else its client_id
      expect(line('Signed in with a passkey')).toContain('local login client');

      await Promise.all([d.page.waitForURL(/done=disowned/), d.page.click('form[action="/account/activity/disown"] button')]);
      expect(await d.page.textContent('.notice.done')).toContain('Choose a new password below');
      expect(await d.page.locator('#h-activity + ul li').first().textContent()).toContain('You said an activity was not you');
      // every other session ended: the app's refresh token no longer rotates; this page is still signed in
      expect((await token({ grant_type: 'refresh_token', refresh_token: other.body.refresh_token })).body.stat).toBe('error');
      expect(await d.page.textContent('main')).toContain(`Signed in as ${a.email}`);
    } finally {
      await d.context.close();
    }
  });

  it('each state on a 390 px phone, without sideways scroll: the page, two-step setup, recovery codes, sign in again, signed out, the code step, the offer', async () => {
    const a = await account();
    const d = await device(VIEWPORTS.phone);
    /** The page as it is now: as wide as the phone, and (SCREENSHOTS=1) in docs/pages/ at both sizes. */
    const state = async (name: string) => {
      const [scroll, width] = await d.page.evaluate('[document.documentElement.scrollWidth, document.documentElement.clientWidth]') as number[];
      expect({ name, scroll }).toEqual({ name, scroll: width });
      await shoot(d.page, name);
      await d.page.setViewportSize(VIEWPORTS.phone);
    };
    try {
      await signInWithPassword(d.page, a.email);
      await state('account-signed-in');
      await Promise.all([d.page.waitForURL(`${base}/account/totp/enroll`), d.page.click('form[action="/account/totp/enroll"] button')]);
      expect(await d.page.locator('.qr svg').count()).toBe(1);
      await state('account-two-step');
      const secret = (await d.page.textContent('#secret'))!;
      await d.page.fill('#code', oathtool(secret, clock.now()));
      await Promise.all([d.page.waitForLoadState('load'), d.page.click('form[action="/account/totp/enroll"] button')]);
      expect(await d.page.locator('.codes li').count()).toBe(10);
      await state('account-recovery-codes');
      await d.page.click('text=Back to your account');
      await d.page.waitForURL(`${base}/account?locale=en-US`);
      expect(await d.page.textContent('main')).toContain('10 recovery codes left.');
      // minutes later, a change of a factor asks to sign in again
      clock.advance(6 * 60_000);
      await d.page.reload();
      expect(await d.page.textContent('main')).toContain('For your security, sign in again');
      await state('account-sign-in-again');
      await Promise.all([d.page.waitForURL(`${base}/account/signout`), d.page.click('form[action="/account/signout"] button')]);
      await state('account-signed-out');
      // the hosted sign-in asks for the authenticator's code after the password
      await d.page.goto(`${base}/account`);
      await d.page.waitForURL(/\/signin\?/);
      await d.page.fill('#f-signInEmailAddress', a.email);
      await d.page.fill('#f-currentPassword', PASSWORD);
      await Promise.all([d.page.waitForSelector('#code'), d.page.click('form[action="/signin"] button[type=submit]')]);
      await state('signin-code');
      await d.page.fill('#code', oathtool(secret, new Date(clock.now().getTime() + 30_000)));
      await Promise.all([d.page.waitForURL(`${base}/account?locale=en-US`), d.page.click('form[action="/signin/code"] button[type=submit]')]);
      expect(await d.page.textContent('main')).toMatch(/This browser\s*Signed in [^.]+ with your password and an authenticator code\./);
    } finally {
      await d.context.close();
    }
    const offer = await device(VIEWPORTS.phone);
    try {
      await registerUpToOffer(offer.page, `phone-${Math.random().toString(36).slice(2)}@example.com`);
      const [scroll, width] = await offer.page.evaluate('[document.documentElement.scrollWidth, document.documentElement.clientWidth]') as number[];
      expect(scroll).toBe(width);
      await shoot(offer.page, 'register-passkey-offer');
    } finally {
      await offer.context.close();
    }
  });
});
