import { createHash } from 'node:crypto';
import request from 'supertest';
import { newestMail } from '../../src/mail-files';
import { basic, manualClock, startTestApp, type TestApp } from '../helpers/backend';
import { stored } from '../helpers/stored';
import { oathtool } from '../helpers/totp';

// TOTP as a second factor (docs/second-factor.md) through the API, its codes computed by an
// independent implementation (oathtool, from Debian's oathtool package): enrollment, the paused
// sign-in and its mfa_token, the window's edges, replays, recovery codes, races and the budget.

/** The code oathtool computes for `secret` at `at` (RFC 6238: SHA-1, 6 digits, 30 s). */
// the start of a 30-second step, so that the edges of the window are known
const clock = manualClock(new Date(Math.floor(Date.now() / 30_000) * 30_000 + 5_000));
let t: TestApp;
let owner: string;
const PASSWORD = 'correct horse battery';
const later = (seconds: number) => new Date(clock.now().getTime() + seconds * 1000);

const post = (path: string, params: Record<string, string>) => request(t.app).post(path).type('form').send(params);
const signIn = (email: string, extra: Record<string, string> = {}) => post('/oauth/auth_native_traditional', {
  client_id: t.local.clients.login.client_id, locale: 'en-US', signInEmailAddress: email, currentPassword: PASSWORD, ...extra,
});
const verify = (mfaToken: string, proof: Record<string, string>) => post('/oauth/mfa_verify_native', { client_id: t.local.clients.login.client_id, mfa_token: mfaToken, ...proof });

/** A new account (with `attributes` beside its own), signed in just now: its email and a fresh access token. */
async function account(attributes: Record<string, string> = {}) {
  const email = `tf-${Math.random().toString(36).slice(2)}@example.com`;
  const created = await request(t.app).post('/entity.create').set('Authorization', owner).type('form')
    .send({ type_name: 'user', attributes: JSON.stringify({ email, password: PASSWORD, givenName: 'Ada', ...attributes }) });
  expect(created.body.stat).toBe('ok');
  const signed = await signIn(email);
  expect(signed.body.stat).toBe('ok');
  return { email, id: created.body.id as number, token: signed.body.access_token as string };
}

/** An account with its authenticator on: its secret and its recovery codes. */
async function withAuthenticator(attributes: Record<string, string> = {}) {
  const a = await account(attributes);
  const enrolled = await post('/oauth/totp_enroll_native', { access_token: a.token });
  expect(enrolled.body.stat).toBe('ok');
  const confirmed = await post('/oauth/totp_confirm_native', { access_token: a.token, code: oathtool(enrolled.body.secret, clock.now()) });
  expect(confirmed.body.stat).toBe('ok');
  return { ...a, secret: enrolled.body.secret as string, recoveryCodes: confirmed.body.recovery_codes as string[] };
}

beforeAll(async () => {
  t = await startTestApp({ clock, env: { LOGIN_LIMIT_ADDRESS: '10000/900' } });
  owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
});
afterAll(() => t.close());

