import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { manualClock, skipUnless } from '../helpers/backend';
import { CHROMIUM, deviceWithPasskeys, launchChromium, screenshots, servedTestApp, VIEWPORTS } from '../helpers/browser';
import { oidcSignIn, PASSWORD } from '../helpers/oidc-sign-in';
import { ROOT } from '../helpers/processes';

// The device authorization grant in Chromium (docs/openid-connect.md#devices): openid-client 6 is the
// TV; the person types its code on the phone, signs in with a passkey (Chromium's virtual
// authenticator), confirms the device by name; the device's session is on the account page, and
// ending it there ends the device's tokens.

const SHOTS = path.join(ROOT, 'docs/pages');
const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
const clock = manualClock();

skipUnless(fs.existsSync(CHROMIUM), `the browser test needs Chromium at ${CHROMIUM} (apt-get install chromium)`)('a device signed in from a phone, in a real browser', () => {
  let served: Awaited<ReturnType<typeof servedTestApp>>;
  let s: ReturnType<typeof oidcSignIn>;
  let browser: Browser;

  beforeAll(async () => {
    served = await servedTestApp({ clock, env: { LOGIN_LIMIT_ADDRESS: '10000/900' } });
    s = oidcSignIn(served, clock);
    expect((await s.admin('/settings/set', { for_client_id: s.login.client_id, key: 'grant_types', value: `refresh_token ${DEVICE_GRANT}` })).body.stat).toBe('ok');
    clock.advance(5_100);
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await served?.close();
  });

  /** From /account through the hosted sign-in with the password, back to /account. */
  async function signInToAccount(page: Page, email: string): Promise<void> {
    await page.goto(`${served.base}/account`);
    await page.waitForURL(/\/signin\?/);
    await page.fill('#f-signInEmailAddress', email);
    await page.fill('#f-currentPassword', PASSWORD);
    await Promise.all([page.waitForURL(`${served.base}/account?locale=en-US`), page.click('form[action="/signin"] button[type=submit]')]);
  }

  it('the code typed on the phone, a passkey sign-in, the device confirmed by name; its session listed on the account page and ended there', async () => {
    const a = await s.account();
    const phone = await deviceWithPasskeys(browser, { viewport: VIEWPORTS.phone });
    // the TV stops polling when the test ends, whatever happened
    const stop = new AbortController();
    try {
      // the phone's passkey, added on the account page, then signed out
      await phone.page.addInitScript('PublicKeyCredential.isConditionalMediationAvailable = async () => false');
      await signInToAccount(phone.page, a.email);
      await Promise.all([phone.page.waitForURL(/done=passkeyAdded/), phone.page.click('#passkey-add-button')]);
      await Promise.all([phone.page.waitForURL(`${served.base}/account/signout`), phone.page.click('form[action="/account/signout"] button')]);

      // the TV asks
      const config = await s.discovered();
      const response = await s.oidc.initiateDeviceAuthorization(config, { scope: 'openid offline_access' });
      const polled = s.oidc.pollDeviceAuthorizationGrant(config, response, undefined, { signal: stop.signal });
      polled.catch(() => undefined);

      // the person types its code, in lower case
      await phone.page.goto(response.verification_uri);
      await screenshots(phone.page, SHOTS, 'device', VIEWPORTS);
      await phone.page.fill('#user_code', response.user_code.toLowerCase());
      await Promise.all([phone.page.waitForLoadState(), phone.page.click('button[type=submit]')]);
      // the device named, with its code; confirmed
      expect(await phone.page.textContent('h1')).toBe('Sign in local login client on your device?');
      expect(await phone.page.textContent('main')).toContain(`with the code ${response.user_code}`);
      await screenshots(phone.page, SHOTS, 'device-confirm', VIEWPORTS);
      await Promise.all([phone.page.waitForURL(/\/signin\?/), phone.page.click('button[name=confirm]')]);
      // signed in with the passkey
      await phone.page.waitForSelector('#passkey-button:not([hidden])');
      await Promise.all([phone.page.waitForSelector('text=Your device is signed in'), phone.page.click('#passkey-button')]);
      const tokens = await polled;
      expect(tokens.claims()).toMatchObject({ sub: a.uuid, amr: expect.arrayContaining(['hwk']) });

      // the account page (the passkey's sign-in is the phone's session there too) lists the device's session by its app;
      // ending it ends the device's tokens
      await phone.page.goto(`${served.base}/account`);
      expect(await phone.page.textContent('main')).toContain(`Signed in as ${a.email}`);
      const sessions = phone.page.locator('section[aria-labelledby="h-sessions"] li');
      const deviceSession = sessions.filter({ hasText: 'local login client' }).filter({ has: phone.page.locator('form[action="/account/sessions/end"]') });
      expect(await deviceSession.count()).toBeGreaterThanOrEqual(1);
      await Promise.all([phone.page.waitForURL(/done=sessionEnded/), deviceSession.first().locator('form[action="/account/sessions/end"] button').click()]);
      await expect(s.oidc.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
      await expect(s.oidc.fetchUserInfo(config, tokens.access_token, a.uuid)).rejects.toBeDefined();
    } finally {
      stop.abort();
      await phone.context.close();
    }
  }, 90_000);
});
