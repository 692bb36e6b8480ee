import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import request from 'supertest';
import { projectRoot } from '../../src/paths';
import { basic, skipUnless } from '../helpers/backend';
import { freePort } from '../helpers/processes';
import { CHROMIUM, launchChromium, screenshots, servedTestApp, VIEWPORTS } from '../helpers/browser';
import { openidClient } from '../helpers/openid-client';

// The OpenID provider in a real browser (Debian's Chromium): an app written with openid-client
// sends the browser to the authorization endpoint in French (ui_locales), the person signs in on
// the hosted page, the browser lands on the app's callback, and openid-client checks the ID token;
// then the app's logout asks the person in the same language and sends the browser back.

const PASSWORD = 'correct horse battery';
const oidc = openidClient();

skipUnless(fs.existsSync(CHROMIUM), `the browser test needs Chromium at ${CHROMIUM} (apt-get install chromium)`)('the OpenID provider in a real browser', () => {
  let served: Awaited<ReturnType<typeof servedTestApp>>;
  let browser: Browser;
  let appServer: http.Server;
  let callback: string;
  let signedOut: string;

  beforeAll(async () => {
    served = await servedTestApp({ env: { LOGIN_LIMIT_ADDRESS: '10000/900' } });
    const appPort = await freePort();
    callback = `http://127.0.0.1:${appPort}/callback`;
    signedOut = `http://127.0.0.1:${appPort}/signed-out`;
    // the app: any page it is sent to says so
    appServer = http.createServer((req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(`<p id="app">${req.url?.split('?')[0]}</p>`));
    await new Promise<void>((resolve) => appServer.listen(appPort, '127.0.0.1', resolve));
    const { owner, login } = served.t.local.clients;
    for (const [key, value] of [['redirect_uris', callback], ['post_logout_redirect_uris', signedOut]]) {
      const set = await request(served.t.app).post('/settings/set').set('Authorization', basic(owner.client_id, owner.client_secret)).type('form')
        .send({ for_client_id: login.client_id, key, value });
      expect(set.body.stat).toBe('ok');
    }
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    if (appServer) await new Promise<void>((resolve) => appServer.close(() => resolve()));
    await served?.close();
  });

  it('the code flow with PKCE in French, the ID token checked by openid-client, then the app\'s logout asked and done', async () => {
    const { owner, login } = served.t.local.clients;
    const email = `browser-${Date.now()}@example.com`;
    const created = await request(served.t.app).post('/entity.create').set('Authorization', basic(owner.client_id, owner.client_secret)).type('form')
      .send({ type_name: 'user', attributes: JSON.stringify({ email, password: PASSWORD, givenName: 'Ada' }) });
    expect(created.body.stat).toBe('ok');
    // settings reach the provider within 5 seconds
    await new Promise((r) => setTimeout(r, 5_100));
    const config = await oidc.discovery(new URL(served.base), login.client_id, login.client_secret, undefined, { execute: [oidc.allowInsecureRequests] });
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: callback, scope: 'openid email profile', state, nonce, ui_locales: 'fr-FR',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256',
    });
    const context = await browser.newContext({ viewport: VIEWPORTS.desktop });
    const page = await context.newPage();
    try {
      await page.goto(url.toString());
      await page.waitForURL(/\/signin\?/);
      expect(await page.getAttribute('html', 'lang')).toBe('fr');
      await page.fill('#f-signInEmailAddress', email);
      await page.fill('#f-currentPassword', PASSWORD);
      await Promise.all([page.waitForURL((u) => u.toString().startsWith(callback)), page.keyboard.press('Enter')]);
      const back = new URL(page.url());
      expect(back.searchParams.get('state')).toBe(state);
      const tokens = await oidc.authorizationCodeGrant(config, back, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce });
      expect(tokens.claims()).toMatchObject({ iss: served.base, aud: login.client_id, amr: ['pwd'] });
      expect((await oidc.fetchUserInfo(config, tokens.access_token, tokens.claims()!.sub)).email).toBe(email);

      // the app's logout: a question in French, in the application's look
      await page.goto(oidc.buildEndSessionUrl(config, { id_token_hint: tokens.id_token!, post_logout_redirect_uri: signedOut, state: 'bye', ui_locales: 'fr-FR' }).toString());
      expect(await page.textContent('main')).toContain('Voulez-vous vous déconnecter');
      await screenshots(page, path.join(projectRoot(), 'docs/pages'), 'oidc-logout', { desktop: VIEWPORTS.desktop });
      await Promise.all([page.waitForURL((u) => u.toString().startsWith(signedOut)), page.click('button[name="logout"]')]);
      expect(new URL(page.url()).searchParams.get('state')).toBe('bye');
      // signed out: the next sign-in asks again
      await page.goto(oidc.buildAuthorizationUrl(config, {
        redirect_uri: callback, scope: 'openid', state: 'again', code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256',
      }).toString());
      await page.waitForURL(/\/signin\?/);
    } finally {
      await context.close();
    }
  });

  it('switching accounts: X signed in, Y signs in with prompt=login in the same browser, the app gets a code for Y; "stay signed in" keeps Y signed in', async () => {
    const { owner, login } = served.t.local.clients;
    const [x, y] = [`x-${Date.now()}@example.com`, `y-${Date.now()}@example.com`];
    for (const email of [x, y]) {
      const created = await request(served.t.app).post('/entity.create').set('Authorization', basic(owner.client_id, owner.client_secret)).type('form')
        .send({ type_name: 'user', attributes: JSON.stringify({ email, password: PASSWORD }) });
      expect(created.body.stat).toBe('ok');
    }
    const config = await oidc.discovery(new URL(served.base), login.client_id, login.client_secret, undefined, { execute: [oidc.allowInsecureRequests] });
    const context = await browser.newContext({ viewport: VIEWPORTS.desktop });
    const page = await context.newPage();
    /** A sign-in through the provider as `email` (asked or not): who the app was told signed in (userinfo). */
    const signIn = async (email: string, extra: Record<string, string>) => {
      const verifier = oidc.randomPKCECodeVerifier();
      const state = oidc.randomState();
      await page.goto(oidc.buildAuthorizationUrl(config, {
        redirect_uri: callback, scope: 'openid email', state, code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', ...extra,
      }).toString());
      if (new URL(page.url()).pathname === '/signin') {
        await page.fill('#f-signInEmailAddress', email);
        await page.fill('#f-currentPassword', PASSWORD);
        await page.keyboard.press('Enter');
      }
      await page.waitForURL((u) => u.toString().startsWith(callback));
      const back = new URL(page.url());
      expect(back.searchParams.get('error')).toBeNull();
      const tokens = await oidc.authorizationCodeGrant(config, back, { pkceCodeVerifier: verifier, expectedState: state });
      return oidc.fetchUserInfo(config, tokens.access_token, tokens.claims()!.sub);
    };
    try {
      const first = await signIn(x, {});
      expect(first.email).toBe(x);
      const switched = await signIn(y, { prompt: 'login' });
      expect(switched.email).toBe(y);
      // the browser's session is Y's now: a silent sign-in is Y's
      expect((await signIn(y, { prompt: 'none' })).email).toBe(y);
      // the app's logout, declined: still Y
      const hint = oidc.buildEndSessionUrl(config, { post_logout_redirect_uri: signedOut, state: 'no', client_id: login.client_id });
      await page.goto(hint.toString());
      await Promise.all([page.waitForURL((u) => u.toString().startsWith(signedOut)), page.click('a.button.secondary')]);
      expect(new URL(page.url()).searchParams.get('state')).toBe('no');
      expect((await signIn(y, { prompt: 'none' })).email).toBe(y);
    } finally {
      await context.close();
    }
  });
});