describe('enrolling an authenticator app', () => {
  it('answers a base32 secret, its otpauth:// URI naming the application and the account, and a QR code; nothing changes until a first code confirms it', async () => {
    const a = await account();
    const res = await post('/oauth/totp_enroll_native', { access_token: a.token });
    expect(res.body).toMatchObject({ stat: 'ok', secret: expect.stringMatching(/^[A-Z2-7]{32}$/), qr_svg: expect.stringMatching(/^<svg[\s\S]*<\/svg>\s*$/) });
    const uri = new URL(res.body.otpauth_uri);
    expect(uri.protocol).toBe('otpauth:');
    expect(uri.searchParams.get('secret')).toBe(res.body.secret);
    expect(uri.searchParams.get('issuer')).toBe('Gatehouse'); // the app_name setting's default, as the emails and pages say it
    expect(decodeURIComponent(uri.pathname)).toContain(a.email);
    // not on yet: the password alone signs in
    expect((await signIn(a.email)).body.stat).toBe('ok');
    // the secret is stored sealed only
    const rows = await stored(t.runtime.db).rows<{ secret_sealed: string }>('SELECT secret_sealed FROM second_factors WHERE entity_id = ?', [a.id]);
    expect(rows).toHaveLength(1);
    expect(rows[0].secret_sealed).not.toContain(res.body.secret);
  });

  it('needs an access token of a sign-in within the last minutes, and a live one', async () => {
    const a = await account();
    const minted = await request(t.app).post('/access/getAccessToken').set('Authorization', owner).type('form').send({ type_name: 'user', id: String(a.id) });
    const old = await post('/oauth/totp_enroll_native', { access_token: minted.body.accessToken });
    expect(old.body).toMatchObject({ stat: 'error', code: 200, argument_name: 'access_token', error_description: expect.stringContaining('sign-in within the last 5 minutes') });
    for (const path of ['/oauth/totp_enroll_native', '/oauth/totp_confirm_native', '/oauth/totp_remove_native']) {
      expect((await post(path, { access_token: 'not-a-token', code: '123456' })).body).toMatchObject({ code: 413 });
    }
    expect((await post('/oauth/totp_enroll_native', {})).body).toMatchObject({ stat: 'error' });
  });

  it('a wrong first code is 210 naming the code, and the right one (oathtool\'s) turns it on: ten recovery codes once, and an email', async () => {
    const a = await account();
    const { secret } = (await post('/oauth/totp_enroll_native', { access_token: a.token })).body;
    const wrong = await post('/oauth/totp_confirm_native', { access_token: a.token, code: oathtool(secret, later(-600)) });
    expect(wrong.body).toMatchObject({ stat: 'error', code: 210, argument_name: 'code', message: expect.any(String) });
    expect((await post('/oauth/totp_confirm_native', { access_token: a.token })).body).toMatchObject({ code: 100, argument_name: 'code' });
    const ok = await post('/oauth/totp_confirm_native', { access_token: a.token, code: oathtool(secret, clock.now()) });
    expect(ok.body.recovery_codes).toHaveLength(10);
    expect(new Set(ok.body.recovery_codes).size).toBe(10);
    for (const code of ok.body.recovery_codes) expect(code).toMatch(/^[a-z2-9]{5}-[a-z2-9]{5}$/);
    await (t.runtime.queue as { idle?: () => Promise<void> }).idle?.();
    const mail = await newestMail(t.runtime.config.mailDir, a.email);
    expect(mail?.subject).toBe('Two-step sign-in is on for your Gatehouse account');
    // again: it is on already
    expect((await post('/oauth/totp_confirm_native', { access_token: a.token, code: oathtool(secret, clock.now()) })).body).toMatchObject({ code: 540 });
    expect((await post('/oauth/totp_enroll_native', { access_token: a.token })).body).toMatchObject({ code: 540 });
    // no secret or code in the outbox, the history or the audit log
    const kept = JSON.stringify([
      ...await stored(t.runtime.db).rows('SELECT payload FROM outbox'),
      ...await stored(t.runtime.db).rows('SELECT snapshot FROM entity_versions'),
      ...await stored(t.runtime.db).rows('SELECT data FROM audit_log'),
    ]);
    expect(kept).not.toContain(secret);
    for (const code of ok.body.recovery_codes) expect(kept).not.toContain(code);
  });
});

