import request from 'supertest';
import { manualClock } from '../helpers/backend';
import { servedTestApp } from '../helpers/browser';
import { APP, oidcSignIn } from '../helpers/oidc-sign-in';
import { cookieBrowser, firstForm } from '../helpers/social';

// The OpenID provider's edges (docs/hardening.md): every answer of the mounted provider is
// Gatehouse's (its error pages, its JSON errors, with the headers every answer has); a logout the
// person declines changes nothing; a browser signed in as one account can sign in as another; an
// authorization request sent as a form works as a link does.

const clock = manualClock();
let served: Awaited<ReturnType<typeof servedTestApp>>;
let s: ReturnType<typeof oidcSignIn>;

/** The headers every answer of Gatehouse's has. */
const expectEnvelope = (res: { headers: Record<string, string> }) => {
  expect(res.headers['x-request-id']).toMatch(/^[0-9a-f]{16}$/);
  expect(res.headers['cache-control']).toBe('no-store');
  expect(res.headers['x-content-type-options']).toBe('nosniff');
};
/** ...and every page. */
const expectPage = (res: { headers: Record<string, string>; text: string }) => {
  expectEnvelope(res);
  expect(res.headers['content-type']).toMatch(/^text\/html/);
  expect(res.headers['content-security-policy']).toMatch(/default-src 'none'/);
  expect(res.headers['x-frame-options']).toBe('DENY');
  expect(res.text).not.toMatch(/"error"|at .*\.js:\d+/);
};

beforeAll(async () => {
  served = await servedTestApp({ clock, env: { LOGIN_LIMIT_ADDRESS: '10000/900' } });
  s = oidcSignIn(served, clock);
  // one redirect URI and one post-logout URI: the provider falls back to the only one when a request names none
  expect((await s.admin('/settings/set', { for_client_id: s.login.client_id, key: 'redirect_uris', value: APP })).body.stat).toBe('ok');
  expect((await s.admin('/settings/set', { for_client_id: s.login.client_id, key: 'post_logout_redirect_uris', value: 'https://app.example.com/out' })).body.stat).toBe('ok');
  clock.advance(5_100);
});
afterAll(async () => {
  await served?.close();
});

describe('every answer is Gatehouse\'s', () => {
  it('a resume naming no live interaction: 400, the error page "start again", the full header set (it was a bare 500)', async () => {
    for (const query of ['', `?client_id=${s.login.client_id}`, `?client_id=${s.login.client_id}&redirect_uri=${encodeURIComponent(APP)}`]) {
      const res = await request(served.t.app).get(`/oidc/auth/${'a'.repeat(30)}${query}`);
      expect(res.status).toBe(400);
      expectPage(res);
      expect(res.text).toContain('Start it again');
    }
  });

  it('the logout\'s errors are the error page, whatever the browser accepts; the JSON endpoints\' errors carry the request id', async () => {
    for (const accept of ['*/*', 'application/json', 'text/html']) {
      const res = await request(served.t.app).get(`/oidc/session/end?client_id=${s.login.client_id}&post_logout_redirect_uri=https://evil.example/`).set('Accept', accept);
      expect(res.status).toBe(400);
      expectPage(res);
      expect(res.headers.location).toBeUndefined();
    }
    const token = await request(served.t.app).post('/oidc/token').type('form').send({ grant_type: 'authorization_code', code: 'x', client_id: 'nobody', client_secret: 'x' });
    expect(token.status).toBe(401);
    expectEnvelope(token);
    expect(token.body).toEqual({ error: 'invalid_client', error_description: expect.any(String), request_id: token.headers['x-request-id'] });
  });

  it('an authorization request sent as a form POST (OpenID Connect Core 3.1.2.1) is the request a link makes', async () => {
    const a = await s.account();
    const config = await s.discovered();
    const browser = cookieBrowser();
    const stopAt = (next: URL) => next.origin !== served.base;
    const state = s.oidc.randomState();
    const verifier = s.oidc.randomPKCECodeVerifier();
    const form = {
      client_id: s.login.client_id, response_type: 'code', scope: 'openid email', redirect_uri: APP, state, nonce: 'n-1',
      code_challenge: await s.oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256',
    };
    let page = await browser.go(`${served.base}/oidc/auth`, { method: 'POST', form, stopAt });
    expect(new URL(page.url).pathname).toBe('/signin');
    const signIn = firstForm(page.body, page.url);
    page = await browser.go(signIn.action, { method: 'POST', form: { ...signIn.fields, signInEmailAddress: a.email, currentPassword: 'correct horse battery' }, stopAt });
    const back = new URL(page.url);
    expect(back.searchParams.get('state')).toBe(state);
    expect(back.searchParams.get('code')).toBeTruthy();
    const tokens = await s.oidc.authorizationCodeGrant(config, back, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: 'n-1' });
    expect(tokens.claims()!.sub).toBe(a.uuid);
    // a form the provider cannot take is refused as a page, never a 404
    const wrong = await request(served.t.app).post('/oidc/auth').type('json').send({ client_id: s.login.client_id });
    expect(wrong.status).toBe(415);
    expectPage(wrong);
    const nul = await request(served.t.app).post('/oidc/auth').type('form').send(`client_id=a%00b&response_type=code`);
    expect(nul.status).toBe(400);
    expectPage(nul);
  });
});

