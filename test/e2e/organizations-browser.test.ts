import fs from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import request from 'supertest';
import { basic, skipUnless, type TestApp } from '../helpers/backend';
import { CHROMIUM, launchChromium, servedTestApp, VIEWPORTS } from '../helpers/browser';
import { mailsTo } from '../helpers/mail-files';

// Organizations' invitations in headless Chromium (docs/organizations.md#invitations): an admin
// invites a colleague from the account page; the colleague, who has no account, registers from the
// invitation's link and joins with the role given; a second invitation, to another organization, is
// accepted by that existing account through the hosted sign-in; the account page lists both.

const PASSWORD = 'correct horse battery';

skipUnless(fs.existsSync(CHROMIUM), `the browser test needs Chromium at ${CHROMIUM} (apt-get install chromium)`)('organizations in a real browser', () => {
  let t: TestApp;
  let served: Awaited<ReturnType<typeof servedTestApp>>;
  let browser: Browser;
  let base: string;
  let owner: string;
  const admin = (path: string, body: Record<string, string>) => request(t.app).post(path).set('Authorization', owner).type('form').send(body);

  beforeAll(async () => {
    served = await servedTestApp({ env: { LOGIN_LIMIT_ADDRESS: '10000/900' } });
    ({ t, base } = served);
    owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await served?.close();
  });

  async function account(email: string) {
    const created = await admin('/entity.create', { type_name: 'user', attributes: JSON.stringify({ email, password: PASSWORD, givenName: 'Ada', familyName: 'Lovelace' }) });
    expect(created.body.stat).toBe('ok');
    return (await admin('/entity', { type_name: 'user', id: String(created.body.id) })).body.result.uuid as string;
  }

  async function signIn(page: Page, email: string): Promise<void> {
    await page.fill('#f-signInEmailAddress', email);
    await page.fill('#f-currentPassword', PASSWORD);
    await page.keyboard.press('Enter');
  }

  async function invitationLink(to: string, count: number): Promise<string> {
    const invitations = async () => (await mailsTo(t.runtime, to)).filter((m) => /invited you/.test(m.subject ?? ''));
    let mails = await invitations();
    for (let i = 0; i < 50 && mails.length < count; i++) {
      await new Promise((r) => setTimeout(r, 100));
      mails = await invitations();
    }
    expect(mails).toHaveLength(count);
    return mails[count - 1].text!.match(/https?:\/\/\S+/)![0];
  }

  it('an admin invites from the account page; the colleague registers from the link and joins; a second invitation is accepted by signing in; the page lists both', async () => {
    const ada = `ada-${Date.now()}@acme.example`;
    const adaUuid = await account(ada);
    const acme = (await admin('/organizations/create', { name: 'Acme Corporation', slug: `acme-${Date.now()}` })).body.id as string;
    expect((await admin('/organizations/members/add', { organization_id: acme, uuid: adaUuid, roles: 'admin' })).body.stat).toBe('ok');
    await admin('/organizations/roles/define', { name: 'billing', permissions: 'read:invoices' });

    // the admin, on the account page: the organization, and its invite form (no owner role offered to an admin)
    const adminPage = await browser.newPage({ viewport: VIEWPORTS.desktop });
    await adminPage.goto(`${base}/account`);
    await adminPage.waitForURL(/\/signin\?/);
    await signIn(adminPage, ada);
    await adminPage.waitForURL(/\/account/);
    expect(await adminPage.textContent('#h-organizations + ul')).toContain('Acme Corporation');
    const roleSelect = `#invite-${acme}-role`;
    expect(await adminPage.locator(`${roleSelect} option`).evaluateAll((o) => o.map((x) => x.getAttribute('value')))).toEqual(['admin', 'member', 'billing']);
    const grace = `grace-${Date.now()}@partner.example`;
    await adminPage.fill(`#invite-${acme}-email`, grace);
    await adminPage.selectOption(roleSelect, 'billing');
    await Promise.all([adminPage.waitForURL(/done=organizationInvited/), adminPage.click(`form:has(${roleSelect}) button`)]);
    await adminPage.close();

    // the colleague has no account: from the link, to registration (the address typed in), back to join
    const colleague = await browser.newContext({ viewport: VIEWPORTS.phone });
    const page = await colleague.newPage();
    await page.goto(await invitationLink(grace, 1));
    expect(await page.textContent('h1')).toBe('Join Acme Corporation');
    expect(await page.textContent('main')).toContain(grace);
    await Promise.all([page.waitForURL(/\/register\?/), page.click(`text=Create an account with ${grace}`)]);
    expect(await page.inputValue('#f-emailAddress')).toBe(grace);
    await page.fill('#f-newPassword', PASSWORD);
    await page.fill('#f-newPasswordConfirm', PASSWORD);
    await page.fill('#f-firstName', 'Grace');
    await page.fill('#f-lastName', 'Hopper');
    await page.fill('#f-displayName', 'grace');
    await Promise.all([page.waitForURL(/\/invitation\?/), page.click('form button[type=submit]')]);
    await Promise.all([page.waitForURL(/done=organizationJoined/), page.click('button:has-text("Join Acme Corporation")')]);
    const section = async () => page.textContent('#h-organizations + ul');
    expect(await section()).toContain('Acme Corporation');
    expect(await section()).toContain('Your roles: billing');
    const graceRecord = (await admin('/entity', { type_name: 'user', key_attribute: 'email', key_value: JSON.stringify(grace) })).body.result;
    expect(graceRecord.emailVerified).not.toBeNull(); // the link proved the address
    expect((await admin('/organizations/members/list', { organization_id: acme })).body.results)
      .toEqual(expect.arrayContaining([expect.objectContaining({ user_id: graceRecord.uuid, roles: ['billing'], joined_by: 'invitation' })]));
    await colleague.close();

    // a second invitation, to another organization, accepted by the existing account through the hosted sign-in
    const globex = (await admin('/organizations/create', { name: 'Globex', slug: `globex-${Date.now()}` })).body.id as string;
    expect((await admin('/organizations/invitations/create', { organization_id: globex, email: grace, roles: 'member', locale: 'en-US' })).body.stat).toBe('ok');
    const again = await browser.newContext({ viewport: VIEWPORTS.desktop });
    const second = await again.newPage();
    await second.goto(await invitationLink(grace, 2));
    expect(await second.textContent('h1')).toBe('Join Globex');
    await Promise.all([second.waitForURL(/\/signin\?/), second.click('text=Sign in to accept')]);
    expect(await second.inputValue('#f-signInEmailAddress')).toBe(grace);
    await second.fill('#f-currentPassword', PASSWORD);
    await Promise.all([second.waitForURL(/\/invitation\?/), second.keyboard.press('Enter')]);
    await Promise.all([second.waitForURL(/done=organizationJoined/), second.click('button:has-text("Join Globex")')]);
    const both = await second.textContent('#h-organizations + ul');
    expect(both).toContain('Acme Corporation');
    expect(both).toContain('Globex');
    // the link is spent
    await second.goto(await invitationLink(grace, 2));
    expect(await second.textContent('main')).toContain('accepted already');
    // no sideways scroll on a phone
    await second.setViewportSize(VIEWPORTS.phone);
    await second.goto(`${base}/account`);
    const [scroll, width] = await second.evaluate('[document.documentElement.scrollWidth, document.documentElement.clientWidth]') as number[];
    expect(scroll).toBeLessThanOrEqual(width);
    await again.close();
  });
});
