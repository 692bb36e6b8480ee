import dns from 'node:dns';
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type BrowserContextOptions, type Page } from 'playwright-core';
import { createHttpServer } from '../../src/http-server';
import { createLogger } from '../../src/logger';
import request from 'supertest';
import { basic, startTestApp } from './backend';
import { startSmtp } from './smtp';
import { freePort } from './processes';

/** Debian's Chromium (apt-get install chromium), or CHROMIUM_PATH. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Headless Chromium for the browser tests, quiet: no sandbox (root in CI), no GPU, no background traffic. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM, headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/** The browser tests' two sizes: a desktop window and a 390 px phone. */
export const VIEWPORTS = { desktop: { width: 1280, height: 900 }, phone: { width: 390, height: 844 } };

/**
 * With SCREENSHOTS=1, the page as it is now in `dir` at both sizes (`name-desktop.png`,
 * `name-phone.png`, the whole page), then back at the desktop size.
 */
export async function screenshots(page: Page, dir: string, name: string, sizes: Record<string, { width: number; height: number }> = VIEWPORTS): Promise<void> {
  if (process.env.SCREENSHOTS !== '1') return;
  fs.mkdirSync(dir, { recursive: true });
  for (const [kind, size] of Object.entries(sizes)) {
    await page.setViewportSize(size);
    await page.screenshot({ path: path.join(dir, `${name}-${kind}.png`), fullPage: true });
  }
  await page.setViewportSize(sizes.desktop);
}

/**
 * Makes every `*.localhost` name (an application's own host: `conf.localhost`) resolve to
 * 127.0.0.1 in this process, as browsers resolve them; answers how to undo it.
 */
export function resolveLocalhostNames(): () => void {
  const original = dns.lookup;
  const patched = ((host: string, ...rest: unknown[]) =>
    (original as (...a: unknown[]) => void)(host.endsWith('.localhost') ? '127.0.0.1' : host, ...rest)) as typeof dns.lookup;
  dns.lookup = patched;
  return () => {
    dns.lookup = original;
  };
}

/**
 * The test app served over HTTP on 127.0.0.1 (a browser opens it as `host`: localhost is a secure
 * context for WebAuthn), its public base URL that address; `close` stops the server and the app.
 */
export async function servedTestApp(options: Parameters<typeof startTestApp>[0] & { host?: 'localhost' | '127.0.0.1' } = {}) {
  const port = await freePort();
  const base = `http://${options.host ?? 'localhost'}:${port}`;
  const t = await startTestApp({ ...options, env: { PUBLIC_BASE_URL: base, ...options.env } });
  const server = createHttpServer(t.app, t.runtime.config.http, createLogger('silent'));
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    t, base, server,
    async close() {
      // a client's kept-alive connections (fetch's pool) would hold the close open
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
      await t.close();
    },
  };
}

/**
 * A browser of its own (its own cookies) with a virtual platform authenticator of the DevTools
 * protocol that verifies the person (CTAP2, internal transport, resident keys): a phone or a laptop
 * with a passkey. `options` are the context's (viewport, time zone).
 */
export async function deviceWithPasskeys(browser: Browser, options: BrowserContextOptions = {}): Promise<{ page: Page; context: BrowserContext }> {
  const context = await browser.newContext({ viewport: VIEWPORTS.desktop, ...options });
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
  });
  return { page, context };
}

/** Tab until the element `selector` has the focus (at most `presses`): what a keyboard user does. */
export async function tabTo(page: Page, selector: string, presses = 80): Promise<void> {
  for (let i = 0; i < presses; i++) {
    await page.keyboard.press('Tab');
    if (await page.evaluate(`document.activeElement ? document.activeElement.matches(${JSON.stringify(selector)}) : false`)) return;
  }
  throw new Error(`${selector} is not reachable with Tab`);
}

/**
 * The app that uses the hosted pages: its redirect_uri receives the code and state, its backend
 * exchanges the code at /oauth/token with the login client's secret and reads the record.
 */
export function startRelyingApp(gatehouse: string, client: { id: string; secret: string }, port: number): http.Server {
  return http.createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', `http://127.0.0.1:${port}`);
    if (url.pathname !== '/callback') return void res.writeHead(404).end();
    const auth = `Basic ${Buffer.from(`${client.id}:${client.secret}`).toString('base64')}`;
    const post = async (p: string, body: Record<string, string>, authorization: string) => (await fetch(gatehouse + p, {
      method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', authorization }, body: new URLSearchParams(body),
    })).json() as Promise<Record<string, any>>;
    const token = await post('/oauth/token', { grant_type: 'authorization_code', code: url.searchParams.get('code') ?? '', redirect_uri: `http://127.0.0.1:${port}/callback` }, auth);
    const me = token.access_token ? await post('/entity', {}, `OAuth ${token.access_token}`) : token;
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
      .end(`<!doctype html><p id="result">${me.stat === 'ok' ? `Signed in as ${me.result.email}` : `Failed: ${JSON.stringify(me)}`}</p><p id="state">${url.searchParams.get('state')}</p>`);
  });
}

/**
 * The hosted pages' setting of the browser tests: a test app served on a port of 127.0.0.1 whose
 * mail goes over SMTP to a local server (`smtp.mails`), and the app its login client sends people
 * back to (startRelyingApp, at `callback`, its redirect URI); `admin` calls as the owner. `close`
 * stops them all.
 */
export async function servedForPages() {
  const smtp = await startSmtp();
  const [port, appPort] = [await freePort(), await freePort()];
  const base = `http://127.0.0.1:${port}`;
  const callback = `http://127.0.0.1:${appPort}/callback`;
  const t = await startTestApp({
    env: { MAIL_TRANSPORT: 'smtp', SMTP_URL: `smtp://127.0.0.1:${smtp.port}`, MAIL_FROM: 'Gatehouse <no-reply@gatehouse.test>', PUBLIC_BASE_URL: base },
  });
  const gatehouse = createHttpServer(t.app, t.runtime.config.http, createLogger('silent'));
  await new Promise<void>((resolve) => gatehouse.listen(port, '127.0.0.1', resolve));
  const login = t.local.clients.login;
  const relying = startRelyingApp(base, { id: login.client_id, secret: login.client_secret }, appPort);
  await new Promise<void>((resolve) => relying.listen(appPort, '127.0.0.1', resolve));
  const owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
  const admin = (p: string, body: Record<string, string>) => request(t.app).post(p).set('Authorization', owner).type('form').send(body);
  const set = await admin('/settings/set', { for_client_id: login.client_id, key: 'redirect_uris', value: callback });
  if (set.body.stat !== 'ok') throw new Error(JSON.stringify(set.body));
  return {
    t, smtp, base, callback, owner, admin,
    async close() {
      for (const server of [relying, gatehouse]) await new Promise<void>((resolve) => server.close(() => resolve()));
      await smtp.close();
      await t.close();
    },
  };
}