describe('a sign-in with a second factor', () => {
  it('pauses after the right password: 214 with an mfa_token and the methods, and no token; a wrong password is the usual 210', async () => {
    const a = await withAuthenticator();
    const paused = await signIn(a.email);
    expect(paused.body).toMatchObject({
      stat: 'error', code: 214, error: 'second_factor_required', mfa_token: expect.any(String), methods: ['totp', 'recovery_code'], expires_in: 300,
    });
    expect(paused.body.access_token).toBeUndefined();
    expect((await signIn(a.email, { currentPassword: 'not the password' })).body).toMatchObject({ code: 210 });
  });

  it('finishes with the answer of a password sign-in, its session knowing both factors; codes at the window\'s edges, never twice, never older', async () => {
    const a = await withAuthenticator(); // confirmed with the code of the current step
    clock.advance(60_000);
    // a step earlier than now is accepted (the phone's clock behind)...
    const first = await verify((await signIn(a.email)).body.mfa_token, { code: oathtool(a.secret, later(-30)) });
    expect(first.body).toMatchObject({ stat: 'ok', capture_user: { email: a.email }, access_token: expect.any(String) });
    expect(first.body.authorization_code).toBeUndefined();
    const [row] = await stored(t.runtime.db).rows<{ extra: string }>("SELECT extra FROM credentials WHERE kind = 'access_token' AND entity_id = ? ORDER BY id DESC LIMIT 1", [a.id]);
    expect(JSON.parse(row.extra).session.amr).toEqual(['pwd', 'otp']);
    // ...once
    expect((await verify((await signIn(a.email)).body.mfa_token, { code: oathtool(a.secret, later(-30)) })).body).toMatchObject({ code: 210, argument_name: 'code' });
    // a step later (the phone's clock ahead) is accepted; then the current step is older than the last used
    expect((await verify((await signIn(a.email)).body.mfa_token, { code: oathtool(a.secret, later(30)) })).body.stat).toBe('ok');
    expect((await verify((await signIn(a.email)).body.mfa_token, { code: oathtool(a.secret, clock.now()) })).body).toMatchObject({ code: 210 });
    // two steps away is outside the window
    expect((await verify((await signIn(a.email)).body.mfa_token, { code: oathtool(a.secret, later(60)) })).body).toMatchObject({ code: 210 });
    clock.advance(90_000);
    expect((await verify((await signIn(a.email)).body.mfa_token, { code: oathtool(a.secret, clock.now()) })).body.stat).toBe('ok');
  });

  it('keeps response_type and redirect_uri: a code sign-in answers the authorization code, which exchanges with the same redirect_uri', async () => {
    const a = await withAuthenticator();
    clock.advance(30_000);
    const paused = await signIn(a.email, { response_type: 'code', redirect_uri: 'https://app.example.com/cb' });
    const done = await verify(paused.body.mfa_token, { code: oathtool(a.secret, clock.now()) });
    expect(done.body).toMatchObject({ stat: 'ok', authorization_code: expect.any(String) });
    expect(done.body.access_token).toBeUndefined();
    const pair = await request(t.app).post('/oauth/token').set('Authorization', basic(t.local.clients.login.client_id, t.local.clients.login.client_secret)).type('form')
      .send({ grant_type: 'authorization_code', code: done.body.authorization_code, redirect_uri: 'https://app.example.com/cb' });
    expect(pair.body).toMatchObject({ stat: 'ok', access_token: expect.any(String), refresh_token: expect.any(String) });
  });

  it('an mfa_token is this client\'s, lives 5 minutes and signs in once; bad input is named', async () => {
    const a = await withAuthenticator();
    clock.advance(30_000);
    const token = (await signIn(a.email)).body.mfa_token as string;
    const other = await request(t.app).post('/clients/add').set('Authorization', owner).type('form').send({ description: 'other login', features: '["login_client"]' });
    expect((await post('/oauth/mfa_verify_native', { client_id: other.body.client_id, mfa_token: token, code: oathtool(a.secret, clock.now()) })).body)
      .toMatchObject({ code: 200, argument_name: 'mfa_token' });
    expect((await verify(token, {})).body).toMatchObject({ code: 100, argument_name: 'code' });
    expect((await post('/oauth/mfa_verify_native', { client_id: t.local.clients.login.client_id, code: '123456' })).body).toMatchObject({ code: 100, argument_name: 'mfa_token' });
    expect((await verify(token, { code: 'x'.repeat(65) })).body).toMatchObject({ code: 200, argument_name: 'code' });
    clock.advance(301_000);
    expect((await verify(token, { code: oathtool(a.secret, clock.now()) })).body).toMatchObject({ code: 200, argument_name: 'mfa_token' });
  });

  it('a recovery code signs in once, in any case and without its dash; another account\'s proves nothing', async () => {
    const a = await withAuthenticator();
    const b = await withAuthenticator();
    expect((await verify((await signIn(a.email)).body.mfa_token, { recovery_code: b.recoveryCodes[0] })).body).toMatchObject({ code: 210, argument_name: 'recovery_code' });
    const [code] = a.recoveryCodes;
    const done = await verify((await signIn(a.email)).body.mfa_token, { recovery_code: code.toUpperCase().replace('-', ' ') });
    expect(done.body).toMatchObject({ stat: 'ok', access_token: expect.any(String) });
    expect((await verify((await signIn(a.email)).body.mfa_token, { recovery_code: code })).body).toMatchObject({ code: 210, argument_name: 'recovery_code' });
  });
});

describe('a password reset through the API', () => {
  it('the emailed code of an account with a second factor exchanges for an mfa_token, not a session: the second factor then gives the pair, which sets the new password', async () => {
    const a = await withAuthenticator();
    const login = t.local.clients.login;
    const recoverUrl = (await request(t.app).get('/settings/items').query({ for_client_id: login.client_id }).set('Authorization', owner)).body.result.password_recover_url as string;
    expect((await post('/oauth/forgot_password_native', { client_id: login.client_id, locale: 'en-US', redirect_uri: recoverUrl, signInEmailAddress: a.email })).body.stat).toBe('ok');
    await (t.runtime.queue as { idle?: () => Promise<void> }).idle?.();
    const mail = await newestMail(t.runtime.config.mailDir, a.email);
    const code = new URL(mail!.link!).searchParams.get('code')!;
    const exchange = () => request(t.app).post('/oauth/token').set('Authorization', basic(login.client_id, login.client_secret)).type('form')
      .send({ grant_type: 'authorization_code', code, redirect_uri: recoverUrl });
    const paused = await exchange();
    expect(paused.body).toMatchObject({ stat: 'error', code: 214, error: 'second_factor_required', mfa_token: expect.any(String), methods: ['totp', 'recovery_code'] });
    expect(paused.body.access_token).toBeUndefined();
    // the code is spent: the mailbox alone never gives a session
    expect((await exchange()).body).toMatchObject({ code: 413 });
    expect((await verify(paused.body.mfa_token, { code: '000000' })).body).toMatchObject({ code: 210, argument_name: 'code' });
    clock.advance(30_000);
    const pair = await verify(paused.body.mfa_token, { code: oathtool(a.secret, clock.now()) });
    expect(pair.body).toMatchObject({ stat: 'ok', access_token: expect.any(String), refresh_token: expect.any(String), expires_in: expect.any(Number) });
    expect(pair.body.capture_user).toBeUndefined();
    // the pair is the reset's: it sets a password without the current one
    const set = await post('/oauth/update_profile_native', {
      client_id: login.client_id, locale: 'en-US', access_token: pair.body.access_token, form: 'newPasswordFormNoAuth',
      newPassword: 'a brand new password', newPasswordConfirm: 'a brand new password',
    });
    expect(set.body).toEqual({ stat: 'ok' });
    expect((await verify(paused.body.mfa_token, { code: oathtool(a.secret, later(30)) })).body).toMatchObject({ code: 200, argument_name: 'mfa_token' });
  });
});