it('login_hint reaches the hosted sign-in, typed in', async () => {
  const config = await s.discovered();
  const url = s.oidc.buildAuthorizationUrl(config, {
    redirect_uri: APP, scope: 'openid', login_hint: 'ada@example.com', code_challenge: await s.oidc.calculatePKCECodeChallenge(s.oidc.randomPKCECodeVerifier()), code_challenge_method: 'S256',
  });
  const page = await cookieBrowser().go(url.toString(), { stopAt: (next) => next.origin !== served.base });
  expect(new URL(page.url).pathname).toBe('/signin');
  expect(page.body).toContain('value="ada@example.com"');
});

describe('a login client without redirect URIs', () => {
  it('introspects, revokes and gets its own tokens (grants that need no redirect): never invalid_redirect_uri', async () => {
    const added = await s.admin('/clients/add', { description: 'a backend', features: '["login_client"]' });
    expect(added.body.stat).toBe('ok');
    const auth = [added.body.client_id as string, added.body.client_secret as string] as const;
    clock.advance(5_100);
    const introspected = await request(served.t.app).post('/oidc/token/introspection').auth(...auth).type('form').send({ token: 'not a token' });
    expect([introspected.status, introspected.body]).toEqual([200, { active: false }]);
    const revoked = await request(served.t.app).post('/oidc/token/revocation').auth(...auth).type('form').send({ token: 'not a token' });
    expect(revoked.status).toBe(200);
    // a code it cannot have had: the grant's own answer, not a complaint about its settings
    const code = await request(served.t.app).post('/oidc/token').auth(...auth).type('form').send({ grant_type: 'authorization_code', code: 'x'.repeat(43), redirect_uri: APP });
    expect(code.body.error).not.toBe('invalid_redirect_uri');
    expect(code.status).toBe(400);
    // with the client credentials grant, a token for itself
    expect((await s.admin('/settings/set', { for_client_id: auth[0], key: 'grant_types', value: 'client_credentials authorization_code' })).body.stat).toBe('ok');
    clock.advance(5_100);
    const own = await request(served.t.app).post('/oidc/token').auth(...auth).type('form').send({ grant_type: 'client_credentials' });
    expect([own.status, own.body.token_type]).toEqual([200, 'Bearer']);
  });
});

