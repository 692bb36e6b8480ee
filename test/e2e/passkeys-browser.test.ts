import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { Browser, BrowserContext, CDPSession, Page } from 'playwright-core';
import request from 'supertest';
import { sha256Hex } from '../../src/domain/secrets';
import { basic, manualClock, skipUnless, type TestApp } from '../helpers/backend';
import { freePort } from '../helpers/processes';
import { CHROMIUM, launchChromium, servedTestApp } from '../helpers/browser';
import { stored } from '../helpers/stored';

// Passkeys (docs/passkeys.md) end to end: headless Chromium with the DevTools protocol's virtual
// authenticator (CTAP2, internal transport, resident keys, user verification) makes and uses the
// credentials; a page of the application's own origin calls the API directly (CORS, the login
// client's allowed_origins), as a browser app does. Replays, another origin and another account's
// passkey are refused.

/** What the page runs: the API from the app's origin, and the browser's WebAuthn with the options it answered. */
const PAGE = `<!doctype html><meta charset="utf-8"><title>app</title><script>
window.api = async (base, path, params) => {
  const res = await fetch(base + path, { method: 'POST', body: new URLSearchParams(params) });
  return res.json();
};
window.create = async (options) => (await navigator.credentials.create({ publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(options) })).toJSON();
window.get = async (options, mediation) => (await navigator.credentials.get({ publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(options), ...(mediation && { mediation }) })).toJSON();
</script><p>app</p>`;

const clock = manualClock();