describe('races and budgets', () => {
  it('one recovery code sent 20 times at once with one mfa_token: one sign-in', async () => {
    const a = await withAuthenticator();
    const token = (await signIn(a.email)).body.mfa_token as string;
    const answers = await Promise.all(Array.from({ length: 20 }, () => verify(token, { recovery_code: a.recoveryCodes[1] })));
    expect(answers.filter((r) => r.body.stat === 'ok')).toHaveLength(1);
  });

  it('one mfa_token sent 20 times at once, each with a different right proof: one sign-in', async () => {
    const a = await withAuthenticator();
    clock.advance(30_000);
    const token = (await signIn(a.email)).body.mfa_token as string;
    const proofs = [...a.recoveryCodes.map((c) => ({ recovery_code: c })), ...Array.from({ length: 10 }, () => ({ code: oathtool(a.secret, clock.now()) }))];
    const answers = await Promise.all(proofs.map((p) => verify(token, p)));
    expect(answers.filter((r) => r.body.stat === 'ok')).toHaveLength(1);
  });

  it('20 wrong codes at once draw on the account\'s password budget: with the paused sign-in\'s own attempt, 10 are checked, the others refused unchecked, and the password too', async () => {
    const a = await withAuthenticator();
    const token = (await signIn(a.email)).body.mfa_token as string;
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => verify(token, { code: String(100000 + i) })));
    // the sign-in that paused keeps its attempt in the account's count: 9 codes are checked
    expect(answers.filter((r) => r.body.code === 210)).toHaveLength(9);
    expect(answers.filter((r) => r.body.code === 510)).toHaveLength(11);
    // the budget is the password's: the account is locked for sign-ins too
    expect((await signIn(a.email)).body).toMatchObject({ code: 510 });
  });

  it('the right password does not renew the budget the codes draw on: only a right code does', async () => {
    const a = await withAuthenticator(); // its sign-in and confirmation cleared the account's count
    const token = (await signIn(a.email)).body.mfa_token as string; // 1 attempt, kept
    for (let i = 0; i < 8; i++) expect((await verify(token, { code: String(200000 + i) })).body.code).toBe(210); // 9
    const again = await signIn(a.email); // 10: checked, paused, and kept
    expect(again.body.code).toBe(214);
    expect((await verify(again.body.mfa_token, { code: '123456' })).body).toMatchObject({ code: 510 });
  });
});

describe('new recovery codes', () => {
  it('a current code gets ten new ones, shown once; the old ones stop working; a code is taken once', async () => {
    const a = await withAuthenticator();
    clock.advance(30_000);
    expect((await post('/oauth/recovery_codes_native', { access_token: a.token, code: '000000' })).body).toMatchObject({ code: 210, argument_name: 'code' });
    expect((await post('/oauth/recovery_codes_native', { access_token: a.token })).body).toMatchObject({ code: 100, argument_name: 'code' });
    const code = oathtool(a.secret, clock.now());
    const renewed = await post('/oauth/recovery_codes_native', { access_token: a.token, code });
    expect(renewed.body.recovery_codes).toHaveLength(10);
    expect(renewed.body.recovery_codes).not.toContain(a.recoveryCodes[0]);
    // the same code again: taken
    expect((await post('/oauth/recovery_codes_native', { access_token: a.token, code })).body).toMatchObject({ code: 210, argument_name: 'code' });
    expect((await verify((await signIn(a.email)).body.mfa_token, { recovery_code: a.recoveryCodes[0] })).body).toMatchObject({ code: 210, argument_name: 'recovery_code' });
    expect((await verify((await signIn(a.email)).body.mfa_token, { recovery_code: renewed.body.recovery_codes[0] })).body).toMatchObject({ stat: 'ok' });
    // stored keyed: the table's hash is not the SHA-256 of the code
    const rows = await stored(t.runtime.db).rows<{ value_hash: string }>("SELECT value_hash FROM credentials WHERE kind = 'recovery_code' AND entity_id = ?", [a.id]);
    const plain = createHash('sha256').update(renewed.body.recovery_codes[1].replace('-', '')).digest('hex');
    expect(rows.map((r) => r.value_hash)).not.toContain(plain);
    // without an authenticator there are none to renew
    const b = await account();
    expect((await post('/oauth/recovery_codes_native', { access_token: b.token, code: '123456' })).body).toMatchObject({ code: 540 });
  });
});

