import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import request from 'supertest';
import { createHttpServer } from '../../src/http-server';
import { createLogger } from '../../src/logger';
import { basic, skipUnless, startTestApp, type TestApp } from '../helpers/backend';
import { freePort, ROOT } from '../helpers/processes';
import { CHROMIUM, launchChromium, screenshots, startRelyingApp, VIEWPORTS } from '../helpers/browser';

// The proof-of-work widget on the hosted pages in Chromium (docs/proof-of-work.md): served by
// Gatehouse under the pages' strict Content-Security-Policy, it solves the challenge the page
// rendered, and the registration it guards succeeds; without the widget's solution, the page says why.

/** Waits until the widget has put its solution in the form (it solves as the page loads). */
async function solvedIn(page: Page): Promise<void> {
  const until = Date.now() + 30_000;
  while (Date.now() < until) {
    if ((await page.locator('input[name=altcha]').count()) > 0 && (await page.inputValue('input[name=altcha]')).length > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('the widget did not solve its challenge within 30 s');
}

skipUnless(fs.existsSync(CHROMIUM), `the browser test needs Chromium at ${CHROMIUM} (apt-get install chromium)`)('the proof-of-work widget in a real browser', () => {
  let t: TestApp;
  let gatehouse: http.Server;
  let relying: http.Server;
  let browser: Browser;
  let base: string;
  let entry: (extra?: Record<string, string>) => string;

  beforeAll(async () => {
    const [port, appPort] = [await freePort(), await freePort()];
    base = `http://127.0.0.1:${port}`;
    const callback = `http://127.0.0.1:${appPort}/callback`;
    t = await startTestApp({ env: { PUBLIC_BASE_URL: base } });
    gatehouse = createHttpServer(t.app, t.runtime.config.http, createLogger('silent'));
    await new Promise<void>((resolve) => gatehouse.listen(port, '127.0.0.1', resolve));
    const login = t.local.clients.login;
    relying = startRelyingApp(base, { id: login.client_id, secret: login.client_secret }, appPort);
    await new Promise<void>((resolve) => relying.listen(appPort, '127.0.0.1', resolve));
    const owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
    for (const [key, value] of [['redirect_uris', callback], ['challenge', 'on'], ['challenge_difficulty', '300']]) {
      expect((await request(t.app).post('/settings/set').set('Authorization', owner).type('form').send({ for_client_id: login.client_id, key, value })).body.stat).toBe('ok');
    }
    entry = (extra = {}) => new URLSearchParams({ client_id: login.client_id, redirect_uri: callback, state: 'st-3', locale: 'en-US', ...extra }).toString();
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    for (const server of [relying, gatehouse]) if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
    await t?.close();
  });

  it('the widget solves the challenge in the browser, under the pages\' CSP, and the registration succeeds', async () => {
    const page = await browser.newPage({ viewport: VIEWPORTS.desktop });
    const violations: string[] = [];
    page.on('console', (m) => { if (/Content Security Policy|Refused to/.test(m.text())) violations.push(m.text()); });
    await page.goto(`${base}/register?${entry()}`);
    // solved as the page loads: the widget's hidden field carries the payload
    await solvedIn(page);
    await screenshots(page, path.join(ROOT, 'docs/pages'), 'proof-of-work', VIEWPORTS);
    const payload = JSON.parse(Buffer.from(await page.inputValue('input[name=altcha]'), 'base64').toString('utf8'));
    expect(payload).toMatchObject({ challenge: { parameters: { algorithm: 'PBKDF2/SHA-256' } }, solution: { counter: expect.any(Number) } });
    for (const [id, value] of [['#f-emailAddress', 'solver@example.com'], ['#f-newPassword', 'correct horse battery'], ['#f-newPasswordConfirm', 'correct horse battery'],
      ['#f-firstName', 'Sol'], ['#f-lastName', 'Ver'], ['#f-displayName', 'solver']]) await page.fill(id, value);
    await Promise.all([page.waitForURL(/\/callback\?/), page.click('form[action="/register"] button[type=submit]')]);
    expect(await page.textContent('#result')).toBe('Signed in as solver@example.com');
    expect(violations).toEqual([]);
    await page.close();
  });

  it('the sign-in page in French: the widget in French; a post without its solution is refused with the page\'s words', async () => {
    const page = await browser.newPage({ viewport: VIEWPORTS.desktop });
    await page.goto(`${base}/signin?${entry({ locale: 'fr-FR' })}`);
    await solvedIn(page);
    expect(await page.getAttribute('altcha-widget', 'language')).toBe('fr-fr');
    // a script that posts the form without the widget's field
    await page.locator('input[name=altcha]').evaluate((input) => input.remove());
    await page.fill('#f-signInEmailAddress', 'solver@example.com');
    await page.fill('#f-currentPassword', 'correct horse battery');
    await Promise.all([page.waitForEvent('load'), page.locator('form[action="/signin"]').evaluate((form) => (form as unknown as { submit(): void }).submit())]);
    expect(await page.textContent('#form-notice')).toContain('Patientez un instant pendant que nous vérifions ce navigateur');
    await page.close();
  });
});
