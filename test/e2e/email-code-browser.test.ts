import fs from 'node:fs';
import path from 'node:path';
import type { ParsedMail } from 'mailparser';
import type { Browser } from 'playwright-core';
import request from 'supertest';
import { skipUnless, type TestApp } from '../helpers/backend';
import { ROOT } from '../helpers/processes';
import { waitFor } from '../helpers/smtp';
import { oathtool } from '../helpers/totp';
import { CHROMIUM, launchChromium, screenshots, servedForPages, VIEWPORTS } from '../helpers/browser';

// Sign-in by email code on the hosted pages in Chromium (docs/email-codes.md), the mail over a real
// SMTP conversation: the code typed, the link in the browser that asked and in another one, the
// registration of a new address, the second factor after a code, a wrong code in French.

const SHOTS = path.join(ROOT, 'docs/pages');
const PASSWORD = 'correct horse battery';

skipUnless(fs.existsSync(CHROMIUM), `the browser test needs Chromium at ${CHROMIUM} (apt-get install chromium)`)('sign-in by email code in a real browser', () => {
  let served: Awaited<ReturnType<typeof servedForPages>>;
  let t: TestApp;
  let browser: Browser;
  let base: string;
  let owner: string;
  let entry: (extra?: Record<string, string>) => string;

  beforeAll(async () => {
    served = await servedForPages();
    ({ t, base, owner } = served);
    const login = t.local.clients.login;
    for (const key of ['email_code_sign_in', 'email_code_registration']) {
      expect((await served.admin('/settings/set', { for_client_id: login.client_id, key, value: 'on' })).body.stat).toBe('ok');
    }
    entry = (extra = {}) => new URLSearchParams({ client_id: login.client_id, redirect_uri: served.callback, state: 'st-2', locale: 'en-US', ...extra }).toString();
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await served?.close();
  });

  const codeMails = (to: string) => served.smtp.mails.filter((m) => JSON.stringify(m.to).includes(to) && /sign-in code|code de connexion/.test(m.subject ?? ''));
  /** The code and link of the `n`th sign-in code mailed to `to`. */
  const mailed = async (to: string, n = 1): Promise<{ code: string; link: string; mail: ParsedMail }> => {
    const mail = await waitFor(() => codeMails(to)[n - 1]);
    return { code: /\n\s+(\d{6})\n/.exec(mail.text!)![1], link: /(https?:\/\/\S+\/signin\/email-code\/link\?\S+)/.exec(mail.text!)![1], mail };
  };
  const account = async (email: string) => {
    const created = await request(t.app).post('/entity.create').set('Authorization', owner).type('form')
      .send({ type_name: 'user', attributes: JSON.stringify({ email, password: PASSWORD, givenName: 'Ada' }) });
    expect(created.body.stat).toBe('ok');
  };

  it('the sign-in page offers it: the address, then the code from the email, then the app', async () => {
    await account('typed@example.com');
    const page = await browser.newPage({ viewport: VIEWPORTS.desktop });
    await page.goto(`${base}/signin?${entry()}`);
    await Promise.all([page.waitForURL(/\/signin\/email-code\?/), page.click('text=Email me a sign-in code')]);
    await screenshots(page, SHOTS, 'email-code', VIEWPORTS);
    await page.fill('#email', 'typed@example.com');
    await Promise.all([page.waitForLoadState(), page.click('button[type=submit]')]);
    await page.waitForSelector('#code');
    expect(await page.textContent('h1 + p')).toContain('If typed@example.com can sign in here, a 6-digit code is on its way');
    await screenshots(page, SHOTS, 'email-code-sent', VIEWPORTS);
    const { code, mail } = await mailed('typed@example.com');
    // one message: the code in its subject and body, and a link
    expect(mail.subject).toBe(`${code} is your Gatehouse sign-in code`);
    expect(mail.html).toContain(code);
    await page.fill('#code', `${code.slice(0, 3)}-${code.slice(3)}`);
    await Promise.all([page.waitForURL(/\/callback\?/), page.click('button[type=submit]')]);
    expect(await page.textContent('#result')).toBe('Signed in as typed@example.com');
    expect(await page.textContent('#state')).toBe('st-2');
    await page.close();
  });

  it('the link signs in in the browser that asked; a mail scanner\'s GET signs nobody in', async () => {
    await account('linked@example.com');
    const context = await browser.newContext({ viewport: VIEWPORTS.desktop });
    const page = await context.newPage();
    await page.goto(`${base}${'/signin/email-code'}?${entry({ login_hint: 'linked@example.com' })}`);
    expect(await page.inputValue('#email')).toBe('linked@example.com');
    await Promise.all([page.waitForLoadState(), page.click('button[type=submit]')]);
    await page.waitForSelector('#code');
    const { link } = await mailed('linked@example.com');
    // a scanner fetching the link (no cookie, GET only) gets a page with a button; nothing is spent
    const scanned = await fetch(link);
    expect(scanned.status).toBe(200);
    expect(await scanned.text()).toContain('<button type="submit">Continue</button>');
    const tab = await context.newPage();
    await tab.goto(link);
    await screenshots(tab, SHOTS, 'email-code-link', VIEWPORTS);
    await Promise.all([tab.waitForURL(/\/callback\?/), tab.click('button[type=submit]')]);
    expect(await tab.textContent('#result')).toBe('Signed in as linked@example.com');
    expect(await tab.textContent('#state')).toBe('st-2');
    await context.close();
  });

  it('opened in another browser, the link shows the code to type where it was asked for', async () => {
    await account('elsewhere@example.com');
    const asking = await browser.newContext({ viewport: VIEWPORTS.desktop });
    const page = await asking.newPage();
    await page.goto(`${base}/signin/email-code?${entry()}`);
    await page.fill('#email', 'elsewhere@example.com');
    await Promise.all([page.waitForLoadState(), page.click('button[type=submit]')]);
    await page.waitForSelector('#code');
    const { code, link } = await mailed('elsewhere@example.com');
    const other = await browser.newContext({ viewport: VIEWPORTS.phone });
    const phone = await other.newPage();
    await phone.goto(link);
    await Promise.all([phone.waitForLoadState(), phone.click('button[type=submit]')]);
    expect(await phone.textContent('#code')).toBe(`${code.slice(0, 3)} ${code.slice(3)}`);
    expect(phone.url()).not.toContain('/callback');
    await screenshots(phone, SHOTS, 'email-code-other-browser', VIEWPORTS);
    // typed where it was asked for, it signs in there
    await page.fill('#code', code);
    await Promise.all([page.waitForURL(/\/callback\?/), page.click('button[type=submit]')]);
    expect(await page.textContent('#result')).toBe('Signed in as elsewhere@example.com');
    await other.close();
    await asking.close();
  });

  it('a new address registers: the code, then the registration form\'s other fields', async () => {
    const page = await browser.newPage({ viewport: VIEWPORTS.desktop });
    await page.goto(`${base}/register?${entry()}`);
    await Promise.all([page.waitForURL(/\/signin\/email-code\?/), page.click('text=Email me a sign-in code')]);
    await page.fill('#email', 'newcomer@example.com');
    await Promise.all([page.waitForLoadState(), page.click('button[type=submit]')]);
    const { code } = await mailed('newcomer@example.com');
    await page.fill('#code', code);
    await Promise.all([page.waitForLoadState(), page.click('button[type=submit]')]);
    // the address is proven: no address or password fields, the flow's others
    await page.waitForSelector('#f-displayName');
    expect(await page.$('#f-emailAddress')).toBeNull();
    expect(await page.$('#f-newPassword')).toBeNull();
    expect(await page.textContent('h1 + p')).toContain('No account uses newcomer@example.com yet');
    await screenshots(page, SHOTS, 'email-code-register', VIEWPORTS);
    await page.fill('#f-firstName', 'New');
    await page.fill('#f-lastName', 'Comer');
    await page.fill('#f-displayName', 'newcomer');
    await Promise.all([page.waitForURL(/\/callback\?/), page.click('button[type=submit]')]);
    expect(await page.textContent('#result')).toBe('Signed in as newcomer@example.com');
    const local = (await t.runtime.db.applications.findByName('local'))!;
    const record = await t.runtime.db.records.find(local.id, { email: 'newcomer@example.com' });
    expect(record!.emailVerified).not.toBeNull();
    expect(record!.passwordHash).toBeNull();
    await page.close();
  });

  it('the second factor after a code, where the account has one; a wrong code says so in the page\'s language', async () => {
    await account('twostep@example.com');
    const login = t.local.clients.login.client_id;
    const signed = await request(t.app).post('/oauth/auth_native_traditional').type('form')
      .send({ client_id: login, locale: 'en-US', signInEmailAddress: 'twostep@example.com', currentPassword: PASSWORD });
    const enrolled = await request(t.app).post('/oauth/totp_enroll_native').type('form').send({ access_token: signed.body.access_token });
    const at = new Date();
    const confirmed = await request(t.app).post('/oauth/totp_confirm_native').type('form').send({ access_token: signed.body.access_token, code: oathtool(enrolled.body.secret, at) });
    expect(confirmed.body.stat).toBe('ok');

    const page = await browser.newPage({ viewport: VIEWPORTS.desktop });
    await page.goto(`${base}/signin/email-code?${entry({ locale: 'fr-FR' })}`);
    await page.fill('#email', 'twostep@example.com');
    await Promise.all([page.waitForLoadState(), page.click('button[type=submit]')]);
    const { code } = await mailed('twostep@example.com');
    await page.fill('#code', code === '000000' ? '111111' : '000000');
    await Promise.all([page.waitForLoadState(), page.click('button[type=submit]')]);
    expect(await page.textContent('#form-notice')).toContain('Ce code n’est pas celui que nous avons envoyé');
    await page.fill('#code', code);
    await Promise.all([page.waitForLoadState(), page.click('button[type=submit]')]);
    // the code step of the second factor (the authenticator's next step: the one used to confirm is spent)
    await page.waitForSelector('input[name=code][autocomplete=one-time-code]');
    expect(await page.$('input[name=recovery_code]')).not.toBeNull();
    await page.fill('input[name=code]', oathtool(enrolled.body.secret, new Date(Date.now() + 30_000)));
    await Promise.all([page.waitForURL(/\/callback\?/), page.click('form[action="/signin/code"] button[type=submit]')]);
    expect(await page.textContent('#result')).toBe('Signed in as twostep@example.com');
    await page.close();
  });
});
