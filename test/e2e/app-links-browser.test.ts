import fs from 'node:fs';
import http from 'node:http';
import type { Browser } from 'playwright-core';
import request from 'supertest';
import { createHttpServer } from '../../src/http-server';
import { createLogger } from '../../src/logger';
import { basic, FLOWS, skipUnless, startTestApp, type TestApp, createApp } from '../helpers/backend';
import { freePort } from '../helpers/processes';
import { startSmtp, waitFor } from '../helpers/smtp';
import { CHROMIUM, launchChromium } from '../helpers/browser';

// The emails of an application other than the default one link to that application's own host
// (`conf.localhost:PORT`): opened in a browser, the link reaches the application that sent it.

skipUnless(fs.existsSync(CHROMIUM), `the browser test needs Chromium at ${CHROMIUM} (apt-get install chromium)`)("each application's emailed links, in a real browser", () => {
  let t: TestApp;
  let smtp: Awaited<ReturnType<typeof startSmtp>>;
  let gatehouse: http.Server;
  let browser: Browser;
  let base: string;
  let port: number;

  beforeAll(async () => {
    smtp = await startSmtp();
    port = await freePort();
    base = `http://localhost:${port}`;
    t = await startTestApp({
      env: { MAIL_TRANSPORT: 'smtp', SMTP_URL: `smtp://127.0.0.1:${smtp.port}`, MAIL_FROM: 'Gatehouse <no-reply@gatehouse.test>', PUBLIC_BASE_URL: base },
    });
    gatehouse = createHttpServer(t.app, t.runtime.config.http, createLogger('silent'));
    await new Promise<void>((resolve) => gatehouse.listen(port, '127.0.0.1', resolve));
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    if (gatehouse) await new Promise<void>((resolve) => gatehouse.close(() => resolve()));
    await smtp?.close();
    await t?.close();
  });

  const mailTo = (to: string, subject: RegExp) => waitFor(() => smtp.mails.find((m) => JSON.stringify(m.to).includes(to) && subject.test(m.subject ?? '')));
  const linkIn = (text: string) => text.match(/https?:\/\/\S+/)![0];

  /** An application as `gatehouse apps:create NAME` makes it, reached through its own host. */
  async function application(name: string) {
    const created = await createApp(t.runtime, name, FLOWS);
    const host = `${name}.localhost:${port}`;
    const login = created.clients.login;
    const owner = basic(created.clients.owner.client_id, created.clients.owner.client_secret);
    const post = (p: string, body: Record<string, string>, headers: Record<string, string> = {}) =>
      request(t.app).post(p).set('Host', host).set(headers).type('form').send(body);
    const settings = async () => (await request(t.app).get('/settings/items').set('Host', host).set('Authorization', owner).query({ for_client_id: login.client_id })).body.result;
    const register = (email: string) => post('/oauth/register_native_traditional', {
      client_id: login.client_id, locale: 'en-US', emailAddress: email, newPassword: 'correct horse battery', newPasswordConfirm: 'correct horse battery',
      firstName: 'Ada', lastName: 'Lovelace', displayName: 'ada',
    });
    const signIn = async (email: string, password: string) => (await post('/oauth/auth_native_traditional', {
      client_id: login.client_id, locale: 'en-US', signInEmailAddress: email, currentPassword: password,
    })).body;
    return { host, login, owner, post, settings, register, signIn };
  }

  it('a new application gets links on its own host, and its reset email leads to its own reset page', async () => {
    const conf = await application('conf');
    const settings = await conf.settings();
    expect(settings.password_recover_url).toBe(`http://conf.localhost:${port}/reset-password`);
    expect(settings.verify_email_url).toBe(`http://conf.localhost:${port}/verify-email`);
    expect((await conf.register('conf-user@example.com')).body.stat).toBe('ok');
    const welcome = await mailTo('conf-user@example.com', /Welcome/);
    expect(linkIn(welcome.text!)).toMatch(new RegExp(`^http://conf\\.localhost:${port}/verify-email\\?verification_code=`));

    expect((await conf.post('/oauth/forgot_password_native', {
      client_id: conf.login.client_id, locale: 'en-US', redirect_uri: settings.password_recover_url, signInEmailAddress: 'conf-user@example.com',
    })).body).toEqual({ stat: 'ok' });
    const mail = await mailTo('conf-user@example.com', /password/i);
    const page = await browser.newPage();
    await page.goto(linkIn(mail.text!));
    expect(new URL(page.url()).host).toBe(`conf.localhost:${port}`);
    await page.fill('#f-newPassword', 'battery staple horse');
    await page.fill('#f-newPasswordConfirm', 'battery staple horse');
    await Promise.all([page.waitForLoadState(), page.click('button[type=submit]')]);
    await page.waitForSelector('text=Your password is changed');
    await page.close();
    expect((await conf.signIn('conf-user@example.com', 'battery staple horse')).stat).toBe('ok');
  });

  it('an application made before each had its own links (settings on the bare host) still mails links to its own host', async () => {
    const legacy = await application('legacy');
    const bare = `${base}/reset-password`;
    expect((await legacy.post('/settings/set', { for_client_id: legacy.login.client_id, key: 'password_recover_url', value: bare }, { Authorization: legacy.owner })).body.stat).toBe('ok');
    expect((await legacy.post('/settings/set', { for_client_id: legacy.login.client_id, key: 'verify_email_url', value: `${base}/verify-email` }, { Authorization: legacy.owner })).body.stat).toBe('ok');
    expect((await legacy.register('legacy-user@example.com')).body.stat).toBe('ok');
    expect(linkIn((await mailTo('legacy-user@example.com', /Welcome/)).text!)).toMatch(new RegExp(`^http://legacy\\.localhost:${port}/verify-email\\?`));
    // the original clients send the setting as it is stored as redirect_uri
    expect((await legacy.post('/oauth/forgot_password_native', {
      client_id: legacy.login.client_id, locale: 'en-US', redirect_uri: bare, signInEmailAddress: 'legacy-user@example.com',
    })).body).toEqual({ stat: 'ok' });
    const link = linkIn((await mailTo('legacy-user@example.com', /password/i)).text!);
    expect(link).toMatch(new RegExp(`^http://legacy\\.localhost:${port}/reset-password\\?code=`));
    const page = await browser.newPage();
    await page.goto(link);
    await page.waitForSelector('#f-newPassword');
    await page.close();
  });

  it("the undo link of a changed address opens on the application's host and puts the address back", async () => {
    const conf = await application('undo');
    expect((await conf.register('undo-user@example.com')).body.stat).toBe('ok');
    // a verified address: the user's own, which gets the undo link
    const welcome = await mailTo('undo-user@example.com', /Welcome/);
    const code = new URL(linkIn(welcome.text!)).searchParams.get('verification_code')!;
    expect((await request(t.app).get('/access/useVerificationCode').set('Host', conf.host).query({ verification_code: code })).body.stat).toBe('ok');
    const { access_token: token } = await conf.signIn('undo-user@example.com', 'correct horse battery');
    expect((await conf.post('/oauth/update_profile_native', {
      client_id: conf.login.client_id, locale: 'en-US', access_token: token, form: 'editProfileForm',
      emailAddress: 'attacker@example.com', firstName: 'Ada', lastName: 'Lovelace', displayName: 'ada',
    })).body).toEqual({ stat: 'ok' });
    const notice = await mailTo('undo-user@example.com', /was changed/);
    const page = await browser.newPage();
    await page.goto(linkIn(notice.text!));
    expect(new URL(page.url()).host).toBe(`undo.localhost:${port}`);
    await Promise.all([page.waitForLoadState(), page.click('button[type=submit]')]);
    await page.waitForSelector('text=is your account');
    await page.close();
    expect((await conf.signIn('undo-user@example.com', 'correct horse battery')).stat).toBe('ok');
    expect((await request(t.app).get('/entity').set('Host', conf.host).query({ access_token: token })).body.code).toBe(413);
  });
});