describe('logout', () => {
  it('"stay signed in" leaves the provider\'s session and the account page\'s as they were, and goes back to the app with its state', async () => {
    const a = await s.account();
    const config = await s.discovered();
    const first = await s.authorize(config, a.email);
    const tokens = await s.oidc.authorizationCodeGrant(config, first.back, { pkceCodeVerifier: first.verifier, expectedState: first.state, expectedNonce: first.nonce });
    const stopAt = (next: URL) => next.origin !== served.base;
    const end = s.oidc.buildEndSessionUrl(config, { id_token_hint: tokens.id_token!, post_logout_redirect_uri: 'https://app.example.com/out', state: 'kept' });
    const question = await first.browser.go(end.toString(), { stopAt });
    expect(question.body).toContain('Do you want to sign out of');
    const stay = /<a class="button secondary" href="([^"]+)"/.exec(question.body)![1].replace(/&amp;/g, '&');
    expect(stay).toBe('https://app.example.com/out?state=kept');
    // the browser follows the link: the app gets its page back, Gatehouse is not called
    const silent = await s.authorize(config, a.email, { prompt: 'none', scope: 'openid' }, first.browser);
    expect(silent.back.searchParams.get('code')).toBeTruthy();
    const account = await first.browser.go(`${served.base}/account?client_id=${s.login.client_id}`, { stopAt });
    expect(new URL(account.url).pathname).toBe('/account');
    // the app's grant is not revoked either: its refresh token still works
    expect((await s.oidc.refreshTokenGrant(config, tokens.refresh_token!)).access_token).toEqual(expect.any(String));
  });
});

describe('logout declined, then the app goes on', () => {
  it('after "stay signed in", the app\'s grant answers as before: its refresh token, and a silent sign-in with the scopes it had', async () => {
    const a = await s.account();
    const config = await s.discovered();
    const first = await s.authorize(config, a.email);
    const tokens = await s.oidc.authorizationCodeGrant(config, first.back, { pkceCodeVerifier: first.verifier, expectedState: first.state, expectedNonce: first.nonce });
    const stopAt = (next: URL) => next.origin !== served.base;
    const end = s.oidc.buildEndSessionUrl(config, { id_token_hint: tokens.id_token! });
    const question = await first.browser.go(end.toString(), { stopAt });
    const stay = /<a class="button secondary" href="([^"]+)"/.exec(question.body)![1].replace(/&amp;/g, '&');
    // the link back: where the app is (not Gatehouse), or the account page (followed, as a browser does)
    const back = new URL(stay, served.base);
    if (back.origin === served.base) await first.browser.go(back.toString(), { stopAt });
    await first.browser.go(`${served.base}/account?client_id=${s.login.client_id}`, { stopAt });
    const refreshed = await s.oidc.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.access_token).toEqual(expect.any(String));
    // the same scopes, silently (offline_access included): the grant holds them
    const silent = await s.authorize(config, a.email, { prompt: 'none' }, first.browser);
    expect(silent.back.searchParams.get('error')).toBeNull();
    expect(silent.back.searchParams.get('code')).toBeTruthy();
    expect((await s.oidc.refreshTokenGrant(config, refreshed.refresh_token!)).access_token).toEqual(expect.any(String));
  });
});

