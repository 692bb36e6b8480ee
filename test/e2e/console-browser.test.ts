import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import request from 'supertest';
import { buildConsole } from '../../src/console/console';
import { findFlowDirectories, loadFlowDirectory } from '../../src/domain/flow-definition';
import { OPERATOR_ROLE_ATTRIBUTE } from '../../src/domain/operators';
import { parseNewUser } from '../../src/domain/users';
import { createHttpServer } from '../../src/http-server';
import { createLogger } from '../../src/logger';
import { projectRoot } from '../../src/paths';
import { ensureOperatorsApplication } from '../../src/usecases/operators/operators';
import { createRecord } from '../../src/usecases/records/create-records';
import { basic, FLOWS, manualClock, redisUrl, skipUnless, type TestApp } from '../helpers/backend';
import { queueBoard } from '../../src/queue/board';
import { SETTLE_MS, tallyActivity } from '../../src/usecases/upkeep/tally-activity';
import { CHROMIUM, deviceWithPasskeys, launchChromium, screenshots, servedTestApp, tabTo, VIEWPORTS } from '../helpers/browser';
import { freePort } from '../helpers/processes';
import { oathtool } from '../helpers/totp';

// The operators' console (docs/console.md) in headless Chromium: an operator of the operators'
// application signs in through its hosted sign-in with a password and a one-time code (oathtool),
// adds a passkey on that application's account page (the DevTools protocol's virtual
// authenticator), signs in to the console with the passkey; finds an account, reads the difference
// its last change made and its activity, disables it, and the audit log names the operator. A
// viewer sees no action and the server refuses one it forges; a POST from another site is refused.

const SHOTS = path.join(projectRoot(), 'docs/console');
/**
 * The words of labels, headings, buttons, tables, badges and event sentences that a line
 * break cuts (a word drawn in more than one line box). A page's title, or a value in a label (the
 * address to type to erase), may be too long for a phone's width: a value breaks where it must.
 */
const BROKEN_WORDS = `(() => {
  const broken = [];
  for (const el of document.querySelectorAll('label, legend, h2, h3, th, td, button, .badge, nav a, .tile span, .event')) {
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      // (a value inside a label, such as the address to type, an id, a path, an address or an event's
      // details break where they must)
      if (node.parentElement.closest('.value, code, a, .pairs dd, pre')) continue;
      const text = node.textContent;
      // (a value in a table breaks after a hyphen, as an address may)
      for (const m of text.matchAll(node.parentElement.closest('td') ? /[^\\s-]+/g : /[^\\s]+/g)) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const lines = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)));
        if (lines.size > 1) broken.push(m[0]);
      }
    }
  }
  return broken;
})()`;
const PASSWORD = 'operator horse battery';
/** Gatehouse's time, moved by hand: each one-time code in a 30-second step of its own. */
const clock = manualClock(new Date(Math.floor(Date.now() / 30_000) * 30_000 + 2_000));
const acting = { actor: { kind: 'operator' as const, name: 'test' }, origin: {} };

