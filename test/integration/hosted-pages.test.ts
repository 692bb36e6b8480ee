import fs from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import { simpleParser } from 'mailparser';
import type { FlowDefinition } from '../../src/domain/flow-definition';
import { basic, loginClientWithoutFlow, manualClock, startTestApp, type TestApp } from '../helpers/backend';

const clock = manualClock();
const APP = 'https://app.example.com/callback';
const PASSWORD = 'correct horse battery';

let t: TestApp;
let owner: string;
let loginId: string;
let loginSecret: string;

const entry = (extra: Record<string, string> = {}) => ({ client_id: loginId, redirect_uri: APP, locale: 'en-US', state: 'xyz', ...extra });
const admin = (route: string, body: Record<string, string>) => request(t.app).post(route).set('Authorization', owner).type('form').send(body);

/** A browser: its cookies, the page it is on, and the page's form token. */
async function openPage(route: string, query: Record<string, string> = entry()) {
  const agent = request.agent(t.app);
  const res = await agent.get(route).query(query);
  const csrf = /name="csrf" value="([^"]*)"/.exec(res.text)?.[1];
  return { agent, res, csrf: csrf! };
}
const messageOf = (html: string) => /<p class="notice" id="form-notice" role="alert">([^<]*)<\/p>/.exec(html)?.[1];

beforeAll(async () => {
  t = await startTestApp({ clock, env: { LOGIN_LIMIT_ADDRESS: '6/900', MAIL_LIMIT_RECIPIENT: '100/3600' } });
  owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
  loginId = t.local.clients.login.client_id;
  loginSecret = t.local.clients.login.client_secret;
  expect((await admin('/settings/set', { for_client_id: loginId, key: 'redirect_uris', value: `${APP} https://app.example.com/other` })).body.stat).toBe('ok');
});
afterAll(() => t.close());