describe('removing the authenticator', () => {
  it('needs a current code or the password; then the password alone signs in, the recovery codes are spent and an email says so', async () => {
    const a = await withAuthenticator();
    clock.advance(30_000);
    const signed = await verify((await signIn(a.email)).body.mfa_token, { code: oathtool(a.secret, clock.now()) });
    const token = signed.body.access_token as string;
    expect((await post('/oauth/totp_remove_native', { access_token: token })).body).toMatchObject({ code: 100, argument_name: 'code' });
    // the password proves it only in a session the authenticator proved too (not the token of the sign-in before it was on)
    expect((await post('/oauth/totp_remove_native', { access_token: a.token, currentPassword: PASSWORD })).body)
      .toMatchObject({ code: 200, argument_name: 'currentPassword' });
    expect((await post('/oauth/totp_remove_native', { access_token: token, currentPassword: 'wrong' })).body)
      .toMatchObject({ code: 210, argument_name: 'currentPassword' });
    // the code just used does not prove it again
    expect((await post('/oauth/totp_remove_native', { access_token: token, code: oathtool(a.secret, clock.now()) })).body).toMatchObject({ code: 210, argument_name: 'code' });
    expect((await post('/oauth/totp_remove_native', { access_token: token, currentPassword: PASSWORD })).body.stat).toBe('ok');
    expect((await signIn(a.email)).body).toMatchObject({ stat: 'ok', access_token: expect.any(String) });
    expect((await stored(t.runtime.db).rows("SELECT id FROM credentials WHERE kind = 'recovery_code' AND entity_id = ? AND used_at IS NULL", [a.id]))).toEqual([]);
    await (t.runtime.queue as { idle?: () => Promise<void> }).idle?.();
    expect((await newestMail(t.runtime.config.mailDir, a.email))?.subject).toBe('Two-step sign-in was turned off for your Gatehouse account');
    expect((await post('/oauth/totp_remove_native', { access_token: token, currentPassword: PASSWORD })).body).toMatchObject({ code: 540 });
  });

  it('the application\'s setting second_factor=off: no enrollment, and accounts with one sign in with the password', async () => {
    const a = await withAuthenticator();
    const set = (value: string) => request(t.app).post('/settings/set_default').set('Authorization', owner).type('form').send({ key: 'second_factor', value });
    expect((await set('sometimes')).body).toMatchObject({ code: 200, argument_name: 'value' });
    expect((await set('off')).body.stat).toBe('ok');
    clock.advance(5_100); // the application cache lives 5 s
    try {
      expect((await signIn(a.email)).body).toMatchObject({ stat: 'ok', access_token: expect.any(String) });
      const b = await account();
      expect((await post('/oauth/totp_enroll_native', { access_token: b.token })).body).toMatchObject({ code: 403, error: 'permission_error' });
      expect((await post('/oauth/totp_confirm_native', { access_token: b.token, code: '123456' })).body).toMatchObject({ code: 403, error: 'permission_error' });
    } finally {
      expect((await set('optional')).body.stat).toBe('ok');
      clock.advance(5_100);
    }
    expect((await signIn(a.email)).body).toMatchObject({ code: 214 });
  });
});

describe('a code whose time step was used already', () => {
  const USED = 'This code was used already. Wait for the next code your authenticator app shows, and type that one.';
  const WRONG = 'This code is not right. Type the code your authenticator app shows now.';
  const removeWith = (token: string, code: string) => post('/oauth/totp_remove_native', { access_token: token, code });
  const renewWith = (token: string, code: string) => post('/oauth/recovery_codes_native', { access_token: token, code });

  it('says so, not that the code is wrong, when it would remove the authenticator or renew the recovery codes', async () => {
    const a = await withAuthenticator();
    clock.advance(30_000);
    const code = oathtool(a.secret, clock.now());
    const token = (await verify((await signIn(a.email)).body.mfa_token, { code })).body.access_token as string;
    // the code that just signed in
    expect((await removeWith(token, code)).body).toMatchObject({ code: 210, argument_name: 'code', message: USED });
    expect((await renewWith(token, code)).body).toMatchObject({ code: 210, argument_name: 'code', message: USED });
    // a code of no step of the window is still a wrong one
    const wrong = code === '000000' ? '111111' : '000000';
    expect((await removeWith(token, wrong)).body).toMatchObject({ code: 210, argument_name: 'code', message: WRONG });
    // the step that renewed the codes removes nothing, and the next step's code does
    clock.advance(30_000);
    const next = oathtool(a.secret, clock.now());
    expect((await renewWith(token, next)).body.recovery_codes).toHaveLength(10);
    expect((await removeWith(token, next)).body).toMatchObject({ code: 210, argument_name: 'code', message: USED });
    clock.advance(30_000);
    expect((await removeWith(token, oathtool(a.secret, clock.now()))).body.stat).toBe('ok');
  });

  it('says so in the person\'s language', async () => {
    const a = await withAuthenticator({ locale: 'fr-FR' });
    const used = { code: 210, argument_name: 'code', message: 'Ce code a déjà servi. Attendez le code suivant de votre application d’authentification et saisissez-le.' };
    // the enrollment's own code
    const code = oathtool(a.secret, clock.now());
    expect((await renewWith(a.token, code)).body).toMatchObject(used);
    expect((await removeWith(a.token, code)).body).toMatchObject(used);
  });

  it('two sign-ins sent at once with one code: one signs in, the others are told the code was used', async () => {
    const a = await withAuthenticator();
    clock.advance(30_000);
    const code = oathtool(a.secret, clock.now());
    // each its own mfa_token, so that the code is what they race for (few enough to stay within the account's budget)
    const tokens: string[] = [];
    for (let i = 0; i < 4; i++) tokens.push((await signIn(a.email)).body.mfa_token as string);
    const answers = await Promise.all(tokens.map((mfaToken) => verify(mfaToken, { code })));
    expect(answers.filter((r) => r.body.stat === 'ok')).toHaveLength(1);
    for (const lost of answers.filter((r) => r.body.stat !== 'ok')) expect(lost.body).toMatchObject({ code: 210, argument_name: 'code', message: USED });
  });
});