describe('the logout question answered without its "yes"', () => {
  it('a form posted without logout=yes (none, "no", "maybe") changes nothing: the app\'s grant, its silent sign-in and the session stay, the browser goes back to the app', async () => {
    const a = await s.account();
    const config = await s.discovered();
    const first = await s.authorize(config, a.email);
    const tokens = await s.oidc.authorizationCodeGrant(config, first.back, { pkceCodeVerifier: first.verifier, expectedState: first.state, expectedNonce: first.nonce });
    const stopAt = (next: URL) => next.origin !== served.base;
    let refresh = tokens.refresh_token!;
    for (const answer of [{}, { logout: 'no' }, { logout: 'maybe' }] as Record<string, string>[]) {
      const end = s.oidc.buildEndSessionUrl(config, { id_token_hint: tokens.id_token!, post_logout_redirect_uri: 'https://app.example.com/out', state: 'kept' });
      const question = await first.browser.go(end.toString(), { stopAt });
      const form = firstForm(question.body, question.url);
      const left = await first.browser.go(form.action, { method: 'POST', form: { ...form.fields, ...answer }, stopAt });
      expect(left.url).toBe('https://app.example.com/out?state=kept');
      const silent = await s.authorize(config, a.email, { prompt: 'none' }, first.browser);
      expect(silent.back.searchParams.get('error')).toBeNull();
      expect(silent.back.searchParams.get('code')).toBeTruthy();
      refresh = (await s.oidc.refreshTokenGrant(config, refresh)).refresh_token!;
      expect(refresh).toEqual(expect.any(String));
    }
    const account = await first.browser.go(`${served.base}/account?client_id=${s.login.client_id}`, { stopAt });
    expect(new URL(account.url).pathname).toBe('/account');
    // and a "yes" still signs out
    const end = s.oidc.buildEndSessionUrl(config, { id_token_hint: tokens.id_token! });
    const question = await first.browser.go(end.toString(), { stopAt });
    const form = firstForm(question.body, question.url);
    await first.browser.go(form.action, { method: 'POST', form: { ...form.fields, logout: 'yes' }, stopAt });
    expect((await s.authorize(config, a.email, { prompt: 'none', scope: 'openid' }, first.browser)).back.searchParams.get('error')).toBe('login_required');
  });
});

describe('switching accounts in one browser', () => {
  it('X is signed in; Y signs in with prompt=login: the sign-in ends in a code for Y, and the browser\'s session is Y\'s', async () => {
    const x = await s.account();
    const y = await s.account();
    const config = await s.discovered();
    const first = await s.authorize(config, x.email);
    expect(first.back.searchParams.get('code')).toBeTruthy();
    let signIn = await s.authorize(config, y.email, { prompt: 'login' }, first.browser);
    expect(signIn.asked).toBe(true);
    // the provider signs X out of its own session first, by a form the browser posts by itself (a script): posted here
    const stopAt = (next: URL) => next.origin !== served.base;
    if (signIn.back.origin === served.base && signIn.page.body.includes('<form')) {
      const form = firstForm(signIn.page.body, signIn.page.url);
      const page = await first.browser.go(form.action, { method: 'POST', form: form.fields, stopAt });
      signIn = { ...signIn, back: new URL(page.url), page };
    }
    expect(signIn.back.searchParams.get('error')).toBeNull();
    const tokens = await s.oidc.authorizationCodeGrant(config, signIn.back, { pkceCodeVerifier: signIn.verifier, expectedState: signIn.state, expectedNonce: signIn.nonce });
    expect(tokens.claims()!.sub).toBe(y.uuid);
    // Y's session answers the next silent sign-in
    const silent = await s.authorize(config, y.email, { prompt: 'none', scope: 'openid' }, first.browser);
    const again = await s.oidc.authorizationCodeGrant(config, silent.back, { pkceCodeVerifier: silent.verifier, expectedState: silent.state, expectedNonce: silent.nonce });
    expect(again.claims()!.sub).toBe(y.uuid);
  });

  it('a provider session planted in a browser signed in as someone else is refused (the browser\'s session answers)', async () => {
    const victim = await s.account();
    const attacker = await s.account();
    const config = await s.discovered();
    const mine = await s.authorize(config, victim.email);
    const theirs = await s.authorize(config, attacker.email);
    // the attacker's provider session cookies copied into the victim's browser
    for (const [key, cookie] of theirs.browser.jar) if (cookie.name.startsWith('_session')) mine.browser.jar.set(key, cookie);
    const silent = await s.authorize(config, victim.email, { prompt: 'none', scope: 'openid' }, mine.browser);
    const code = silent.back.searchParams.get('code');
    if (code) {
      const tokens = await s.oidc.authorizationCodeGrant(config, silent.back, { pkceCodeVerifier: silent.verifier, expectedState: silent.state, expectedNonce: silent.nonce });
      expect(tokens.claims()!.sub).not.toBe(attacker.uuid);
    } else {
      expect(silent.back.searchParams.get('error')).toBe('login_required');
    }
  });
});