describe('GET /signin and /register: who the page works for', () => {
  it('refuses a missing or unknown client and a redirect_uri off the allow-list, without redirecting', async () => {
    for (const query of [
      {}, entry({ client_id: 'nope' }), entry({ client_id: t.local.clients.owner.client_id }),
      entry({ redirect_uri: 'https://evil.example/callback' }), entry({ redirect_uri: `${APP}?x=1` }), entry({ redirect_uri: '' }),
      entry({ state: 'a\u0000b' }), entry({ state: 'x'.repeat(513) }),
    ]) {
      for (const route of ['/signin', '/register']) {
        const res = await request(t.app).get(route).query(query);
        expect(res.status).toBe(400);
        expect(res.headers.location).toBeUndefined();
        expect(res.headers['content-type']).toContain('text/html');
        expect(res.text).toMatch(/<p role="alert">[^<]+<\/p>/);
      }
    }
    const evil = await request(t.app).post('/signin').type('form').send({ ...entry({ redirect_uri: 'https://evil.example/x' }), signInEmailAddress: 'a@b.example', currentPassword: 'x' });
    expect(evil.status).toBe(400);
    expect(evil.headers.location).toBeUndefined();
  });

  it('a login client without a default flow has no pages to show: said on an error page, not guessed', async () => {
    const { clientId } = await loginClientWithoutFlow(t);
    expect((await admin('/settings/set', { for_client_id: clientId, key: 'redirect_uris', value: APP })).body.stat).toBe('ok');
    const res = await request(t.app).get('/signin').query(entry({ client_id: clientId }));
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toContain('text/html');
    expect(res.text).toContain('this login client has no default flow to show (its default_flow_name and default_flow_version settings).');
  });

  it('a wrong link gets an error page in the page\'s language and the application\'s look; the detail for developers stays in English', async () => {
    await admin('/settings/set_default', { key: 'app_name', value: 'Acme' });
    clock.advance(6_000);
    const res = await request(t.app).get('/signin').query(entry({ locale: 'fr-FR', redirect_uri: 'https://evil.example/<b>x</b>' }));
    expect(res.status).toBe(400);
    expect(res.text).toContain('<html lang="fr">');
    expect(res.text).toContain('<title>La connexion n’a pas pu aboutir</title>');
    expect(res.text).toContain('<p role="alert">Cette page a été ouverte avec un lien mal configuré.</p>');
    expect(res.text).toContain('<summary>Détails pour les développeurs de l’application</summary><p lang="en">redirect_uri is missing or is not on the allow-list');
    expect(res.text).toContain('<header>Acme</header>');
    // nothing the request brought is written into the page
    expect(res.text).not.toContain('evil.example');
    expect((await request(t.app).get('/signin').query(entry({ client_id: 'NOT<i>A</i>CLIENT' }))).text).not.toContain('NOT');
    await admin('/settings/set_default', { key: 'app_name', value: '' });
    clock.advance(6_000);
    // without app_name, the service's own name: an application's name is a host label
    expect((await request(t.app).get('/signin').query(entry({ client_id: 'nope' }))).text).toContain('<header>Gatehouse</header>');
  });

  it('a page that fails unexpectedly answers an error page (not the API\'s JSON) with the request id to quote', async () => {
    const local = (await t.runtime.db.applications.findByName('local'))!;
    const settings = (await t.runtime.db.clients.find(local.id, loginId))!.settings;
    // a flow version the application never imported (set behind the settings check, as by hand in the database)
    await t.runtime.db.transaction((tx) => t.runtime.db.clients.mutate(local.id, loginId, () => ({ settings: { ...settings, default_flow_version: '99' } }), clock.now(), tx));
    clock.advance(6_000);
    try {
      const res = await request(t.app).get('/signin').query(entry({ locale: 'de-DE' }));
      expect(res.status).toBe(500);
      expect(res.headers['content-type']).toContain('text/html');
      expect(res.text).toContain('<p role="alert">Diese Seite ist gerade nicht verfügbar. Versuche es später erneut.</p>');
      expect(res.text).toContain(`request id ${res.headers['x-request-id']}`);
      expect(res.text).not.toMatch(/the flow|version 99|at .*\.js/);
    } finally {
      await t.runtime.db.transaction((tx) => t.runtime.db.clients.mutate(local.id, loginId, () => ({ settings }), clock.now(), tx));
      clock.advance(6_000);
    }
    // a body the page's parser refuses (too large) gets a page as well, in the page's language
    const large = await request(t.app).post('/signin?locale=es-ES').type('form').send({ ...entry(), signInEmailAddress: 'x'.repeat(40_000) });
    expect(large.status).toBe(413);
    expect(large.headers['content-type']).toContain('text/html');
    expect(large.text).toContain('<html lang="es">');
  });

  it('renders the flow\'s forms with strict headers; the locale comes from locale, then Accept-Language', async () => {
    const { res } = await openPage('/signin');
    expect(res.status).toBe(200);
    const csp = res.headers['content-security-policy'];
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("frame-ancestors 'none'");
    // the form posts here, and a success redirects to the app
    expect(csp).toContain("form-action 'self' https://app.example.com;");
    expect(csp).toMatch(/script-src 'sha256-[^']+'/);
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.text).toMatch(/<label for="f-signInEmailAddress">Email address<\/label><input id="f-signInEmailAddress" name="signInEmailAddress"/);
    expect(res.text).toContain('<label for="f-currentPassword">');
    expect(res.text).toContain('href="/signin?client_id=');
    expect(res.text).toContain('view=forgot');
    // no providers configured: no provider buttons
    expect(res.text).not.toContain('class="button provider"');
    const register = await openPage('/register');
    for (const field of ['emailAddress', 'newPassword', 'newPasswordConfirm', 'firstName', 'lastName', 'displayName', 'mobile']) {
      expect(register.res.text).toContain(`<label for="f-${field}">`);
    }
    expect(register.res.text).toContain('name="birthdate[dateselect_year]"');
    // optional fields say so; required ones do not; each date part fills from the browser's autofill
    expect(register.res.text).toMatch(/<label for="f-mobile">[^<]+ <span class="optional">\(optional\)<\/span><\/label>/);
    expect(register.res.text).toMatch(/<legend>[^<]+ <span class="optional">\(optional\)<\/span><\/legend>/);
    expect(register.res.text).not.toMatch(/<label for="f-emailAddress">[^<]*<span class="optional">/);
    for (const part of ['year', 'month', 'day']) expect(register.res.text).toContain(`name="birthdate[dateselect_${part}]" type="number" inputmode="numeric"`);
    for (const part of ['year', 'month', 'day']) expect(register.res.text).toMatch(new RegExp(`dateselect_${part}\\][^>]*autocomplete="bday-${part}"`));
    const german = await request(t.app).get('/signin').query(entry({ locale: '' })).set('Accept-Language', 'de-CH;q=0.9, en;q=0.5');
    expect(german.text).toContain('<html lang="de">');
    expect(german.text).toContain('Passwort vergessen?');
  });

  it('shows what an operator changes in the flow without code', async () => {
    const local = (await t.runtime.db.applications.findByName('local'))!;
    const current = (await t.runtime.db.flows.find(local.id, 'standard', 1))!.definition as FlowDefinition;
    const changed: FlowDefinition = JSON.parse(JSON.stringify(current));
    changed.translations['signInEmailAddress.label'].values['en-US'] = 'Your work email';
    const stored = await t.runtime.db.transaction((tx) => t.runtime.db.flows.insertNextVersion(local.id, 'standard', changed as unknown as Record<string, unknown> as never, 'changed-label', clock.now(), tx));
    await admin('/settings/set', { for_client_id: loginId, key: 'default_flow_version', value: String(stored.version) });
    clock.advance(6_000); // settings are cached for 5 s
    expect((await openPage('/signin')).res.text).toContain('>Your work email</label>');
    await admin('/settings/set', { for_client_id: loginId, key: 'default_flow_version', value: '1' });
    clock.advance(6_000);
  });
});