describe('the application\'s setting second_factor=required', () => {
  it('an account without a second factor gets an enroll_token instead of a session: it adds an authenticator with it, then signs in with both', async () => {
    const created = await request(t.app).post('/entity.create').set('Authorization', owner).type('form')
      .send({ type_name: 'user', attributes: JSON.stringify({ email: `req-${Date.now()}@example.com`, password: PASSWORD }) });
    const email = (await request(t.app).post('/entity').set('Authorization', owner).type('form').send({ type_name: 'user', id: String(created.body.id) })).body.result.email as string;
    const set = (value: string) => request(t.app).post('/settings/set_default').set('Authorization', owner).type('form').send({ key: 'second_factor', value });
    expect((await set('required')).body.stat).toBe('ok');
    clock.advance(5_100); // the application cache lives 5 s
    try {
      const sent = await signIn(email);
      expect(sent.body).toMatchObject({ stat: 'error', code: 215, error: 'second_factor_enrollment_required', enroll_token: expect.any(String), methods: ['totp', 'passkey'], expires_in: 300 });
      expect(sent.body.access_token).toBeUndefined();
      const enroll = sent.body.enroll_token as string;
      // it is no access token: it reads nothing, changes nothing
      expect((await request(t.app).get('/entity').query({ access_token: enroll })).body).toMatchObject({ code: 413 });
      expect((await post('/oauth/totp_remove_native', { enroll_token: enroll, currentPassword: PASSWORD })).body).toMatchObject({ code: 100, argument_name: 'access_token' });
      expect((await post('/oauth/totp_enroll_native', { enroll_token: 'not-a-token' })).body).toMatchObject({ code: 200, argument_name: 'enroll_token' });
      const enrolled = await post('/oauth/totp_enroll_native', { enroll_token: enroll });
      expect(enrolled.body).toMatchObject({ stat: 'ok', secret: expect.any(String) });
      const firstCode = oathtool(enrolled.body.secret, clock.now());
      const confirmed = await post('/oauth/totp_confirm_native', { enroll_token: enroll, code: firstCode });
      expect(confirmed.body.recovery_codes).toHaveLength(10);
      // the code proved the authenticator: the sign-in that was sent to add it goes on, with what it would have answered
      expect(confirmed.body).toMatchObject({ stat: 'ok', access_token: expect.stringMatching(/^[0-9a-f]{40}$/), capture_user: { email } });
      expect((await request(t.app).get('/entity').query({ access_token: confirmed.body.access_token })).body.stat).toBe('ok');
      // it added one second factor; it adds no more
      expect((await post('/oauth/passkey_register_begin', { enroll_token: enroll })).body).toMatchObject({ code: 200, argument_name: 'enroll_token', error_description: expect.stringContaining('spent') });
      // a new sign-in pauses for the code: the enrollment's own code is used already, and says to wait for the next
      const pausedNow = await signIn(email);
      const replayed = await verify(pausedNow.body.mfa_token, { code: firstCode });
      expect(replayed.body).toMatchObject({ code: 210, argument_name: 'code', message: expect.stringContaining('used already') });
      clock.advance(30_000);
      const paused = await signIn(email);
      expect(paused.body).toMatchObject({ code: 214, methods: ['totp', 'recovery_code'] });
      expect((await verify(paused.body.mfa_token, { code: oathtool(enrolled.body.secret, clock.now()) })).body).toMatchObject({ stat: 'ok', access_token: expect.any(String) });
      // a registration creates the account, and gives it no session either: an enroll_token
      const registered = await post('/oauth/register_native_traditional', {
        client_id: t.local.clients.login.client_id, locale: 'en-US', emailAddress: `reg-req-${Date.now()}@example.com`,
        newPassword: PASSWORD, newPasswordConfirm: PASSWORD, firstName: 'Reg', lastName: 'Required', displayName: 'reg',
      });
      expect(registered.body).toMatchObject({ code: 215, error: 'second_factor_enrollment_required', enroll_token: expect.any(String) });
      expect(registered.body.access_token).toBeUndefined();
      const regEnrolled = await post('/oauth/totp_enroll_native', { enroll_token: registered.body.enroll_token });
      expect(regEnrolled.body).toMatchObject({ stat: 'ok', secret: expect.any(String) });
      // the registration's sign-in goes on once the authenticator is confirmed
      const regConfirmed = await post('/oauth/totp_confirm_native', { enroll_token: registered.body.enroll_token, code: oathtool(regEnrolled.body.secret, clock.now()) });
      expect(regConfirmed.body).toMatchObject({ stat: 'ok', recovery_codes: expect.any(Array), access_token: expect.any(String) });
      // an account without a second factor resetting its password: the emailed code gets no session either, only an enroll_token
      const otherEmail = `reset-req-${Date.now()}@example.com`;
      expect((await request(t.app).post('/entity.create').set('Authorization', owner).type('form')
        .send({ type_name: 'user', attributes: JSON.stringify({ email: otherEmail, password: PASSWORD }) })).body.stat).toBe('ok');
      const other = { email: otherEmail };
      const login = t.local.clients.login;
      const recoverUrl = (await request(t.app).get('/settings/items').query({ for_client_id: login.client_id }).set('Authorization', owner)).body.result.password_recover_url as string;
      expect((await post('/oauth/forgot_password_native', { client_id: login.client_id, locale: 'en-US', redirect_uri: recoverUrl, signInEmailAddress: other.email })).body.stat).toBe('ok');
      await (t.runtime.queue as { idle?: () => Promise<void> }).idle?.();
      const resetCode = new URL((await newestMail(t.runtime.config.mailDir, other.email))!.link!).searchParams.get('code')!;
      const exchanged = await request(t.app).post('/oauth/token').set('Authorization', basic(login.client_id, login.client_secret)).type('form')
        .send({ grant_type: 'authorization_code', code: resetCode, redirect_uri: recoverUrl });
      expect(exchanged.body).toMatchObject({ code: 215, enroll_token: expect.any(String) });
      expect(exchanged.body.access_token).toBeUndefined();
      // adding a factor with it gives no session: the mailbox alone signs nobody in
      const resetEnrolled = await post('/oauth/totp_enroll_native', { enroll_token: exchanged.body.enroll_token });
      const resetConfirmed = await post('/oauth/totp_confirm_native', { enroll_token: exchanged.body.enroll_token, code: oathtool(resetEnrolled.body.secret, clock.now()) });
      expect(resetConfirmed.body).toMatchObject({ stat: 'ok', recovery_codes: expect.any(Array) });
      expect(resetConfirmed.body.access_token).toBeUndefined();
      // five minutes later an enroll_token is gone
      clock.advance(301_000);
      expect((await post('/oauth/totp_enroll_native', { enroll_token: exchanged.body.enroll_token })).body).toMatchObject({ code: 200, argument_name: 'enroll_token' });
    } finally {
      expect((await set('optional')).body.stat).toBe('ok');
      clock.advance(5_100);
    }
  });
});