skipUnless(fs.existsSync(CHROMIUM), `the browser test needs Chromium at ${CHROMIUM} (apt-get install chromium)`)('the operators\' console in a real browser', () => {
  let t: TestApp;
  let served: Awaited<ReturnType<typeof servedTestApp>>;
  let consoleServer: http.Server;
  let queues: ReturnType<typeof queueBoard> | undefined;
  let stranger: http.Server;
  let strangerOrigin: string;
  let browser: Browser;
  let consoleUrl: string;
  let opsBase: string;
  let owner: string;
  let target: { email: string; id: number; createdAt: Date; app: number };
  /** The account as stored now. */
  const targetRecord = async () => {
    const local = (await t.runtime.db.applications.findByName('local'))!;
    return (await t.runtime.db.records.find(local.id, { id: target.id }))!;
  };

  beforeAll(async () => {
    const port = await freePort();
    consoleUrl = `http://localhost:${port}`;
    served = await servedTestApp({ clock, env: { LOGIN_LIMIT_ADDRESS: '10000/900', CONSOLE_PORT: String(port), CONSOLE_PUBLIC_URL: consoleUrl, WEBHOOKS_ALLOW_PRIVATE: 'true' } });
    t = served.t;
    const { services } = t.runtime;
    const { app: ops } = await ensureOperatorsApplication(services, { name: 'operators', flows: () => findFlowDirectories(FLOWS).map(loadFlowDirectory), acting });
    opsBase = services.baseUrls.of('operators');
    for (const [email, role] of [['ada@ops.example', 'admin'], ['vic@ops.example', 'viewer'], ['sue@ops.example', 'support'], ['ann@ops.example', 'admin']]) {
      await createRecord(services, { app: ops, origin: {}, operator: acting, record: parseNewUser(ops.id, { email, password: PASSWORD, [OPERATOR_ROLE_ATTRIBUTE]: role }) });
    }
    // with Redis, the queue dashboard behind the console's sign-in
    queues = redisUrl ? queueBoard(redisUrl, t.runtime.config.redisPrefix, createLogger('silent'), '/queues') : undefined;
    consoleServer = createHttpServer(buildConsole({ services, operatorsApp: 'operators', publicUrl: consoleUrl, logger: createLogger('error'), queues }), t.runtime.config.http, createLogger('silent'));
    await new Promise<void>((resolve) => consoleServer.listen(port, '127.0.0.1', resolve));
    // the account operators look after, changed once by its app's backend
    owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
    const email = `grace-${Math.random().toString(36).slice(2)}@example.com`;
    const created = await request(t.app).post('/entity.create').set('Authorization', owner).type('form')
      .send({ type_name: 'user', attributes: JSON.stringify({ email, password: 'grace horse battery', givenName: 'Grace', familyName: 'Hopper' }) });
    expect(created.body.stat).toBe('ok');
    const createdAt = clock.now();
    clock.advance(1_000);
    const updated = await request(t.app).post('/entity.update').set('Authorization', owner).type('form')
      .send({ type_name: 'user', id: created.body.id, attributes: JSON.stringify({ givenName: 'Amazing Grace' }) });
    expect(updated.body.stat).toBe('ok');
    target = { email, id: created.body.id, createdAt, app: (await services.db.applications.findByName('local'))!.id };
    // another site, whose page posts a form to the console
    const strangerPort = await freePort();
    // the same site as the console (localhost; a port is no boundary of a site), another origin: its form carries the console's cookie
    strangerOrigin = `http://localhost:${strangerPort}`;
    stranger = http.createServer((_req, res) => res.writeHead(200, { 'Content-Type': 'text/html' }).end(
      `<form method="post" action="${consoleUrl}/apps/local/accounts/${target.id}/enable"><input name="confirm" value="yes"><input name="csrf" value="guess"></form>`
      + '<script>document.forms[0].submit()</script>'));
    await new Promise<void>((resolve) => stranger.listen(strangerPort, '127.0.0.1', resolve));
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    for (const s of [consoleServer, stranger]) {
      if (!s) continue;
      s.closeAllConnections();
      await new Promise<void>((resolve) => s.close(() => resolve()));
    }
    await queues?.close();
    await served?.close();
  });

  /** What the browser said the Content-Security-Policy refused, on any page of any test: nothing, ever. */
  const refused: string[] = [];
  afterAll(() => expect(refused).toEqual([]));
  /** A browser of its own, with a platform authenticator that verifies the person. */
  const device = async (viewport = VIEWPORTS.desktop) => {
    const made = await deviceWithPasskeys(browser, { viewport });
    made.page.on('console', (m) => {
      if (/Content[- ]Security[- ]Policy/i.test(m.text())) refused.push(m.text());
    });
    return made;
  };

  /** The hosted sign-in's password step; the page it leads to is the caller's to wait for. */
  async function password(page: Page, email: string): Promise<void> {
    await page.fill('#f-signInEmailAddress', email);
    await page.fill('#f-currentPassword', PASSWORD);
    await Promise.all([page.waitForLoadState('load'), page.press('#f-currentPassword', 'Enter')]);
  }

  /**
   * A first sign-in to the console: password, the authenticator app the operators' application
   * requires (its first code proves it), the recovery codes, and on into the console: the sign-in
   * goes on with both factors, without the password again. Answers its secret.
   */
  async function firstSignIn(page: Page, email: string): Promise<string> {
    await page.goto(`${consoleUrl}/`);
    await page.waitForURL(new RegExp(`^${opsBase.replace(/[.]/g, '\\.')}/signin\\?`));
    await password(page, email);
    const secret = (await page.textContent('#secret'))!.trim();
    await page.fill('#code', oathtool(secret, clock.now()));
    await Promise.all([page.waitForLoadState('load'), page.press('#code', 'Enter')]);
    expect(await page.locator('.codes li').count()).toBe(10);
    // (the page's form-action lets its Continue go on to the console's callback)
    await Promise.all([page.waitForURL(`${consoleUrl}/`), page.click('form[action="/signin/enroll/continue"] button')]);
    clock.advance(30_000);
    return secret;
  }

  it('an admin signs in with a password and a code, then with a passkey; finds an account, reads its history and activity, disables it; the audit log names the admin', async () => {
    const d = await device();
    try {
      const secret = await firstSignIn(d.page, 'ada@ops.example');
      expect(await d.page.textContent('nav')).toContain('ada@ops.example (admin)');

      // the overview, once the maintenance job has tallied what happened: the counts are the events'
      clock.advance(SETTLE_MS + 61_000);
      await tallyActivity(t.runtime.services);
      await d.page.goto(`${consoleUrl}/?app=local`);
      expect(await d.page.getAttribute('.chart svg', 'role')).toBe('img');
      expect(await d.page.evaluate("document.querySelector('.chart svg').getAttribute('aria-labelledby').split(' ').map((id) => document.getElementById(id).textContent).join(' ')"))
        .toMatch(/^Sign-ins, registrations and failed sign-ins per day, last 30 days: local Sign-ins: \d+, Registrations: \d+, Failed sign-ins: \d+$/);
      const local = (await t.runtime.db.applications.findByName('local'))!;
      const events = await t.runtime.db.events.latest(local.id, 1_000);
      // the day of the newest registration (a run that crosses midnight in UTC made them yesterday)
      const day = events.find((e) => e.type === 'account.registered')!.occurredAt.toISOString().slice(0, 10);
      const made = (type: string) => String(events.filter((e) => e.type === type && e.occurredAt.toISOString().startsWith(day)).length);
      const row = d.page.locator(`.tall tbody tr:has(th:text-is("${day}")) td`);
      expect(await row.allTextContents()).toEqual([made('account.signed_in'), made('account.registered'), '0']);
      expect(Number(made('account.registered'))).toBeGreaterThan(0);
      await screenshots(d.page, SHOTS, 'console-overview', VIEWPORTS);
      await d.page.goto(`${consoleUrl}/accounts`);
      await screenshots(d.page, SHOTS, 'console-accounts', VIEWPORTS);

      // a passkey, added on the operators' application's own account page (signing in there too)
      await Promise.all([d.page.waitForURL(/\/signin\?/), d.page.click('text=Your account')]);
      clock.advance(30_000);
      await password(d.page, 'ada@ops.example');
      await d.page.fill('#code', oathtool(secret, clock.now()));
      await Promise.all([d.page.waitForURL(`${opsBase}/account?locale=en-US`), d.page.press('#code', 'Enter')]);
      await Promise.all([d.page.waitForURL(/done=passkeyAdded/), d.page.click('#passkey-add-button')]);

      // signed out of the console, then in again with the passkey alone (it verified the person: two factors)
      await d.page.goto(`${consoleUrl}/`);
      await Promise.all([d.page.waitForURL(`${consoleUrl}/signout`), d.page.click('nav button')]);
      expect(await d.page.textContent('h1')).toBe('You are signed out of the console');
      // (the passkey button, not the autofill, to which the virtual authenticator would answer at once)
      await d.page.addInitScript('PublicKeyCredential.isConditionalMediationAvailable = async () => false');
      expect((await d.page.goto(`${consoleUrl}/audit`))!.url()).toMatch(/\/signin\?/);
      await d.page.waitForSelector('#passkey-button:not([hidden])');
      await Promise.all([d.page.waitForURL(/\/audit$/), d.page.click('#passkey-button')]);

      // the search, with the keyboard alone: the beginning of the address, in the application `local`
      await d.page.goto(`${consoleUrl}/accounts`);
      expect(await d.page.inputValue('#app')).toBe('local');
      await tabTo(d.page, '#q');
      await d.page.keyboard.type(target.email.slice(0, 8));
      await Promise.all([d.page.waitForURL(/q=grace-/), d.page.keyboard.press('Enter')]);
      expect(await d.page.textContent('main p[role=status]')).toBe('1 account matches');
      await tabTo(d.page, `a[href^="/apps/local/accounts/${target.id}?"]`);
      await Promise.all([d.page.waitForURL(new RegExp(`/apps/local/accounts/${target.id}`)), d.page.keyboard.press('Enter')]);
      // its history: the change of givenName, from what to what, by which client
      const history = d.page.locator('#h-history + ol');
      expect(await history.locator('li').first().textContent()).toContain('Version 2');
      expect(await history.locator('del').first().textContent()).toBe('Grace');
      expect(await history.locator('ins').first().textContent()).toBe('Amazing Grace');
      // by the client's description, its id on hover
      const owner = (await t.runtime.db.clients.list(target.app)).find((c) => c.clientId === t.local.clients.owner.client_id)!;
      expect(await history.locator(`span[title="client_id ${owner.clientId}"]`).first().textContent()).toBe(owner.description);
      // as it was at its creation
      await d.page.fill('#at', new Date(target.createdAt.getTime() + 500).toISOString());
      await Promise.all([d.page.waitForURL(/at=/), d.page.press('#at', 'Enter')]);
      expect(await d.page.textContent('main')).toContain('"givenName": "Grace"');
      await screenshots(d.page, SHOTS, 'console-account', VIEWPORTS);

      // disabled, with a reason, confirmed: the keyboard alone
      await d.page.goto(`${consoleUrl}/apps/local/accounts/${target.id}`);
      await tabTo(d.page, '#reason');
      await d.page.keyboard.type('asked by phone, ticket 4711');
      await tabTo(d.page, '#confirm-disable');
      await d.page.keyboard.press('Space');
      await tabTo(d.page, 'form[action*="/disable"] button');
      await Promise.all([d.page.waitForURL(/done=disabled/), d.page.keyboard.press('Enter')]);
      expect(await d.page.textContent('.notice.done')).toBe('The account is disabled and its sessions have ended.');
      // the activity in sentences, the operator by address
      expect(await d.page.textContent('#h-activity + .scroll tbody tr')).toContain('Account disabled by ada@ops.example');
      expect(await d.page.textContent('#h-activity + .scroll tbody tr .pairs')).toContain('reason:asked by phone, ticket 4711');
      expect((await targetRecord()).disabled?.reason).toBe('asked by phone, ticket 4711');

      // the operators, for an admin: roles, last sign-in, second factors
      await d.page.goto(`${consoleUrl}/operators`);
      expect(await d.page.textContent('tbody')).toContain('vic@ops.example');
      expect(await d.page.textContent('tbody tr:has-text("ada@ops.example")')).toContain('an authenticator code');
      await screenshots(d.page, SHOTS, 'console-operators', VIEWPORTS);

      // the audit log shows the operator
      await d.page.goto(`${consoleUrl}/audit?app=local&type=account.disabled`);
      expect(await d.page.textContent('tbody')).toContain('ada@ops.example');
      await screenshots(d.page, SHOTS, 'console-audit', VIEWPORTS);

      // at 390 px, no page scrolls sideways
      await d.page.setViewportSize(VIEWPORTS.phone);
      for (const url of [`${consoleUrl}/`, `${consoleUrl}/accounts?app=local&q=grace`, `${consoleUrl}/apps/local/accounts/${target.id}`, `${consoleUrl}/audit?app=local`,
        `${consoleUrl}/operators`, `${consoleUrl}/apps/local/organizations`, `${consoleUrl}/apps/local/accounts/${target.id}/edit`]) {
        await d.page.goto(url);
        const [scroll, width] = await d.page.evaluate('[document.documentElement.scrollWidth, document.documentElement.clientWidth]') as number[];
        expect({ url, scroll }).toEqual({ url, scroll: width });
        // no label, heading, button or event name broken inside a word: each word of them in one line box
        expect({ url, broken: await d.page.evaluate(BROKEN_WORDS) }).toEqual({ url, broken: [] });
      }
      await d.page.setViewportSize(VIEWPORTS.desktop);

      // an application: a setting checked as the API checks it, a new client and its secret, shown once
      await d.page.goto(`${consoleUrl}/apps/local`);
      await screenshots(d.page, SHOTS, 'console-application', VIEWPORTS);
      await d.page.fill('#key', 'second_factor');
      await d.page.fill('#value', 'sometimes');
      await Promise.all([d.page.waitForLoadState('load'), d.page.click('form[action^="/apps/local/settings"] button')]);
      expect(await d.page.textContent('.notice')).toContain('value:');
      await d.page.goto(`${consoleUrl}/apps/local`);
      await d.page.fill('#key', 'brand_color');
      await d.page.fill('#value', '#0b6e4f');
      await Promise.all([d.page.waitForURL(/done=settingChanged/), d.page.click('form[action^="/apps/local/settings"] button')]);
      expect((await t.runtime.db.applications.findByName('local'))!.settings.brand_color).toBe('#0b6e4f');
      await d.page.fill('#description', 'billing backend');
      await d.page.uncheck('input[name=features][value=login_client]');
      await d.page.check('input[name=features][value=direct_read_access]');
      await Promise.all([d.page.waitForLoadState('load'), d.page.click('form[action^="/apps/local/clients"] button')]);
      const clientSecret = (await d.page.textContent('#secret'))!;
      const clientId = (await d.page.textContent('tbody code'))!;
      const read = await request(t.app).post('/entity.count').set('Authorization', basic(clientId, clientSecret)).type('form').send({ type_name: 'user' });
      expect(read.body.stat).toBe('ok');
      await screenshots(d.page, SHOTS, 'console-client-secret', VIEWPORTS);
      await d.page.goto(`${consoleUrl}/apps/local/clients/${clientId}`);
      await d.page.check('form[action*="/secret"] input[name=confirm]');
      await Promise.all([d.page.waitForLoadState('load'), d.page.click('form[action*="/secret"] button')]);
      const renewed = (await d.page.textContent('#secret'))!;
      expect(renewed).not.toBe(clientSecret);
      expect((await request(t.app).post('/entity.count').set('Authorization', basic(clientId, clientSecret)).type('form').send({ type_name: 'user' })).body.stat).toBe('error');
      await d.page.goto(`${consoleUrl}/audit?app=local&type=client.`);
      expect(await d.page.textContent('tbody')).toContain('client.secret_reset');

      // another origin's form, in the signed-in browser, with the session's cookie but not its form token, enables nothing
      const [forged] = await Promise.all([d.page.waitForResponse((r) => r.url().startsWith(consoleUrl)), d.page.goto(`${strangerOrigin}/`)]);
      expect(forged.status()).toBe(403);
      expect(await forged.text()).toContain('This form did not come from a page of the console');
      expect((await targetRecord()).disabled).not.toBeNull();
    } finally {
      await d.context.close();
    }
  });

  it('support creates an account (a password, or a mailed link) and edits it; the API reads back what the console wrote', async () => {
    const d = await device();
    try {
      clock.advance(30_000);
      await firstSignIn(d.page, 'sue@ops.example');
      const email = `made-${Math.random().toString(36).slice(2)}@example.com`;
      await d.page.goto(`${consoleUrl}/accounts?app=local`);
      await Promise.all([d.page.waitForURL(/\/apps\/local\/new-account/), d.page.click('text=New account')]);
      await d.page.fill('#a_email', email);
      await d.page.fill('#a_givenName', 'Katherine');
      await d.page.fill('#a_familyName', 'Johnson');
      await d.page.check('input[name=how][value=password]');
      // too short for the application's rules: the page again, with what was typed and what to do
      await d.page.fill('#password', 'short');
      await Promise.all([d.page.waitForLoadState('load'), d.page.click('form[action*="/new-account"] button[type=submit]')]);
      expect(await d.page.textContent('.notice[role=alert]')).toMatch(/password/);
      expect(await d.page.inputValue('#a_givenName')).toBe('Katherine');
      await d.page.fill('#password', 'katherine horse battery');
      await Promise.all([d.page.waitForURL(/done=created/), d.page.click('form[action*="/new-account"] button[type=submit]')]);
      expect(await d.page.textContent('.notice.done')).toBe('The account is created.');
      const id = Number(/\/accounts\/(\d+)/.exec(d.page.url())![1]);
      const read = async () => (await request(t.app).post('/entity').set('Authorization', owner).type('form').send({ type_name: 'user', id })).body.result;
      expect(await read()).toMatchObject({ email, givenName: 'Katherine', familyName: 'Johnson', emailVerified: null });
      // the person signs in with the password the operator set
      const signedIn = await request(t.app).post('/oauth/auth_native_traditional').type('form').send({
        client_id: t.local.clients.login.client_id, locale: 'en-US', response_type: 'token', signInEmailAddress: email, currentPassword: 'katherine horse battery',
      });
      expect(signedIn.body.stat).toBe('ok');

      // edited: a new address (unverified, the old one told) and a name
      await Promise.all([d.page.waitForURL(/\/edit/), d.page.click('text=Edit the account')]);
      expect(await d.page.inputValue('#a_familyName')).toBe('Johnson');
      const moved = `moved-${email}`;
      await d.page.fill('#a_email', moved);
      await d.page.fill('#a_familyName', 'Goble Johnson');
      await Promise.all([d.page.waitForURL(/done=edited/), d.page.click('form[action*="/edit"] button[type=submit]')]);
      expect(await read()).toMatchObject({ email: moved, givenName: 'Katherine', familyName: 'Goble Johnson', emailVerified: null });
      expect(await d.page.textContent('#h-history + ol li')).toContain('sue@ops.example');
      await screenshots(d.page, SHOTS, 'console-account-edit', VIEWPORTS);

      // another, with a link to set a password mailed to it
      const linked = `linked-${email}`;
      await d.page.goto(`${consoleUrl}/apps/local/new-account`);
      await screenshots(d.page, SHOTS, 'console-account-new', VIEWPORTS);
      await d.page.fill('#a_email', linked);
      await Promise.all([d.page.waitForURL(/done=createdLinkSent/), d.page.click('form[action*="/new-account"] button[type=submit]')]);
      const local = (await t.runtime.db.applications.findByName('local'))!;
      const made = (await t.runtime.db.records.find(local.id, { email: linked }))!;
      expect(made.passwordHash).toBeNull();
      expect((await t.runtime.db.events.latest(local.id, 20, made.id)).map((e) => e.type)).toContain('account.password_reset_requested');
      // an address another account has: refused, with what to do
      await d.page.goto(`${consoleUrl}/apps/local/new-account`);
      await d.page.fill('#a_email', linked);
      await Promise.all([d.page.waitForLoadState('load'), d.page.click('form[action*="/new-account"] button[type=submit]')]);
      expect(await d.page.textContent('.notice[role=alert]')).toBe('Another account already has this email.');
      // the operators' own accounts are made with the command line, never here
      expect((await d.page.goto(`${consoleUrl}/apps/operators/new-account`))!.status()).toBe(403);

      // an organization (made by the application's backend): found, a member added by address, its roles changed, an invitation sent again and revoked
      const org = await request(t.app).post('/organizations/create').set('Authorization', owner).type('form').send({ name: 'Langley Research', slug: `langley-${id}` });
      expect(org.body.stat).toBe('ok');
      const orgId = org.body.id as string;
      await d.page.goto(`${consoleUrl}/apps/local/organizations?q=langley`);
      await screenshots(d.page, SHOTS, 'console-organizations', VIEWPORTS);
      await Promise.all([d.page.waitForURL(new RegExp(`/organizations/${orgId}`)), d.page.click('text=Langley Research')]);
      await d.page.fill('#m-email', moved);
      await d.page.fill('#m-roles', 'admin');
      await Promise.all([d.page.waitForURL(/done=memberAdded/), d.page.click('form[action*="/members?"] button')]);
      const members = async () => (await request(t.app).post('/organizations/members/list').set('Authorization', owner).type('form').send({ organization_id: orgId })).body.results as { roles: string[] }[];
      expect(await members()).toEqual([expect.objectContaining({ roles: ['admin'] })]);
      await d.page.fill(`#roles-${id}`, 'member, admin');
      await Promise.all([d.page.waitForURL(/done=rolesChanged/), d.page.click(`form[action*="/members/${id}/roles"] button`)]);
      expect((await members())[0]!.roles).toEqual(['admin', 'member']);
      await d.page.fill('#i-email', 'dorothy@example.com');
      await Promise.all([d.page.waitForURL(/done=invited/), d.page.click('form[action*="/invitations?"] button')]);
      await Promise.all([d.page.waitForURL(/done=invitationResent/), d.page.click('form[action*="/resend"] button')]);
      const invitations = async () => (await request(t.app).post('/organizations/invitations/list').set('Authorization', owner).type('form').send({ organization_id: orgId })).body.results as { state: string }[];
      expect((await invitations()).map((i) => i.state).sort()).toEqual(['pending', 'revoked']);
      await d.page.check('form[action*="/revoke"] input[name=confirm]');
      await Promise.all([d.page.waitForURL(/done=invitationRevoked/), d.page.click('form[action*="/revoke"] button')]);
      expect((await invitations()).map((i) => i.state)).toEqual(['revoked', 'revoked']);
      await screenshots(d.page, SHOTS, 'console-organization', VIEWPORTS);
      // the account's page names its organization
      await d.page.goto(`${consoleUrl}/apps/local/accounts/${id}`);
      expect(await d.page.textContent('.summary')).toContain('Langley Research');
      await d.page.goto(`${consoleUrl}/apps/local/organizations/${orgId}`);
      await d.page.check(`form[action*="/members/${id}/remove"] input[name=confirm]`);
      await Promise.all([d.page.waitForURL(/done=memberRemoved/), d.page.click(`form[action*="/members/${id}/remove"] button`)]);
      expect(await members()).toEqual([]);
    } finally {
      await d.context.close();
    }
  });

  it('an admin\'s other pages: a webhook endpoint added and pinged, a flow imported and its changes, a SCIM token shown once, a client', async () => {
    const d = await device();
    try {
      clock.advance(30_000);
      await firstSignIn(d.page, 'ann@ops.example');
      // a webhook endpoint (the other site stands in for the receiver): its secret once, then its page
      await d.page.goto(`${consoleUrl}/apps/local`);
      await d.page.fill('#w-url', `${strangerOrigin}/hooks`);
      await d.page.fill('#w-events', 'user.created, user.updated');
      await d.page.fill('#w-description', 'support desk');
      await Promise.all([d.page.waitForLoadState('load'), d.page.click('form[action^="/apps/local/webhooks"] button')]);
      expect(await d.page.textContent('#secret')).toMatch(/^whsec_/);
      await Promise.all([d.page.waitForURL(/\/webhooks\/[^/?]+\?/), d.page.click('text=To the endpoint')]);
      const webhookUrl = d.page.url();
      await Promise.all([d.page.waitForURL(/done=webhookTested/), d.page.click('form[action*="/test"] button')]);
      expect(await d.page.textContent('main')).toContain(`${strangerOrigin}/hooks`);
      await screenshots(d.page, SHOTS, 'console-webhook', VIEWPORTS);

      // a flow's next version, pasted: one English label changed, and what changed, path by path
      const translations = JSON.parse(fs.readFileSync(path.join(FLOWS, 'standard/translations.json'), 'utf8')) as Record<string, { values: Record<string, string> }>;
      translations['birthdate.label']!.values['en-US'] = 'Birthday';
      await d.page.goto(`${consoleUrl}/apps/local`);
      await d.page.fill('#flow', fs.readFileSync(path.join(FLOWS, 'standard/flow.json'), 'utf8'));
      await d.page.fill('#translations', JSON.stringify(translations));
      await Promise.all([d.page.waitForURL(/done=flowImported/), d.page.click('form[action^="/apps/local/flows"] button')]);
      await Promise.all([d.page.waitForURL(/\/flows\/standard\?/), d.page.click('#h-flows ~ ul a')]);
      const flowUrl = d.page.url();
      expect(await d.page.textContent('tbody del')).toBe('Date of birth');
      expect(await d.page.textContent('tbody ins')).toBe('Birthday');
      await screenshots(d.page, SHOTS, 'console-flow', VIEWPORTS);

      // a SCIM token for an organization's directory, shown once: the directory reads with it
      const org = await request(t.app).post('/organizations/create').set('Authorization', owner).type('form').send({ name: 'Directory Co', slug: `directory-${Date.now()}` });
      await d.page.goto(`${consoleUrl}/apps/local`);
      await d.page.fill('#scim-org', org.body.id);
      await d.page.fill('#scim-description', 'Okta');
      await Promise.all([d.page.waitForLoadState('load'), d.page.click('form[action^="/apps/local/scim"] button')]);
      const token = (await d.page.textContent('#secret'))!;
      expect((await request(t.app).get('/scim/v2/Users').set('Authorization', `Bearer ${token}`)).status).toBe(200);
      await screenshots(d.page, SHOTS, 'console-scim-token', VIEWPORTS);

      // a client's page: its features and settings
      const clientUrl = `${consoleUrl}/apps/local/clients/${t.local.clients.login.client_id}`;
      await d.page.goto(clientUrl);
      expect(await d.page.textContent('main')).toContain('login_client');
      await screenshots(d.page, SHOTS, 'console-client', VIEWPORTS);

      // at 390 px, these pages too: no sideways scroll, no word broken
      await d.page.setViewportSize(VIEWPORTS.phone);
      for (const url of [webhookUrl, flowUrl, clientUrl, `${consoleUrl}/apps/local`, `${consoleUrl}/apps`]) {
        await d.page.goto(url);
        const [scroll, width] = await d.page.evaluate('[document.documentElement.scrollWidth, document.documentElement.clientWidth]') as number[];
        expect({ url, scroll }).toEqual({ url, scroll: width });
        expect({ url, broken: await d.page.evaluate(BROKEN_WORDS) }).toEqual({ url, broken: [] });
      }
    } finally {
      await d.context.close();
    }
  });

  it('a viewer reads but cannot act: no action on the page, and the server refuses one it sends', async () => {
    const d = await device();
    try {
      clock.advance(30_000);
      await firstSignIn(d.page, 'vic@ops.example');
      await d.page.goto(`${consoleUrl}/apps/local/accounts/${target.id}`);
      expect(await d.page.textContent('main')).toContain(target.email);
      expect(await d.page.locator('#h-actions').count()).toBe(0);
      expect(await d.page.locator('text=Edit the account').count()).toBe(0);
      expect((await d.page.goto(`${consoleUrl}/apps/local/new-account`))!.status()).toBe(403);
      // an organization's page: read, without a form
      const org = await request(t.app).post('/organizations/create').set('Authorization', owner).type('form').send({ name: 'Viewed Inc', slug: `viewed-${Date.now()}` });
      await d.page.goto(`${consoleUrl}/apps/local/organizations/${org.body.id}`);
      expect(await d.page.textContent('h1')).toBe('Viewed Inc');
      expect(await d.page.locator('form[method=post]:not([action="/signout"])').count()).toBe(0);
      const viewerCsrf = await d.page.getAttribute('nav input[name=csrf]', 'value');
      expect((await d.context.request.post(`${consoleUrl}/apps/local/organizations/${org.body.id}/members`, { form: { csrf: viewerCsrf!, email: target.email }, maxRedirects: 0 })).status()).toBe(403);
      await d.page.goto(`${consoleUrl}/apps/local/accounts/${target.id}`);
      // the form a support operator would have, sent from this very page with this session's form token
      const csrf = await d.page.getAttribute('nav input[name=csrf]', 'value');
      const sent = await d.context.request.post(`${consoleUrl}/apps/local/accounts/${target.id}/enable`, { form: { csrf: csrf!, confirm: 'yes' }, maxRedirects: 0 });
      const status = sent.status();
      expect(status).toBe(403);
      const setting = await d.context.request.post(`${consoleUrl}/apps/local/settings`, { form: { csrf: csrf!, key: 'brand_color', value: '#000000' }, maxRedirects: 0 });
      expect(setting.status()).toBe(403);
      // the queue dashboard: read, and its changes refused to a viewer (with Redis; without, there is none)
      const board = await d.context.request.get(`${consoleUrl}/queues/`);
      expect(board.status()).toBe(redisUrl ? 200 : 404);
      if (redisUrl) {
        const retry = await d.context.request.put(`${consoleUrl}/queues/api/queues/mail/retry/failed`, { headers: { 'Sec-Fetch-Site': 'same-origin' } });
        expect(retry.status()).toBe(403);
      }
      expect((await t.runtime.db.applications.findByName('local'))!.settings.brand_color).not.toBe('#000000');
      expect((await targetRecord()).disabled).not.toBeNull();
    } finally {
      await d.context.close();
    }
  });
});