describe('registering, signing in and asking for a new password on the pages', () => {
  it('registers: HTML in every field comes back escaped with the flow\'s messages; a valid form redirects with a code', async () => {
    const { agent, csrf } = await openPage('/register');
    const hostile = '"><script>alert(1)</script>';
    const bad = await agent.post('/register').type('form').send({
      ...entry(), csrf, emailAddress: hostile, newPassword: 'short', newPasswordConfirm: 'other', firstName: hostile, lastName: hostile, displayName: hostile,
      mobile: hostile, 'birthdate[dateselect_year]': hostile,
    });
    expect(bad.status).toBe(400);
    expect(bad.text).not.toContain('<script>alert');
    expect(bad.text).toContain('value="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"');
    expect(bad.text).toContain('aria-invalid="true"');
    expect(bad.text).toMatch(/id="f-newPassword-error" role="alert">[^<]+</);
    expect(bad.text).not.toContain('value="short"'); // passwords are never sent back

    const retry = /name="csrf" value="([^"]*)"/.exec(bad.text)![1];
    const ok = await agent.post('/register').type('form').send({
      ...entry(), csrf: retry, emailAddress: 'page@example.com', newPassword: PASSWORD, newPasswordConfirm: PASSWORD, firstName: 'Pa', lastName: 'Ge', displayName: 'page',
    });
    expect(ok.status).toBe(303);
    const location = new URL(ok.headers.location);
    expect(`${location.origin}${location.pathname}`).toBe(APP);
    expect(location.searchParams.get('state')).toBe('xyz');
    // the app's backend exchanges the code as for any authorization code
    const exchanged = await request(t.app).post('/oauth/token').auth(loginId, loginSecret).type('form')
      .send({ grant_type: 'authorization_code', code: location.searchParams.get('code'), redirect_uri: APP });
    expect(exchanged.body.stat).toBe('ok');
    expect(exchanged.body.access_token).toBeDefined();
  });

  it('refuses a POST without the page\'s token and does nothing', async () => {
    const res = await request(t.app).post('/register').type('form').send({
      ...entry(), csrf: 'z'.repeat(32), emailAddress: 'forged@example.com', newPassword: PASSWORD, newPasswordConfirm: PASSWORD, firstName: 'F', lastName: 'G', displayName: 'forged',
    });
    expect(res.status).toBe(403);
    const local = (await t.runtime.db.applications.findByName('local'))!;
    expect(await t.runtime.db.records.find(local.id, { email: 'forged@example.com' })).toBeUndefined();
    const signIn = await request(t.app).post('/signin').type('form').send({ ...entry(), signInEmailAddress: 'page@example.com', currentPassword: PASSWORD });
    expect(signIn.status).toBe(403);
    expect(signIn.headers.location).toBeUndefined();
  });

  it('refuses login CSRF: a planted cookie with the same value in the form, a real pair posted from another site, a cross-site fetch', async () => {
    const signIn = { ...entry(), signInEmailAddress: 'page@example.com', currentPassword: PASSWORD };
    // anyone who can set a cookie for the host (a sibling application, a network attacker) plants one and posts its value
    const planted = await request(t.app).post('/signin').type('form').set('Cookie', `gh_login_csrf=${'p'.repeat(32)}`).send({ ...signIn, csrf: 'p'.repeat(32) });
    expect(planted.status).toBe(403);
    expect(planted.headers.location).toBeUndefined();
    // a pair the attacker got from the page itself, planted and posted from another origin
    const { agent } = await openPage('/signin');
    for (const headers of [{ Origin: 'https://evil.example' }, { Origin: 'null' }, { Origin: 'null', 'Sec-Fetch-Site': 'cross-site' }, { 'Sec-Fetch-Site': 'same-site' }, { Origin: 'http://localhost', 'Sec-Fetch-Site': 'cross-site' }]) {
      // the page's current pair: every refusal draws the page again with a new one
      const csrf = /name="csrf" value="([^"]*)"/.exec((await agent.get('/signin').query(entry())).text)![1];
      const res = await agent.post('/signin').type('form').set(headers).send({ ...signIn, csrf });
      expect(res.status).toBe(403);
      expect(res.headers.location).toBeUndefined();
    }
    // the page's own form, as a browser posts it
    const csrf = /name="csrf" value="([^"]*)"/.exec((await agent.get('/signin').query(entry())).text)![1];
    const own = await agent.post('/signin').type('form').set({ Host: 'localhost', Origin: 'http://localhost', 'Sec-Fetch-Site': 'same-origin' }).send({ ...signIn, csrf });
    expect(own.status).toBe(303);
    expect(own.headers.location).toMatch(/^https:\/\/app\.example\.com\/callback\?code=/);
  });

  it('signs in: a wrong password gets the flow\'s message in the page\'s language, the same for an unknown account', async () => {
    const fr = await openPage('/signin', entry({ locale: 'fr-FR' }));
    expect(fr.res.text).toContain('<html lang="fr">');
    const wrong = await fr.agent.post('/signin').type('form').send({ ...entry({ locale: 'fr-FR' }), csrf: fr.csrf, signInEmailAddress: 'page@example.com', currentPassword: 'wrong password' });
    expect(wrong.status).toBe(400);
    const api = await request(t.app).post('/oauth/auth_native_traditional').type('form')
      .send({ client_id: loginId, locale: 'fr-FR', signInEmailAddress: 'page@example.com', currentPassword: 'wrong password' });
    expect(messageOf(wrong.text)).toBe(api.body.invalid_fields.signInForm[0]);
    expect(messageOf(wrong.text)).toMatch(/incorrect/);
    const retry = /name="csrf" value="([^"]*)"/.exec(wrong.text)![1];
    const unknown = await fr.agent.post('/signin').type('form').send({ ...entry({ locale: 'fr-FR' }), csrf: retry, signInEmailAddress: 'nobody@example.com', currentPassword: 'wrong password' });
    expect(messageOf(unknown.text)).toBe(messageOf(wrong.text));

    const { agent, csrf } = await openPage('/signin');
    const ok = await agent.post('/signin').type('form').send({ ...entry(), csrf, signInEmailAddress: 'page@example.com', currentPassword: PASSWORD });
    expect(ok.status).toBe(303);
    expect(ok.headers.location).toMatch(/^https:\/\/app\.example\.com\/callback\?code=[A-Za-z0-9_-]+&state=xyz$/);
  });

  it('forgot password: the email goes out, and the page says the same for an address no account has (the API keeps its 212)', async () => {
    const { agent, res, csrf } = await openPage('/signin', entry({ view: 'forgot' }));
    expect(res.text).toContain('action="/signin/forgot"');
    const mailDir = t.backend.config.mailDir;
    const before = new Set(fs.existsSync(mailDir) ? fs.readdirSync(mailDir) : []);
    const sent = await agent.post('/signin/forgot').type('form').send({ ...entry(), csrf, signInEmailAddress: 'page@example.com' });
    expect(sent.status).toBe(200);
    expect(sent.text).toContain('Check your inbox');
    await t.runtime.queue.idle?.();
    const files = fs.readdirSync(mailDir).filter((f) => !before.has(f));
    const mails = await Promise.all(files.map(async (f) => simpleParser(fs.readFileSync(path.join(mailDir, f)))));
    expect(mails.some((m) => /\/reset-password\?code=/.test(m.text ?? ''))).toBe(true);

    const again = await openPage('/signin', entry({ view: 'forgot' }));
    const unknown = await again.agent.post('/signin/forgot').type('form').send({ ...entry(), csrf: again.csrf, signInEmailAddress: 'nobody@example.com' });
    const api = await request(t.app).post('/oauth/forgot_password_native').type('form')
      .send({ client_id: loginId, locale: 'en-US', redirect_uri: `${t.backend.config.publicBaseUrl}/reset-password`, signInEmailAddress: 'nobody@example.com' });
    expect(api.body).toMatchObject({ code: 212, error: 'no_such_account' });
    // the same status and the same words as for an address an account has: the page tells no one who has an account
    expect(unknown.status).toBe(sent.status);
    const said = (html: string) => /<p class="notice done" role="status">([^<]*)<\/p>/.exec(html)?.[1];
    expect(said(unknown.text)).toBe(said(sent.text));
    expect(said(sent.text)).toContain('If an account uses this address');
  });

  it('login_hint fills in the sign-in form\'s identifier (an OpenID app passes it on)', async () => {
    const res = await request(t.app).get('/signin').query(entry({ login_hint: 'ada@example.com' }));
    expect(res.text).toMatch(/name="signInEmailAddress"[^>]*value="ada@example.com"|value="ada@example.com"[^>]*name="signInEmailAddress"/);
    const escaped = await request(t.app).get('/signin').query(entry({ login_hint: '"><script>x</script>' }));
    expect(escaped.text).not.toContain('<script>x</script>');
  });

  it('holds the API\'s limits: too many failed sign-ins from one address get 429 and a wait', async () => {
    let last: request.Response | undefined;
    for (let i = 0; i < 8; i++) {
      const { agent, csrf } = await openPage('/signin');
      last = await agent.post('/signin').type('form').send({ ...entry(), csrf, signInEmailAddress: `guess${i}@example.com`, currentPassword: 'wrong password' });
      if (last.status === 429) break;
    }
    expect(last!.status).toBe(429);
    expect(Number(last!.headers['retry-after'])).toBeGreaterThan(0);
    expect(messageOf(last!.text)).toMatch(/Too many attempts\. Try again in \d+ seconds\./);
  });

  it('pages and emails share the application\'s colour and logo; a colour that does not read gets dark text', async () => {
    await admin('/settings/set_default', { key: 'brand_color', value: '#FFD200' });
    await admin('/settings/set_default', { key: 'logo_url', value: 'https://cdn.acme.example/logo.png' });
    clock.advance(6_000);
    const { agent, res, csrf } = await openPage('/signin', entry({ view: 'forgot' }));
    expect(res.text).toContain('background:#ffd200;color:#1f2933');
    expect(res.text).toContain('<img src="https://cdn.acme.example/logo.png" alt="">');
    expect(res.headers['content-security-policy']).toContain('img-src https://cdn.acme.example');
    const mailDir = t.backend.config.mailDir;
    const before = new Set(fs.readdirSync(mailDir));
    clock.advance(901_000); // past the sign-in limit of the test before
    expect((await agent.post('/signin/forgot').type('form').send({ ...entry(), csrf, signInEmailAddress: 'page@example.com' })).status).toBe(200);
    await t.runtime.queue.idle?.();
    const file = fs.readdirSync(mailDir).find((f) => !before.has(f))!;
    const mail = await simpleParser(fs.readFileSync(path.join(mailDir, file)));
    expect(mail.html).toContain('#ffd200');
    expect(mail.html).toContain('src="https://cdn.acme.example/logo.png"');

    // not a colour, not a URL: refused when set, saying the form expected
    for (const [key, value] of [['brand_color', 'red;}body{display:none'], ['logo_url', 'javascript:alert(1)'], ['logo_url', 'http://[::1']]) {
      expect((await admin('/settings/set_default', { key, value })).body).toMatchObject({ stat: 'error', code: 200, argument_name: 'value', error_description: expect.stringContaining('such as') });
    }
    // a value stored before settings were checked is ignored, never fatal to a page
    const local = (await t.runtime.db.applications.findByName('local'))!;
    await t.runtime.db.transaction((tx) => t.runtime.db.applications.mutateSettings(local.id, (s) => ({ ...s, brand_color: 'red;}body{display:none', logo_url: 'http://[::1' }), clock.now(), tx));
    clock.advance(6_000);
    const stale = await openPage('/signin');
    expect(stale.res.status).toBe(200);
    expect(stale.res.text).toContain('background:#3b4cca;color:#ffffff');
    expect(stale.res.text).not.toContain('<img');
    // an empty value clears a setting
    expect((await admin('/settings/set_default', { key: 'logo_url', value: '' })).body).toEqual({ stat: 'ok', result: true });
    expect((await admin('/settings/set_default', { key: 'brand_color', value: '' })).body).toEqual({ stat: 'ok', result: true });
    clock.advance(6_000);
    const plain = await openPage('/signin');
    expect(plain.res.text).toContain('background:#3b4cca;color:#ffffff');
    expect(plain.res.text).not.toContain('<img');
    expect(plain.res.headers['content-security-policy']).not.toContain('img-src');
  });
});
