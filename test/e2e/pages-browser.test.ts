import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { ParsedMail } from 'mailparser';
import type { Browser, Page } from 'playwright-core';
import request from 'supertest';
import { basic, createApp, SHIPPED_FLOWS, skipUnless, type TestApp } from '../helpers/backend';
import { freePort, ROOT } from '../helpers/processes';
import { waitFor } from '../helpers/smtp';
import { firstForm, signInAtProvider, startOidcProvider } from '../helpers/social';
import { CHROMIUM, launchChromium, screenshots, servedForPages, VIEWPORTS } from '../helpers/browser';

const SHOTS = path.join(ROOT, 'docs/pages');
const PASSWORD = 'correct horse battery';
/** The focused element's id, else its tag name. */
const focused = (page: Page) => page.evaluate<string>('document.activeElement ? (document.activeElement.id || document.activeElement.tagName) : ""');

skipUnless(fs.existsSync(CHROMIUM), `the browser test needs Chromium at ${CHROMIUM} (apt-get install chromium)`)('the hosted pages in a real browser', () => {
  let served: Awaited<ReturnType<typeof servedForPages>>;
  let t: TestApp;
  let smtp: Awaited<ReturnType<typeof servedForPages>>['smtp'];
  let provider: Awaited<ReturnType<typeof startOidcProvider>>;
  let browser: Browser;
  let base: string;
  let callback: string;
  let entry: (extra?: Record<string, string>) => string;

  beforeAll(async () => {
    served = await servedForPages();
    ({ t, smtp, base, callback } = served);
    const login = t.local.clients.login;
    provider = await startOidcProvider([`${base}/social/testidp/callback`]);
    expect((await served.admin('/providers/add', { name: 'testidp', issuer: provider.issuer, provider_client_id: 'gatehouse', provider_client_secret: 'provider-secret' })).body.stat).toBe('ok');
    entry = (extra = {}) => new URLSearchParams({ client_id: login.client_id, redirect_uri: callback, state: 'st-1', locale: 'en-US', ...extra }).toString();
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await provider?.stop();
    await served?.close();
  });

  const mailTo = (to: string, subject: RegExp) => waitFor(() => smtp.mails.find((m) => JSON.stringify(m.to).includes(to) && subject.test(m.subject ?? '')));
  const linkIn = (mail: ParsedMail) => mail.text!.match(/https?:\/\/\S+/)![0];
  const shoot = (page: Page, name: string) => screenshots(page, SHOTS, name, VIEWPORTS);
  /** An account with PASSWORD, registered through the API. */
  const registered = async (email: string) => {
    const res = await request(t.app).post('/oauth/register_native_traditional').type('form').send({
      client_id: t.local.clients.login.client_id, locale: 'en-US', emailAddress: email, newPassword: PASSWORD, newPasswordConfirm: PASSWORD,
      firstName: 'Pat', lastName: 'Tester', displayName: email.split('@')[0],
    });
    expect(res.body.stat).toBe('ok');
  };
  const record = async (email: string) => {
    const local = (await t.runtime.db.applications.findByName('local'))!;
    return t.runtime.db.records.find(local.id, { email });
  };

  it('keyboard only: register on /register (the browser checks the rules first) → welcome email → its link → confirm → emailVerified', async () => {
    const page = await browser.newPage({ viewport: VIEWPORTS.desktop });
    await page.goto(`${base}/register?${entry()}`);
    await shoot(page, 'register');
    // Tab from the top of the page reaches the fields in order
    await page.keyboard.press('Tab');
    expect(await focused(page)).toBe('f-emailAddress');
    const typed: [string, string][] = [
      ['f-emailAddress', 'keys@example.com'], ['f-newPassword', PASSWORD], ['f-newPasswordConfirm', 'correct horsf'], ['f-firstName', 'Kay'],
      ['f-lastName', 'Board'], ['f-displayName', 'kay'],
    ];
    for (const [id, value] of typed) {
      expect(await focused(page)).toBe(id);
      await page.keyboard.type(value);
      await page.keyboard.press('Tab');
    }
    // birthdate (three parts) and mobile are optional: Tab past them to the button, Enter submits
    for (let i = 0; i < 4; i++) await page.keyboard.press('Tab');
    expect(await focused(page)).toBe('BUTTON');
    await page.keyboard.press('Enter');
    // the mismatch is caught in the browser with the flow's message, announced, and focused
    expect(await focused(page)).toBe('f-newPasswordConfirm');
    expect(await page.getAttribute('#f-newPasswordConfirm', 'aria-invalid')).toBe('true');
    expect(await page.textContent('#f-newPasswordConfirm-error')).toBe('The two passwords do not match.');
    expect(page.url()).toContain('/register?');
    await shoot(page, 'register-errors');
    await page.keyboard.press('Control+A');
    await page.keyboard.type(PASSWORD);
    for (let i = 0; i < 8; i++) await page.keyboard.press('Tab');
    expect(await focused(page)).toBe('BUTTON');
    await Promise.all([page.waitForURL(/\/callback\?/), page.keyboard.press('Enter')]);
    expect(await page.textContent('#result')).toBe('Signed in as keys@example.com');
    expect(await page.textContent('#state')).toBe('st-1');

    const welcome = await mailTo('keys@example.com', /Welcome/);
    await page.goto(linkIn(welcome));
    expect(new URL(page.url()).pathname).toBe('/verify-email');
    await shoot(page, 'verify-email');
    expect((await record('keys@example.com'))!.emailVerified).toBeNull(); // opening the link does not use it
    await page.keyboard.press('Tab');
    expect(await focused(page)).toBe('BUTTON');
    await Promise.all([page.waitForLoadState(), page.keyboard.press('Enter')]);
    await page.waitForSelector('text=Your email address is verified');
    await shoot(page, 'verify-email-done');
    expect((await record('keys@example.com'))!.emailVerified).not.toBeNull();
    await page.close();
  });

  it('forgot password on /signin → email → link → new password → sign in with it', async () => {
    await registered('forgetful@example.com');
    const page = await browser.newPage({ viewport: VIEWPORTS.desktop });
    await page.goto(`${base}/signin?${entry()}`);
    await shoot(page, 'signin');
    await page.click('text=Forgot your password?');
    await shoot(page, 'forgot-password');
    await page.fill('#f-signInEmailAddress', 'forgetful@example.com');
    await Promise.all([page.waitForLoadState(), page.click('button[type=submit]')]);
    await page.waitForSelector('text=Check your inbox');

    const mail = await mailTo('forgetful@example.com', /password/i);
    await page.goto(linkIn(mail));
    expect(new URL(page.url()).pathname).toBe('/reset-password');
    await shoot(page, 'reset-password');
    await page.fill('#f-newPassword', 'battery staple horse');
    await page.fill('#f-newPasswordConfirm', 'battery staple horse');
    await Promise.all([page.waitForLoadState(), page.click('button[type=submit]')]);
    await page.waitForSelector('text=Your password is changed');
    // the link again: used, with the form for a new one
    await page.goto(linkIn(mail));
    await page.waitForSelector('text=This link was already used');
    await shoot(page, 'reset-password-used');

    await page.goto(`${base}/signin?${entry()}`);
    await page.fill('#f-signInEmailAddress', 'forgetful@example.com');
    await page.fill('#f-currentPassword', 'battery staple horse');
    await Promise.all([page.waitForURL(/\/callback\?/), page.click('button[type=submit]')]);
    expect(await page.textContent('#result')).toBe('Signed in as forgetful@example.com');
    await page.close();
  });

  it('the French page is in French, and a wrong password shows the flow\'s French message', async () => {
    const page = await browser.newPage({ viewport: VIEWPORTS.desktop });
    await page.goto(`${base}/signin?${entry({ locale: 'fr-FR' })}`);
    expect(await page.getAttribute('html', 'lang')).toBe('fr');
    expect(await page.textContent('h1')).toBe('Se connecter');
    expect(await page.textContent('label[for=f-signInEmailAddress]')).toBe('Adresse e-mail');
    // the browser checks the email format with the flow's French message first
    await page.fill('#f-signInEmailAddress', 'pas-une-adresse');
    await page.fill('#f-currentPassword', 'x');
    await page.click('button[type=submit]');
    expect(await page.textContent('#f-signInEmailAddress-error')).toMatch(/adresse e-mail valide/);
    await page.fill('#f-signInEmailAddress', 'forgetful@example.com');
    await page.fill('#f-currentPassword', 'mauvais mot de passe');
    await Promise.all([page.waitForLoadState(), page.click('button[type=submit]')]);
    expect(await page.textContent('#form-notice')).toBe('Adresse e-mail ou mot de passe incorrect.');
    expect(await page.isVisible('#form-notice')).toBe(true);
    await shoot(page, 'signin-wrong-password-fr');
    await page.close();
  });

  it('a mouse user who fixes a mistake and clicks the button signs in on that first click (nothing under the field moves)', async () => {
    // on a phone, where a message takes two lines
    const page = await browser.newPage({ viewport: VIEWPORTS.phone });
    try {
      await page.goto(`${base}/signin?${entry()}`);
      await page.fill('#f-signInEmailAddress', 'forgetful-at-example.com');
      await page.fill('#f-currentPassword', 'battery staple horse');
      await page.click('button[type=submit]');
      expect(await page.textContent('#f-signInEmailAddress-error')).toMatch(/valid email address/);
      // fix the field, then one real click at the button: mouse-down blurs the field (its check runs), mouse-up must land on the button
      await page.fill('#f-signInEmailAddress', 'forgetful@example.com');
      await page.focus('#f-signInEmailAddress');
      const before = await page.locator('button[type=submit]').boundingBox();
      await Promise.all([page.waitForURL(/\/callback\?/, { timeout: 10_000 }), page.mouse.click(before!.x + before!.width / 2, before!.y + before!.height / 2)]);
      expect(await page.textContent('#result')).toBe('Signed in as forgetful@example.com');
    } finally {
      await page.close();
    }
  });

  it('a cross-site page auto-posting an attacker\'s merge_token to /signin: the victim signs in and no identity is linked', async () => {
    await registered('target@example.test');
    // the attacker's own sign-in with an identity claiming the victim's address: a page with a merge_token
    const own = await signInAtProvider(`${base}/social/testidp/start?${entry({ hosted: '1' })}`, 'target');
    const mergeToken = firstForm(own.body, own.url).fields.merge_token;
    expect(mergeToken).toMatch(/^[0-9a-f]{40}$/);
    // the attacker's site (another site: *.localhost is not 127.0.0.1) posts it from the victim's browser
    const evilPort = await freePort();
    const fields = { client_id: t.local.clients.login.client_id, redirect_uri: callback, locale: 'en-US', merge_token: mergeToken, provider: 'testidp', csrf: 'forged' };
    const evil = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(
      `<!doctype html><form method="post" action="${base}/signin">${Object.entries(fields).map(([k, v]) => `<input type="hidden" name="${k}" value="${v}">`).join('')}</form>`
      + '<script>document.forms[0].submit()</script>'));
    await new Promise<void>((resolve) => evil.listen(evilPort, '127.0.0.1', resolve));
    const page = await browser.newPage({ viewport: VIEWPORTS.desktop });
    try {
      // the victim was on Gatehouse's sign-in page before: its CSRF cookie is in this browser
      await page.goto(`${base}/signin?${entry()}`);
      await Promise.all([page.waitForURL(`${base}/signin`), page.goto(`http://evil.localhost:${evilPort}/`)]);
      expect(await page.textContent('#form-notice')).toContain('expired');
      expect(await page.content()).not.toContain(mergeToken);
      expect(await page.locator('input[name=merge_token]').count()).toBe(0);
      await page.fill('#f-signInEmailAddress', 'target@example.test');
      await page.fill('#f-currentPassword', PASSWORD);
      await Promise.all([page.waitForURL(/\/callback\?/), page.click('button[type=submit]')]);
      expect(await page.textContent('#result')).toBe('Signed in as target@example.test');
      const target = (await record('target@example.test'))!;
      expect(await t.runtime.db.social.profiles.forEntity(target.applicationId, target.id)).toEqual([]);
    } finally {
      await page.close();
      await new Promise<void>((resolve) => evil.close(() => resolve()));
    }
  });

  it('login CSRF: a cookie planted for the host and the same value in a cross-site form signs no one in', async () => {
    await registered('planted@example.test');
    const planted = 'p'.repeat(32);
    const evilPort = await freePort();
    // the attacker's own account, posted with the value it planted as the victim's CSRF cookie
    const fields = { client_id: t.local.clients.login.client_id, redirect_uri: callback, locale: 'en-US', state: 'st-1', csrf: planted, signInEmailAddress: 'planted@example.test', currentPassword: PASSWORD };
    const evil = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(
      `<!doctype html><form method="post" action="${base}/signin">${Object.entries(fields).map(([k, v]) => `<input type="hidden" name="${k}" value="${v}">`).join('')}</form>`
      + '<script>document.forms[0].submit()</script>'));
    await new Promise<void>((resolve) => evil.listen(evilPort, '127.0.0.1', resolve));
    const context = await browser.newContext();
    try {
      // what a sibling host under the same parent domain, or a network attacker on plain http, can set
      await context.addCookies([{ name: 'gh_login_csrf', value: planted, domain: '127.0.0.1', path: '/', sameSite: 'None', secure: true }]);
      expect((await context.cookies()).map((c) => c.name)).toContain('gh_login_csrf');
      const page = await context.newPage();
      const answer = page.waitForResponse((r) => r.url() === `${base}/signin` && r.request().method() === 'POST');
      await page.goto(`http://evil.localhost:${evilPort}/`);
      const res = await answer;
      // the browser did send the planted cookie: the old double-submit check would have passed
      expect(await res.request().headerValue('cookie')).toContain(`gh_login_csrf=${planted}`);
      expect(res.status()).toBe(403);
      expect(page.url()).not.toContain('/callback');
      expect(await page.textContent('#form-notice')).toContain('expired');
    } finally {
      await context.close();
      await new Promise<void>((resolve) => evil.close(() => resolve()));
    }
  });

  it('a provider button: a new identity gets the social registration form, prefilled, then the app gets its code', async () => {
    const page = await browser.newPage({ viewport: VIEWPORTS.desktop });
    await page.goto(`${base}/signin?${entry()}`);
    await page.click('text=Continue with Testidp');
    await page.waitForURL(/\/interaction\//);
    await page.fill('input[name=login]', 'hopper');
    await page.fill('input[name=password]', 'anything');
    await page.click('button[type=submit]');
    await page.waitForURL(/\/interaction\//);
    await page.click('button[type=submit]'); // consent
    await page.waitForURL(/\/social\/testidp\/callback/);
    expect(await page.inputValue('#f-emailAddress')).toBe('hopper@example.test');
    expect(await page.inputValue('#f-firstName')).toBe('Hopper');
    await shoot(page, 'register-social');
    await Promise.all([page.waitForURL(/\/callback\?/), page.click('button[type=submit]')]);
    expect(await page.textContent('#result')).toBe('Signed in as hopper@example.test');
    await page.close();
  });

  it('a mistake typed, then one click straight at "Create my account": that first click submits (leaving the field shows no new error that moves the button)', async () => {
    // the whole form in view, the page not scrolled (a scrolled page keeps what is in view where it was)
    const page = await browser.newPage({ viewport: { width: 1280, height: 1600 } });
    try {
      await page.goto(`${base}/register?${entry()}`);
      await page.fill('#f-newPassword', PASSWORD);
      await page.fill('#f-newPasswordConfirm', PASSWORD);
      await page.fill('#f-firstName', 'Click');
      await page.fill('#f-lastName', 'First');
      await page.fill('#f-displayName', 'clicker');
      // the mistake typed last: leaving its field is the click itself
      await page.fill('#f-emailAddress', 'not-an-address');
      // the address field has the focus; the button where it is now
      expect(await focused(page)).toBe('f-emailAddress');
      expect(await page.evaluate('window.scrollY')).toBe(0);
      const before = await page.locator('button[type=submit]').boundingBox();
      // near its top edge: a button pushed down by as little as a line is no longer under the pointer when it is released
      await page.mouse.click(before!.x + before!.width / 2, before!.y + 4);
      // the click reached the button: the browser's check ran on submit, and took the person to the field at fault
      expect(await page.textContent('#f-emailAddress-error')).toMatch(/valid email address/);
      expect(await focused(page)).toBe('f-emailAddress');
    } finally {
      await page.close();
    }
  });

  it('a new application\'s registration (the shipped standard flow) asks for an email and a password, names optional, and fits one phone screen', async () => {
    const fresh = await createApp(t.runtime, 'fresh', SHIPPED_FLOWS);
    const host = `fresh.localhost:${new URL(base).port}`;
    const owner = basic(fresh.clients.owner.client_id, fresh.clients.owner.client_secret);
    expect((await request(t.app).post('/settings/set').set('Host', host).set('Authorization', owner).type('form')
      .send({ for_client_id: fresh.clients.login.client_id, key: 'redirect_uris', value: callback })).body.stat).toBe('ok');
    const page = await browser.newPage({ viewport: VIEWPORTS.phone });
    try {
      await page.goto(`http://${host}/register?${new URLSearchParams({ client_id: fresh.clients.login.client_id, redirect_uri: callback, state: 's', locale: 'en-US' })}`);
      const fields = await page.evaluate(`[...document.querySelectorAll('main form input:not([type=hidden])')].map((i) => [i.name, i.required])`);
      expect(fields).toEqual([['emailAddress', true], ['newPassword', true], ['firstName', false], ['lastName', false]]);
      const height = await page.evaluate('document.documentElement.scrollHeight') as number;
      expect(height).toBeLessThanOrEqual(VIEWPORTS.phone.height);
      await screenshots(page, SHOTS, 'register-new-application');
    } finally {
      await page.close();
    }
  });

  it('no page scrolls sideways on a phone (390 px wide)', async () => {
    await registered('narrow@example.test');
    const owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
    const narrow = (await record('narrow@example.test'))!;
    const verification = await request(t.app).post('/access/getVerificationCode').set('Authorization', owner).type('form')
      .send({ type_name: 'user', id: String(narrow.id), attribute_name: 'emailVerified' });
    expect(verification.body.stat).toBe('ok');
    expect((await request(t.app).post('/oauth/forgot_password_native').type('form').send({
      client_id: t.local.clients.login.client_id, locale: 'en-US', redirect_uri: `${base}/reset-password`, signInEmailAddress: 'narrow@example.test',
    })).body.stat).toBe('ok');
    const reset = linkIn(await mailTo('narrow@example.test', /password/i));
    const pages = [
      `${base}/signin?${entry()}`, `${base}/register?${entry()}`, `${base}/signin?${entry({ view: 'forgot' })}`, reset,
      `${base}/verify-email?verification_code=${verification.body.verification_code}`, `${base}/verify-email?verification_code=${'0'.repeat(40)}`,
      `${base}/signin?client_id=nobody`,
    ];
    const page = await browser.newPage({ viewport: VIEWPORTS.phone });
    try {
      for (const url of pages) {
        await page.goto(url);
        const widths = await page.evaluate('[document.documentElement.scrollWidth, document.documentElement.clientWidth]') as number[];
        expect({ url, scrollWidth: widths[0] }).toEqual({ url, scrollWidth: widths[1] });
      }
    } finally {
      await page.close();
    }
  });
});
