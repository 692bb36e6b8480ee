import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import request from 'supertest';
import { createHttpServer } from '../../src/http-server';
import { createLogger } from '../../src/logger';
import { basic, skipUnless, startTestApp, type TestApp } from '../helpers/backend';
import { freePort, ROOT } from '../helpers/processes';
import { startOidcProvider } from '../helpers/social';
import { CHROMIUM, launchChromium } from '../helpers/browser';

/**
 * A small app of the kind that uses Gatehouse: a page with a sign-in link, and the token_url that
 * receives the social token and completes the sign-in at /oauth/auth_native.
 */
function startTestAppServer(gatehouse: string, loginId: string, port: number): http.Server {
  return http.createServer(async (req, res) => {
    const html = (body: string) => res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<!doctype html><html><body>${body}</body></html>`);
    if (req.method === 'GET' && req.url === '/') {
      const start = `${gatehouse}/social/testidp/start?${new URLSearchParams({ token_url: `http://127.0.0.1:${port}/token` })}`;
      return html(`<h1>Test app</h1><a id="signin" href="${start.replace(/&/g, '&amp;')}">Sign in with Test IdP</a>`);
    }
    if (req.method === 'POST' && req.url === '/token') {
      let body = '';
      for await (const chunk of req) body += chunk;
      const token = new URLSearchParams(body).get('token') ?? '';
      const answer = await (await fetch(`${gatehouse}/oauth/auth_native`, {
        method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ client_id: loginId, locale: 'en-US', redirect_uri: `http://127.0.0.1:${port}/done`, token, thin_registration: 'true' }),
      })).json() as { stat: string; capture_user?: { email: string; profiles: { provider: string }[] } };
      return html(answer.stat === 'ok'
        ? `<p id="result">Signed in as ${answer.capture_user!.email} with ${answer.capture_user!.profiles.map((p) => p.provider).join(', ')}</p>`
        : `<p id="result">Failed: ${JSON.stringify(answer)}</p>`);
    }
    res.writeHead(404).end();
  });
}

skipUnless(fs.existsSync(CHROMIUM), `the browser test needs Chromium at ${CHROMIUM} (apt-get install chromium)`)('social sign-in in a real browser', () => {
  let t: TestApp;
  let gatehouse: http.Server;
  let app: http.Server;
  let provider: Awaited<ReturnType<typeof startOidcProvider>>;
  let browser: Browser;
  let base: string;
  let appBase: string;

  beforeAll(async () => {
    t = await startTestApp();
    const [port, appPort] = [await freePort(), await freePort()];
    base = `http://127.0.0.1:${port}`;
    appBase = `http://127.0.0.1:${appPort}`;
    gatehouse = createHttpServer(t.app, t.runtime.config.http, createLogger('silent'));
    await new Promise<void>((resolve) => gatehouse.listen(port, '127.0.0.1', resolve));
    provider = await startOidcProvider([`${base}/social/testidp/callback`]);
    const owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
    const admin = (p: string, body: Record<string, string>) => request(t.app).post(p).set('Authorization', owner).type('form').send(body);
    await admin('/providers/add', { name: 'testidp', issuer: provider.issuer, provider_client_id: 'gatehouse', provider_client_secret: 'provider-secret' });
    await admin('/settings/set', { for_client_id: t.local.clients.login.client_id, key: 'social_token_urls', value: `${appBase}/token` });
    app = startTestAppServer(base, t.local.clients.login.client_id, appPort);
    await new Promise<void>((resolve) => app.listen(appPort, '127.0.0.1', resolve));
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await provider?.stop();
    await new Promise<void>((resolve) => app.close(() => resolve()));
    await new Promise<void>((resolve) => gatehouse.close(() => resolve()));
    await t.close();
  });

  it('link → provider login and consent → token posted to the app → auth_native → a record with the identity in profiles', async () => {
    const page = await browser.newPage();
    await page.goto(appBase);
    await page.click('#signin');
    await page.waitForURL(/\/interaction\//);
    await page.fill('input[name=login]', 'grace');
    await page.fill('input[name=password]', 'anything');
    await page.click('button[type=submit]');
    await page.waitForURL(/\/interaction\//);
    await page.click('button[type=submit]'); // consent
    await page.waitForURL(`${appBase}/token`);
    expect(await page.textContent('#result')).toBe('Signed in as grace@example.test with testidp');
    const local = (await t.runtime.db.applications.findByName('local'))!;
    const record = await t.runtime.db.records.find(local.id, { email: 'grace@example.test' });
    expect(record).toBeDefined();
    expect(await t.runtime.db.social.profiles.forEntity(record!.applicationId, record!.id)).toHaveLength(1);
    await page.close();
  });

  it('the provider picker, in each locale (screenshots for the docs with SCREENSHOTS=1)', async () => {
    const page = await browser.newPage({ viewport: { width: 480, height: 320 } });
    for (const locale of ['en-US', 'fr-FR', 'de-DE', 'es-ES']) {
      await page.goto(`${base}/social/signin?${new URLSearchParams({ token_url: `${appBase}/token`, locale })}`);
      expect(await page.locator('a.button').count()).toBe(1);
      if (process.env.SCREENSHOTS === '1') await page.screenshot({ path: path.join(ROOT, 'docs/social', `picker-${locale}.png`) });
    }
    // keyboard only: Tab reaches the provider link, Enter follows it to the provider
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.waitForURL(/\/interaction\//);
    await page.close();
  });
});