describe('the hosted sign-in page', () => {
  const APP = 'https://app.example.com/callback';
  beforeAll(async () => {
    const set = await request(t.app).post('/settings/set').set('Authorization', owner).type('form')
      .send({ for_client_id: t.local.clients.login.client_id, key: 'redirect_uris', value: APP });
    expect(set.body.stat).toBe('ok');
    clock.advance(5_100); // the client cache
  });
  const entry = { client_id: () => t.local.clients.login.client_id, redirect_uri: APP, locale: 'en-US', state: 'xyz' };
  const hiddenValue = (html: string, name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1];

  it('asks for the code after the right password, says a wrong one on its form, and goes to the app with a code once it is right', async () => {
    const a = await withAuthenticator();
    clock.advance(30_000);
    const agent = request.agent(t.app);
    const query = { client_id: entry.client_id(), redirect_uri: APP, locale: 'en-US', state: 'xyz' };
    const page = await agent.get('/signin').query(query);
    const fields = { ...query, csrf: hiddenValue(page.text, 'csrf')!, signInEmailAddress: a.email, currentPassword: PASSWORD };
    const step = await agent.post('/signin').type('form').send(fields);
    expect(step.status).toBe(200);
    expect(step.text).toContain('Enter your code');
    expect(step.text).toContain('autocomplete="one-time-code"');
    const mfaToken = hiddenValue(step.text, 'mfa_token')!;
    expect(mfaToken).toMatch(/^[0-9a-f]{40}$/);
    const codeStep = { ...query, csrf: hiddenValue(step.text, 'csrf')!, mfa_token: mfaToken };
    const wrong = await agent.post('/signin/code').type('form').send({ ...codeStep, code: '000000' === oathtool(a.secret, clock.now()) ? '111111' : '000000' });
    expect(wrong.status).toBe(400);
    expect(wrong.text).toContain('This code is not right.');
    const right = await agent.post('/signin/code').type('form').send({ ...codeStep, csrf: hiddenValue(wrong.text, 'csrf')!, code: oathtool(a.secret, clock.now()) });
    expect(right.status).toBe(303);
    const target = new URL(right.headers.location);
    expect(`${target.origin}${target.pathname}`).toBe(APP);
    expect(target.searchParams.get('state')).toBe('xyz');
    expect(target.searchParams.get('code')).toMatch(/^[0-9a-f]{40}$/);
    // the paused sign-in is spent: its form again goes back to the sign-in page
    const again = await agent.post('/signin/code').type('form').send({ ...codeStep, csrf: hiddenValue(wrong.text, 'csrf')!, recovery_code: a.recoveryCodes[0] });
    expect(again.status).toBe(400);
    expect(again.text).toContain('Sign in again.');
  });
});