skipUnless(fs.existsSync(CHROMIUM), `the browser test needs Chromium at ${CHROMIUM} (apt-get install chromium)`)('passkeys in a real browser', () => {
  let t: TestApp;
  let served: Awaited<ReturnType<typeof servedTestApp>>;
  let apps: http.Server[] = [];
  let browser: Browser;
  let base: string;
  let appOrigin: string;
  let strangerOrigin: string;
  let login: { client_id: string; client_secret: string };

  /** A static page server on 127.0.0.1 (reached as localhost): the app's origin, or a stranger's. */
  async function pageServer(): Promise<string> {
    const port = await freePort();
    const server = http.createServer((_req, res) => res.writeHead(200, { 'Content-Type': 'text/html' }).end(PAGE));
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    apps.push(server);
    return `http://localhost:${port}`;
  }

  beforeAll(async () => {
    served = await servedTestApp({ clock, env: { LOGIN_LIMIT_ADDRESS: '10000/900' } });
    ({ t, base } = served);
    appOrigin = await pageServer();
    strangerOrigin = await pageServer();
    login = t.local.clients.login;
    const owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
    for (const [key, value] of [['allowed_origins', appOrigin], ['redirect_uris', `${appOrigin}/callback`]]) {
      const set = await request(t.app).post('/settings/set').set('Authorization', owner).type('form').send({ for_client_id: login.client_id, key, value });
      expect(set.body.stat).toBe('ok');
    }
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    for (const s of apps) await new Promise<void>((resolve) => s.close(() => resolve()));
    apps = [];
    await served?.close();
  });

  /** A page of `origin` with a virtual authenticator of its own (a device). */
  async function device(origin: string, options: { userVerified?: boolean } = {}): Promise<{ page: Page; context: BrowserContext; cdp: CDPSession; authenticatorId: string }> {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${origin}/`);
    const cdp = await context.newCDPSession(page);
    await cdp.send('WebAuthn.enable');
    const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
      options: {
        // without user verification: a security key with no PIN, which proves presence only
        protocol: 'ctap2', transport: options.userVerified === false ? 'usb' : 'internal', hasResidentKey: options.userVerified !== false,
        hasUserVerification: options.userVerified ?? true, isUserVerified: options.userVerified ?? true, automaticPresenceSimulation: true,
      },
    });
    return { page, context, cdp, authenticatorId };
  }

  // the page's own functions (PAGE), called with JSON arguments
  const call = (page: Page, fn: string, ...args: unknown[]) =>
    page.evaluate(`window.${fn}(...${JSON.stringify(args)})`) as Promise<Record<string, any>>;
  const api = (page: Page, path: string, params: Record<string, string>) => call(page, 'api', base, path, params);
  const create = (page: Page, options: unknown) => call(page, 'create', options);
  const get = (page: Page, options: unknown) => call(page, 'get', options);

  /** A new account signed in just now (its fresh access token), with a password. */
  async function account(extra: Record<string, string> = {}) {
    const email = `pk-${Math.random().toString(36).slice(2)}@example.com`;
    const res = await request(t.app).post('/oauth/register_native_traditional').type('form').send({
      client_id: login.client_id, locale: 'en-US', emailAddress: email, newPassword: 'correct horse battery', newPasswordConfirm: 'correct horse battery',
      firstName: 'Ada', lastName: 'Lovelace', displayName: 'ada', ...extra,
    });
    expect(res.body.stat).toBe('ok');
    return { email, token: res.body.access_token as string, id: res.body.capture_user.id as number };
  }

  /** Adds a passkey of `page`'s authenticator to the account of `token`, from the app's page. */
  async function addPasskey(page: Page, token: string, name = 'Laptop') {
    const begun = await api(page, '/oauth/passkey_register_begin', { access_token: token });
    expect(begun).toMatchObject({ stat: 'ok', options: { rp: { id: 'localhost' }, authenticatorSelection: { residentKey: 'preferred', userVerification: 'preferred' } } });
    const credential = await create(page, begun.options);
    const finished = await api(page, '/oauth/passkey_register_finish', { access_token: token, credential: JSON.stringify(credential), name });
    expect(finished).toMatchObject({ stat: 'ok', passkey_id: expect.any(Number) });
    return { passkeyId: finished.passkey_id as number, credential, options: begun.options };
  }

  /** A discoverable sign-in's options and assertion, made on `page` (nothing typed); begun by the page, or by the test when the page's origin may not call. */
  async function assertion(page: Page, params: Record<string, string> = {}, from: 'page' | 'test' = 'page') {
    const begin = { client_id: login.client_id, ...params };
    const begun = from === 'page' ? await api(page, '/oauth/passkey_auth_begin', begin)
      : (await request(t.app).post('/oauth/passkey_auth_begin').type('form').send(begin)).body;
    expect(begun).toMatchObject({ stat: 'ok', challenge_token: expect.any(String), options: { rpId: 'localhost' } });
    return { challengeToken: begun.challenge_token as string, options: begun.options, credential: await get(page, begun.options) };
  }

  const signIn = (challengeToken: string, credential: unknown) => request(t.app).post('/oauth/passkey_auth_native').type('form')
    .send({ client_id: login.client_id, locale: 'en-US', challenge_token: challengeToken, credential: JSON.stringify(credential) });

  it('registers a passkey from the app\'s page, then signs in with it without an identifier, answering what a password sign-in answers', async () => {
    const a = await account();
    const d = await device(appOrigin);
    try {
      const { passkeyId } = await addPasskey(d.page, a.token);
      // excluded from a second registration of the same account: the authenticator refuses to make another
      const again = await api(d.page, '/oauth/passkey_register_begin', { access_token: a.token });
      expect(again.options.excludeCredentials).toHaveLength(1);
      await expect(create(d.page, again.options)).rejects.toThrow(/InvalidStateError|excluded|already/i);

      const { challengeToken, options, credential } = await assertion(d.page);
      expect(options.allowCredentials ?? []).toEqual([]);
      // the API straight from the app's page, with CORS
      const signed = await api(d.page, '/oauth/passkey_auth_native', {
        client_id: login.client_id, locale: 'en-US', challenge_token: challengeToken, credential: JSON.stringify(credential),
      });
      expect(signed).toMatchObject({ stat: 'ok', access_token: expect.any(String), capture_user: { email: a.email } });
      // the session knows how: a passkey that verified the person
      const [row] = await stored(t.runtime.db).rows<{ extra: string }>('SELECT extra FROM credentials WHERE value_hash = ?', [sha256Hex(signed.access_token)]);
      expect(JSON.parse(row.extra).session).toMatchObject({ amr: ['hwk', 'mfa'], factors: ['verified_passkey'] });

      // the list shows it with its counter's use; rename and remove it
      const listed = await api(d.page, '/oauth/passkeys_native', { access_token: a.token });
      expect(listed.passkeys).toEqual([expect.objectContaining({ id: passkeyId, name: 'Laptop', last_used: expect.any(String), transports: expect.arrayContaining(['internal']) })]);
      expect(await api(d.page, '/oauth/passkey_rename_native', { access_token: a.token, passkey_id: String(passkeyId), name: 'Work laptop' })).toEqual({ stat: 'ok' });
      expect((await api(d.page, '/oauth/passkeys_native', { access_token: a.token })).passkeys[0].name).toBe('Work laptop');
    } finally {
      await d.context.close();
    }
  });

  it('a replayed assertion, one for another challenge, one made on another origin, and an unknown credential are refused', async () => {
    const a = await account();
    const d = await device(appOrigin);
    const stranger = await device(strangerOrigin);
    try {
      await addPasskey(d.page, a.token);
      const first = await assertion(d.page);
      expect((await signIn(first.challengeToken, first.credential)).body.stat).toBe('ok');
      // the same again: its challenge is spent
      expect((await signIn(first.challengeToken, first.credential)).body).toMatchObject({ code: 200, argument_name: 'challenge_token' });
      // under a new challenge: the assertion signed the old one
      const fresh = await api(d.page, '/oauth/passkey_auth_begin', { client_id: login.client_id });
      expect((await signIn(fresh.challenge_token, first.credential)).body).toMatchObject({ code: 200, argument_name: 'credential' });

      // the same RP ID from an origin the application never named: the browser signs, the service refuses
      const transplanted = await d.cdp.send('WebAuthn.getCredentials', { authenticatorId: d.authenticatorId });
      for (const c of transplanted.credentials) await stranger.cdp.send('WebAuthn.addCredential', { authenticatorId: stranger.authenticatorId, credential: c });
      const foreign = await assertion(stranger.page, {}, 'test');
      const refused = await signIn(foreign.challengeToken, foreign.credential);
      expect(refused.body).toMatchObject({ stat: 'error', code: 210, argument_name: 'credential', error_description: expect.stringContaining('origin') });
      expect(refused.body.access_token).toBeUndefined();

      // a cloned authenticator: its copy of the key signs with a counter the service has seen passed
      const snapshot = (await d.cdp.send('WebAuthn.getCredentials', { authenticatorId: d.authenticatorId })).credentials;
      for (let n = 0; n < 2; n += 1) {
        const used = await assertion(d.page);
        expect((await signIn(used.challengeToken, used.credential)).body.stat).toBe('ok');
      }
      const clone = await device(appOrigin);
      try {
        for (const c of snapshot) await clone.cdp.send('WebAuthn.addCredential', { authenticatorId: clone.authenticatorId, credential: c });
        const cloned = await assertion(clone.page);
        expect((await signIn(cloned.challengeToken, cloned.credential)).body).toMatchObject({ code: 210, argument_name: 'credential', error_description: expect.stringMatching(/counter/i) });
      } finally {
        await clone.context.close();
      }

      // a credential no account registered
      const unknown = await device(appOrigin);
      try {
        const other = await account();
        const begun = await api(unknown.page, '/oauth/passkey_register_begin', { access_token: other.token });
        await create(unknown.page, begun.options); // made, never finished
        const made = await assertion(unknown.page);
        expect((await signIn(made.challengeToken, made.credential)).body).toMatchObject({ code: 210, argument_name: 'credential' });
      } finally {
        await unknown.context.close();
      }
    } finally {
      await d.context.close();
      await stranger.context.close();
    }
  });

  it('a passkey finishes a sign-in paused for its second factor; another account\'s passkey does not', async () => {
    const owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
    const a = await account();
    const b = await account();
    const d = await device(appOrigin);
    try {
      const mine = await addPasskey(d.page, a.token, 'A');
      await addPasskey(d.page, b.token, 'B');
      // second_factor=required: an account with passkeys signs in with one after its password
      expect((await request(t.app).post('/settings/set_default').set('Authorization', owner).type('form').send({ key: 'second_factor', value: 'required' })).body.stat).toBe('ok');
      clock.advance(5_100); // the application cache lives 5 s
      const paused = await request(t.app).post('/oauth/auth_native_traditional').type('form')
        .send({ client_id: login.client_id, locale: 'en-US', signInEmailAddress: b.email, currentPassword: 'correct horse battery' });
      expect(paused.body).toMatchObject({ code: 214, error: 'second_factor_required', methods: ['passkey'] });
      const begun = await api(d.page, '/oauth/passkey_auth_begin', { client_id: login.client_id, mfa_token: paused.body.mfa_token });
      expect(begun.options.allowCredentials).toHaveLength(1);
      const verify = (challenge: string, credential: unknown) => request(t.app).post('/oauth/mfa_verify_native').type('form')
        .send({ client_id: login.client_id, mfa_token: paused.body.mfa_token, challenge_token: challenge, credential: JSON.stringify(credential) });
      // A's passkey signing B's challenge: refused
      const wrong = await get(d.page, { ...begun.options, allowCredentials: [{ id: mine.credential.id, type: 'public-key' }] });
      expect((await verify(begun.challenge_token, wrong)).body).toMatchObject({ code: 210, argument_name: 'credential' });
      // its challenge is spent by the attempt
      expect((await verify(begun.challenge_token, wrong)).body).toMatchObject({ code: 200, argument_name: 'challenge_token' });
      // B's own
      const last = await api(d.page, '/oauth/passkey_auth_begin', { client_id: login.client_id, mfa_token: paused.body.mfa_token });
      const right = await get(d.page, last.options);
      const done = await verify(last.challenge_token, right);
      expect(done.body).toMatchObject({ stat: 'ok', access_token: expect.any(String), capture_user: { email: b.email } });
      const [row] = await stored(t.runtime.db).rows<{ extra: string }>('SELECT extra FROM credentials WHERE value_hash = ?', [sha256Hex(done.body.access_token)]);
      expect(JSON.parse(row.extra).session.factors).toEqual(['password', 'verified_passkey']);
    } finally {
      await request(t.app).post('/settings/set_default').set('Authorization', owner).type('form').send({ key: 'second_factor', value: 'optional' });
      clock.advance(5_100);
      await d.context.close();
    }
  });

  it('under required, a passkey added with the enroll_token of a sign-in finishes that sign-in; the next one asks for the passkey', async () => {
    const owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
    const a = await account();
    const d = await device(appOrigin);
    expect((await request(t.app).post('/settings/set_default').set('Authorization', owner).type('form').send({ key: 'second_factor', value: 'required' })).body.stat).toBe('ok');
    clock.advance(5_100); // the application cache lives 5 s
    try {
      const password = () => request(t.app).post('/oauth/auth_native_traditional').type('form')
        .send({ client_id: login.client_id, locale: 'en-US', signInEmailAddress: a.email, currentPassword: 'correct horse battery' });
      const sent = await password();
      expect(sent.body).toMatchObject({ code: 215, error: 'second_factor_enrollment_required', enroll_token: expect.any(String), methods: ['totp', 'passkey'] });
      const enroll = sent.body.enroll_token as string;
      // the ceremony and the calls from the app's page, which names its client so that it may read the answers
      const begun = await api(d.page, '/oauth/passkey_register_begin', { client_id: login.client_id, enroll_token: enroll });
      expect(begun).toMatchObject({ stat: 'ok', options: { rp: { id: 'localhost' } } });
      const credential = await create(d.page, begun.options);
      const finished = await api(d.page, '/oauth/passkey_register_finish', { client_id: login.client_id, enroll_token: enroll, credential: JSON.stringify(credential), name: 'Phone' });
      // the passkey, and what the password sign-in would have answered, its session knowing both factors
      expect(finished).toMatchObject({ stat: 'ok', passkey_id: expect.any(Number), access_token: expect.any(String), capture_user: { email: a.email } });
      const [row] = await stored(t.runtime.db).rows<{ extra: string }>('SELECT extra FROM credentials WHERE value_hash = ?', [sha256Hex(finished.access_token)]);
      expect(JSON.parse(row.extra).session.factors).toEqual(['password', 'passkey']);
      expect((await request(t.app).get('/entity').query({ access_token: finished.access_token })).body.stat).toBe('ok');
      // the enroll_token added its factor: it adds no other
      expect((await request(t.app).post('/oauth/passkey_register_begin').type('form').send({ enroll_token: enroll })).body).toMatchObject({ code: 200, argument_name: 'enroll_token' });
      // the next sign-in asks for the passkey after the password
      expect((await password()).body).toMatchObject({ code: 214, error: 'second_factor_required', methods: ['passkey'] });
    } finally {
      await request(t.app).post('/settings/set_default').set('Authorization', owner).type('form').send({ key: 'second_factor', value: 'optional' });
      clock.advance(5_100);
      await d.context.close();
    }
  });

  it('a passkey that did not verify the person is one factor: it never seconds itself, and under required it alone signs nobody in', async () => {
    const owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
    const a = await account();
    // a security key without a PIN: it proves presence, not who holds it
    const d = await device(appOrigin, { userVerified: false });
    try {
      await addPasskey(d.page, a.token);
      const enrolled = await request(t.app).post('/oauth/totp_enroll_native').type('form').send({ access_token: a.token });
      const code = execFileSync('oathtool', ['--totp', '-b', enrolled.body.secret, '-N', `@${Math.floor(clock.now().getTime() / 1000)}`], { encoding: 'utf8' }).trim();
      expect((await request(t.app).post('/oauth/totp_confirm_native').type('form').send({ access_token: a.token, code })).body.stat).toBe('ok');
      // not discoverable: the identifier names the account's passkeys
      const first = await assertion(d.page, { identifier: a.email });
      const paused = await signIn(first.challengeToken, first.credential);
      expect(paused.body).toMatchObject({ code: 214, methods: ['totp', 'recovery_code'] });
      // the same passkey as the second factor: refused before any challenge is made
      const begin = await request(t.app).post('/oauth/passkey_auth_begin').type('form').send({ client_id: login.client_id, mfa_token: paused.body.mfa_token });
      expect(begin.body).toMatchObject({ code: 540 });
      const other = await assertion(d.page, { identifier: a.email });
      const seconded = await request(t.app).post('/oauth/mfa_verify_native').type('form')
        .send({ client_id: login.client_id, mfa_token: paused.body.mfa_token, challenge_token: other.challengeToken, credential: JSON.stringify(other.credential) });
      expect(seconded.body).toMatchObject({ code: 200, argument_name: 'credential' });
      expect(seconded.body.access_token).toBeUndefined();

      // an account with passkeys only, under required: its unverified passkey alone gets nothing, not even an enroll_token
      const b = await account();
      await addPasskey(d.page, b.token, 'B');
      expect((await request(t.app).post('/settings/set_default').set('Authorization', owner).type('form').send({ key: 'second_factor', value: 'required' })).body.stat).toBe('ok');
      clock.advance(5_100);
      try {
        const alone = await assertion(d.page, { identifier: b.email });
        const refused = await signIn(alone.challengeToken, alone.credential);
        expect(refused.body).toMatchObject({ code: 210, argument_name: 'credential', message: expect.stringContaining('screen lock') });
        expect(refused.body.enroll_token).toBeUndefined();
        expect(refused.body.access_token).toBeUndefined();
      } finally {
        await request(t.app).post('/settings/set_default').set('Authorization', owner).type('form').send({ key: 'second_factor', value: 'optional' });
        clock.advance(5_100);
      }
    } finally {
      await d.context.close();
    }
  });

  it('an identifier without passkeys gets the same kind of answer as one with: credential ids that exist nowhere (ids alone), the same each time', async () => {
    const begin = (identifier: string) => request(t.app).post('/oauth/passkey_auth_begin').type('form').send({ client_id: login.client_id, identifier });
    const unknown = await begin('nobody-here@example.com');
    expect(unknown.body.options.allowCredentials.length).toBeGreaterThanOrEqual(1);
    for (const c of unknown.body.options.allowCredentials as Record<string, unknown>[]) expect(Object.keys(c)).toEqual(['id', 'type']);
    expect((await begin('nobody-here@example.com')).body.options.allowCredentials).toEqual(unknown.body.options.allowCredentials);
    expect((await begin('someone-else@example.com')).body.options.allowCredentials).not.toEqual(unknown.body.options.allowCredentials);
    expect((await begin('x'.repeat(300))).body).toMatchObject({ code: 200, argument_name: 'identifier' });
  });

  describe('the hosted sign-in page', () => {
    const entry = () => new URLSearchParams({ client_id: login.client_id, redirect_uri: `${appOrigin}/callback`, state: 'st', locale: 'en-US' }).toString();

    /** The code the page sent the app back with, exchanged: the account it signed in. */
    async function signedInAs(url: string) {
      const back = new URL(url);
      expect(back.searchParams.get('state')).toBe('st');
      const exchanged = await request(t.app).post('/oauth/token').auth(login.client_id, login.client_secret).type('form')
        .send({ grant_type: 'authorization_code', code: back.searchParams.get('code'), redirect_uri: `${appOrigin}/callback` });
      expect(exchanged.body).toMatchObject({ stat: 'ok', access_token: expect.any(String) });
      return (await request(t.app).get('/entity').query({ access_token: exchanged.body.access_token })).body.result.email as string;
    }

    it('offers "Sign in with a passkey": the passkey signs in without typing anything, and the app gets its code', async () => {
      const a = await account();
      const d = await device(appOrigin);
      try {
        await addPasskey(d.page, a.token);
        // a browser without the autofill of passkeys: the button
        await d.page.addInitScript('PublicKeyCredential.isConditionalMediationAvailable = async () => false');
        await d.page.goto(`${base}/signin?${entry()}`);
        await d.page.waitForSelector('#passkey-button:not([hidden])');
        await Promise.all([d.page.waitForURL(/\/callback\?/), d.page.click('#passkey-button')]);
        expect(await signedInAs(d.page.url())).toBe(a.email);
      } finally {
        await d.context.close();
      }
    });

    it('offers the passkeys in the identifier field\'s autofill (conditional mediation): picking one signs in', async () => {
      const a = await account();
      const d = await device(appOrigin);
      try {
        await addPasskey(d.page, a.token);
        // the virtual authenticator answers the autofill's request as a person picking the passkey does
        await Promise.all([d.page.waitForURL(/\/callback\?/), d.page.goto(`${base}/signin?${entry()}`)]);
        expect(await signedInAs(d.page.url())).toBe(a.email);
      } finally {
        await d.context.close();
      }
    });

    it('after the right password, a sign-in that owes a passkey finishes with one on the code step', async () => {
      const owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
      const a = await account();
      const d = await device(appOrigin);
      try {
        await addPasskey(d.page, a.token);
        expect((await request(t.app).post('/settings/set_default').set('Authorization', owner).type('form').send({ key: 'second_factor', value: 'required' })).body.stat).toBe('ok');
        clock.advance(5_100);
        // the autofill of passkeys off: the password typed
        await d.page.addInitScript('PublicKeyCredential.isConditionalMediationAvailable = async () => false');
        await d.page.goto(`${base}/signin?${entry()}`);
        await d.page.fill('#f-signInEmailAddress', a.email);
        await d.page.fill('#f-currentPassword', 'correct horse battery');
        await Promise.all([d.page.waitForSelector('#passkey-form[action="/signin/code"]'), d.page.click('form[action="/signin"] button[type=submit]')]);
        // no code to type: this account has no authenticator app
        expect(await d.page.locator('#code').count()).toBe(0);
        await d.page.waitForSelector('#passkey-button:not([hidden])');
        await Promise.all([d.page.waitForURL(/\/callback\?/), d.page.click('#passkey-button')]);
        expect(await signedInAs(d.page.url())).toBe(a.email);
      } finally {
        await request(t.app).post('/settings/set_default').set('Authorization', owner).type('form').send({ key: 'second_factor', value: 'optional' });
        clock.advance(5_100);
        await d.context.close();
      }
    });

    it('the identifier field is marked for the autofill of passkeys', async () => {
      const page = await browser.newPage();
      try {
        await page.goto(`${base}/signin?${entry()}`);
        expect(await page.getAttribute('#f-signInEmailAddress', 'autocomplete')).toBe('username webauthn');
      } finally {
        await page.close();
      }
    });

    it('asks for the authenticator\'s code after the right password (oathtool computes it), and a wrong one is said on its form', async () => {
      const a = await account();
      const enrolled = await request(t.app).post('/oauth/totp_enroll_native').type('form').send({ access_token: a.token });
      const code = (at: Date) => execFileSync('oathtool', ['--totp', '-b', enrolled.body.secret, '-N', `@${Math.floor(at.getTime() / 1000)}`], { encoding: 'utf8' }).trim();
      expect((await request(t.app).post('/oauth/totp_confirm_native').type('form').send({ access_token: a.token, code: code(clock.now()) })).body.stat).toBe('ok');
      clock.advance(30_000);
      const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
      const page = await context.newPage();
      try {
        await page.goto(`${base}/signin?${entry()}`);
        await page.fill('#f-signInEmailAddress', a.email);
        await page.fill('#f-currentPassword', 'correct horse battery');
        await Promise.all([page.waitForSelector('#code'), page.click('#signin-form button[type=submit], form[action="/signin"] button[type=submit]')]);
        expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
        await page.fill('#code', '000000');
        await Promise.all([page.waitForLoadState(), page.click('form[action="/signin/code"] button[type=submit]')]);
        expect(await page.textContent('main')).toContain('This code is not right');
        await page.fill('#code', code(clock.now()));
        await Promise.all([page.waitForURL(/\/callback\?/), page.click('form[action="/signin/code"] button[type=submit]')]);
        expect(new URL(page.url()).searchParams.get('code')).toMatch(/^[0-9a-f]{40}$/);
      } finally {
        await context.close();
      }
    });
  });
});