describe('the hosted sign-in page under second_factor=required', () => {
  const APP = 'https://app.example.com/callback';
  it('after the password, an account without a second factor sets up its authenticator on the page: QR code, first code, recovery codes; that sign-in goes on to the app; the next asks for both', async () => {
    const login = t.local.clients.login.client_id;
    const admin = (path: string, body: Record<string, string>) => request(t.app).post(path).set('Authorization', owner).type('form').send(body);
    expect((await admin('/settings/set', { for_client_id: login, key: 'redirect_uris', value: APP })).body.stat).toBe('ok');
    const email = `page-req-${Date.now()}@example.com`;
    expect((await admin('/entity.create', { type_name: 'user', attributes: JSON.stringify({ email, password: PASSWORD }) })).body.stat).toBe('ok');
    expect((await admin('/settings/set_default', { key: 'second_factor', value: 'required' })).body.stat).toBe('ok');
    clock.advance(5_100);
    try {
      const agent = request.agent(t.app);
      const entry = { client_id: login, redirect_uri: APP, locale: 'en-US', state: 's' };
      const csrfOf = (html: string) => /name="csrf" value="([^"]*)"/.exec(html)![1];
      const page = await agent.get('/signin').query(entry);
      const enroll = await agent.post('/signin').type('form').send({ ...entry, csrf: csrfOf(page.text), signInEmailAddress: email, currentPassword: PASSWORD });
      expect(enroll.status).toBe(200);
      expect(enroll.text).toContain('Set up two-step sign-in');
      expect(enroll.text).toMatch(/<div class="qr"[^>]*><svg/);
      const secret = /<code id="secret">([A-Z2-7]+)<\/code>/.exec(enroll.text)![1];
      const enrollToken = /name="enroll_token" value="([^"]+)"/.exec(enroll.text)![1];
      // a wrong code: the same secret again, with what went wrong
      const wrong = await agent.post('/signin/enroll').type('form').send({ ...entry, csrf: csrfOf(enroll.text), enroll_token: enrollToken, secret, code: '000000' });
      expect(wrong.status).toBe(400);
      expect(wrong.text).toContain(`<code id="secret">${secret}</code>`);
      expect(wrong.text).toContain('This code is not right');
      const done = await agent.post('/signin/enroll').type('form').send({ ...entry, csrf: csrfOf(wrong.text), enroll_token: enrollToken, secret, code: oathtool(secret, clock.now()) });
      expect(done.status).toBe(200);
      expect(done.text.match(/<li><code>[a-z2-9]{5}-[a-z2-9]{5}<\/code><\/li>/g)).toHaveLength(10);
      // "continue": the enrollment proved the factor, the sign-in goes on to the app with a code (no password, no code again)
      expect(done.text).toContain('action="/signin/enroll/continue"');
      const back = await agent.post('/signin/enroll/continue').type('form').send({ ...entry, csrf: csrfOf(done.text), enroll_token: enrollToken });
      expect(back.status).toBe(303);
      const to = new URL(back.headers.location);
      expect(`${to.origin}${to.pathname}`).toBe(APP);
      expect(to.searchParams.get('state')).toBe('s');
      const code = to.searchParams.get('code')!;
      const exchanged = await request(t.app).post('/oauth/token').set('Authorization', basic(login, t.local.clients.login.client_secret)).type('form')
        .send({ grant_type: 'authorization_code', code, redirect_uri: APP });
      expect(exchanged.body).toMatchObject({ access_token: expect.any(String) });
      // once: the sign-in that waited is spent
      const twice = await agent.post('/signin/enroll/continue').type('form').send({ ...entry, csrf: csrfOf(done.text), enroll_token: enrollToken });
      expect(twice.status).toBe(400);
      // then the next sign-in asks for the code
      clock.advance(30_000);
      const again = await agent.get('/signin').query(entry);
      const asked = await agent.post('/signin').type('form').send({ ...entry, csrf: csrfOf(again.text), signInEmailAddress: email, currentPassword: PASSWORD });
      expect(asked.text).toContain('name="mfa_token"');
    } finally {
      expect((await admin('/settings/set_default', { key: 'second_factor', value: 'optional' })).body.stat).toBe('ok');
      clock.advance(5_100);
    }
  });
});
