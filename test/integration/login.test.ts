import request from 'supertest';
import { buildApp } from '../../src/app';
import { createLogger } from '../../src/logger';
import { ARGON2ID } from '../../src/domain/passwords';
import { createRuntime } from '../../src/runtime';
import { basic, loginClientWithoutFlow, redisUrl, startTestApp, type TestApp, skipUnless } from '../helpers/backend';
import { stored } from '../helpers/stored';

let t: TestApp;
let owner: string;
let loginId: string;
const REDIRECT = 'https://app.example.com/done';

const post = (path: string, body: Record<string, string>, app = t.app) => request(app).post(path).type('form').send(body);
const shared = (extra: Record<string, string> = {}) => ({ client_id: loginId, locale: 'en-US', ...extra });
const registration = (email: string, extra: Record<string, string> = {}) => shared({
  emailAddress: email, newPassword: 'correct horse battery', newPasswordConfirm: 'correct horse battery', firstName: 'Ada', lastName: 'Lovelace', displayName: 'ada', ...extra,
});
const register = (email: string, extra: Record<string, string> = {}) => post('/oauth/register_native_traditional', registration(email, extra));
const signIn = (email: string, password: string, extra: Record<string, string> = {}) =>
  post('/oauth/auth_native_traditional', shared({ signInEmailAddress: email, currentPassword: password, ...extra }));
const update = (accessToken: string, form: string, fields: Record<string, string>, locale = 'en-US') =>
  post('/oauth/update_profile_native', shared({ access_token: accessToken, form, locale, ...fields }));

beforeAll(async () => {
  t = await startTestApp({ env: { LOGIN_LIMIT_ACCOUNT: '4/60', LOGIN_LIMIT_ADDRESS: '1000/60' } });
  owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
  loginId = t.local.clients.login.client_id;
});
afterAll(() => t.close());

describe('shared parameters of the flow endpoints (docs/api.md#flows)', () => {
  it.each([
    ['client_id missing', { client_id: '' }, 100, 'missing_argument'],
    ['an unknown client_id', { client_id: 'f'.repeat(32) }, 403, 'permission_error'],
    ['locale missing', { locale: '' }, 100, 'missing_argument'],
    ['an unknown locale', { locale: 'it-IT' }, 500, 'unexpected_error'],
    ['an unknown flow', { flow: 'nope' }, 500, 'unexpected_error'],
    ['an unknown flow_version', { flow_version: '99' }, 500, 'unexpected_error'],
    ['flow_version HEAD', { flow_version: 'HEAD' }, 200, 'invalid_argument'],
    ['a redirect_uri that is not http(s)', { redirect_uri: 'javascript:alert(1)' }, 200, 'invalid_argument'],
    ['an unknown response_type', { response_type: 'id_token' }, 200, 'invalid_argument'],
    ['response_type code without redirect_uri', { response_type: 'code' }, 100, 'missing_argument'],
    ['an unknown form', { form: 'nope' }, 200, 'invalid_argument'],
    ['a form name in the wrong case', { form: 'RegistrationForm' }, 200, 'invalid_argument'],
    ['a form of another endpoint', { form: 'signInForm' }, 200, 'invalid_argument'],
  ])('%s', async (_what, change, code, error) => {
    const res = await register('shared@example.com', change as Record<string, string>);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ stat: 'error', code, error });
    expect(res.body.error_description).toBeTruthy();
  });

  it.each(['/oauth/register_native_traditional', '/oauth/auth_native_traditional', '/oauth/update_profile_native'])(
    'every shared-parameter error on %s', async (endpoint) => {
      const other = await request(t.app).post('/clients/add').set('Authorization', owner).type('form').send({ features: '["owner"]' });
      const cases: [Record<string, string>, number, string][] = [
        [{ client_id: '' }, 100, 'client_id'], [{ locale: '' }, 100, 'locale'], [{ client_id: other.body.client_id }, 403, ''],
        [{ locale: 'xx-XX' }, 500, ''], [{ flow_version: 'HEAD' }, 200, 'flow_version'], [{ form: 'Nope' }, 200, 'form'],
      ];
      for (const [change, code, argument] of cases) {
        const res = await post(endpoint, { ...shared({ access_token: 'x' }), ...change });
        expect(res.body).toMatchObject({ stat: 'error', code, ...(argument && { argument_name: argument }) });
      }
    },
  );

  it('a client without login_client: 403', async () => {
    const other = await request(t.app).post('/clients/add').set('Authorization', owner).type('form').send({ features: '["direct_access"]' });
    expect((await register('x@example.com', { client_id: other.body.client_id })).body).toMatchObject({ code: 403, error: 'permission_error' });
  });

  it('flow and flow_version come from the client settings, else are required', async () => {
    const bare = await loginClientWithoutFlow(t);
    const res = await register('x@example.com', { client_id: bare.clientId });
    expect(res.body).toMatchObject({ code: 100, argument_name: 'flow' });
    const noVersion = await register('x@example.com', { client_id: bare.clientId, flow: 'standard' });
    expect(noVersion.body).toMatchObject({ code: 100, argument_name: 'flow_version' });
  });

  it('reads the body only: parameters in the URL count as missing; GET is refused', async () => {
    const res = await request(t.app).post(`/oauth/register_native_traditional?client_id=${loginId}&locale=en-US`).type('form').send({});
    expect(res.body).toMatchObject({ code: 100, argument_name: 'client_id' });
    expect((await request(t.app).get('/oauth/auth_native_traditional')).status).toBe(405);
  });
});

describe('/oauth/register_native_traditional', () => {
  it('creates the record and answers capture_user with an access token', async () => {
    const res = await register('Grace@Example.com', { 'birthdate[dateselect_year]': '1906', 'birthdate[dateselect_month]': '12', 'birthdate[dateselect_day]': '9' });
    expect(res.body).toMatchObject({
      stat: 'ok', access_token: expect.stringMatching(/^[0-9a-f]{40}$/),
      capture_user: {
        uuid: expect.any(String), id: expect.any(Number), email: 'Grace@Example.com', givenName: 'Ada', familyName: 'Lovelace',
        displayName: 'ada', birthdate: '1906-12-09', emailVerified: null, profiles: [],
        created: expect.stringMatching(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{6} \+0000$/),
      },
    });
    expect(res.body).not.toHaveProperty('authorization_code');
    expect(JSON.stringify(res.body)).not.toMatch(/password|argon2|correct horse/i);
    const me = await request(t.app).get('/entity').set('Authorization', `OAuth ${res.body.access_token}`);
    expect(me.body.result.uuid).toBe(res.body.capture_user.uuid);
  });

  it('answers a code bound to redirect_uri with response_type code, and both with code_and_token', async () => {
    const code = await register('code@example.com', { response_type: 'code', redirect_uri: REDIRECT });
    expect(code.body).toMatchObject({ stat: 'ok', authorization_code: expect.any(String) });
    expect(code.body).not.toHaveProperty('access_token');
    const login = basic(loginId, t.local.clients.login.client_secret);
    const exchanged = await request(t.app).post('/oauth/token').set('Authorization', login).type('form')
      .send({ grant_type: 'authorization_code', code: code.body.authorization_code, redirect_uri: REDIRECT });
    expect(exchanged.body.stat).toBe('ok');
    const both = await register('both@example.com', { response_type: 'code_and_token', redirect_uri: REDIRECT });
    expect(both.body).toMatchObject({ access_token: expect.any(String), authorization_code: expect.any(String) });
  });

  it('a sign-in stores each of its credentials exactly as issued: code_and_token, a refresh_secret, an unusual redirect_uri', async () => {
    // quotes, a backslash, non-ASCII and an escaped quote: stored and compared byte for byte
    const redirect = 'https://app.example.com/done/é?next="a\\b"&x=%22ü';
    const registered = await register('exact@example.com');
    const { Credential } = t.runtime.db.models;
    // the registration's own credentials, told apart by id (not by time: a loaded machine blurs it)
    const earlier = new Set((await Credential.findAll({ where: { entity_id: registered.body.capture_user.id }, raw: true })).map((r) => Number(r.id)));
    const res = await signIn('exact@example.com', 'correct horse battery', { response_type: 'code_and_token', redirect_uri: redirect, refresh_secret: 'f00d'.repeat(10) });
    expect(res.body).toMatchObject({ stat: 'ok', access_token: expect.any(String), authorization_code: expect.any(String) });
    const rows = await Credential.findAll({ where: { entity_id: res.body.capture_user.id, used_at: null }, raw: true, order: [['id', 'ASC']] });
    const signedIn = rows.filter((r) => !earlier.has(Number(r.id)));
    expect(signedIn.map((r) => r.kind).sort()).toEqual(['access_token', 'authorization_code', 'refresh_secret']);
    const [loginClient] = await stored(t.runtime.db).rows<{ id: number }>('SELECT id FROM clients WHERE client_id = ?', [loginId]);
    for (const r of signedIn) {
      expect(Number(r.client_id)).toBe(Number(loginClient!.id));
      expect(r.for_client_id).toBeNull();
      expect(r.family).toMatch(/^[0-9a-f]{32}$/);
    }
    const byKind = Object.fromEntries(signedIn.map((r) => [r.kind, r]));
    expect(byKind.authorization_code.redirect_uri).toBe(redirect);
    expect(byKind.access_token.redirect_uri).toBeNull();
    expect(JSON.parse(byKind.access_token.extra!)).toEqual({ authenticated_at: expect.any(String), session: { amr: ['pwd'], auth_time: expect.any(String), factors: ['password'] } });
    expect(byKind.refresh_secret.family).toBe(byKind.access_token.family);
    const lives = (r: { expires_at: Date | string; created_at: Date | string }) => Math.round((new Date(r.expires_at).getTime() - new Date(r.created_at).getTime()) / 1000);
    expect([lives(byKind.access_token), lives(byKind.authorization_code)]).toEqual([3600, 30]);
    // the code exchanges with exactly that redirect_uri and no other; the access token works
    const login = basic(loginId, t.local.clients.login.client_secret);
    const exchange = (redirectUri: string) => request(t.app).post('/oauth/token').set('Authorization', login).type('form')
      .send({ grant_type: 'authorization_code', code: res.body.authorization_code, redirect_uri: redirectUri });
    expect((await exchange(redirect.replace('é', 'e'))).body.stat).toBe('error');
    expect((await exchange(redirect)).body.stat).toBe('ok');
    expect((await request(t.app).get('/entity').set('Authorization', `OAuth ${res.body.access_token}`)).body.result.email).toBe('exact@example.com');
  });

  it('reports every failing rule of every field in the request locale (390)', async () => {
    const res = await register('not-an-email', { locale: 'fr-FR', newPassword: 'court', newPasswordConfirm: 'autre', firstName: '', displayName: 'x'.repeat(70) });
    expect(res.body).toMatchObject({ stat: 'error', code: 390, error: 'invalid_form_fields' });
    expect(res.body.invalid_fields).toEqual({
      emailAddress: ['Saisissez une adresse e-mail valide, par exemple nom@exemple.com.'],
      newPassword: ['Le mot de passe doit contenir au moins 15 caractères.'],
      newPasswordConfirm: ['Les deux mots de passe ne correspondent pas.'],
      firstName: ['Saisissez votre prénom.'],
      displayName: ['Le nom affiché ne peut pas dépasser 64 caractères.'],
    });
    const es = await register('x', { locale: 'es-ES', lastName: '' });
    expect(es.body.invalid_fields).toEqual({ emailAddress: ['Introduce un correo electrónico válido, por ejemplo nombre@ejemplo.com.'], lastName: ['Introduce tus apellidos.'] });
    const de = await register('x', { locale: 'de-DE' });
    expect(de.body.invalid_fields).toEqual({ emailAddress: ['Gib eine gültige E-Mail-Adresse ein, zum Beispiel name@beispiel.de.'] });
  });

  it('a field not sent at all is missing (100); oversized, control characters and 10 kB passwords are 390; nothing is written', async () => {
    const before = await stored(t.runtime.db).count('entities');
    const body = registration('absent@example.com');
    delete (body as Record<string, string>).lastName;
    expect((await post('/oauth/register_native_traditional', body)).body).toMatchObject({ code: 100, argument_name: 'lastName' });
    const huge = 'p'.repeat(10_240);
    expect((await register('long@example.com', { newPassword: huge, newPasswordConfirm: huge })).body.invalid_fields)
      .toEqual({ newPassword: ['Passwords can be at most 128 characters long.'] });
    expect((await register('ctl@example.com', { firstName: 'Ada\u0007' })).body.invalid_fields)
      .toEqual({ firstName: ['This field contains characters that are not allowed.'] });
    expect((await register('big@example.com', { mobile: '+1' + '2'.repeat(5000) })).body).toMatchObject({ code: 390 });
    expect(await stored(t.runtime.db).count('entities')).toBe(before);
  });

  it('takes an email with unicode in it, and non-UTF-8 input becomes a clear answer', async () => {
    const res = await register('zoë@exämple.com');
    expect(res.body.stat).toBe('ok');
    expect(res.body.capture_user.email).toBe('zoë@exämple.com');
    // bytes that are not UTF-8 at all (0xff 0xfe), sent as they are: read as U+FFFD, never a crash
    const raw = await request(t.app).post('/oauth/register_native_traditional').set('Content-Type', 'application/x-www-form-urlencoded')
      .send(Buffer.concat([Buffer.from(`client_id=${loginId}&locale=en-US&firstName=`), Buffer.from([0xff, 0xfe]), Buffer.from('&emailAddress=x')]));
    expect(raw.status).toBe(200);
    expect(raw.body).toMatchObject({ stat: 'error', code: 100 });
    const percent = await request(t.app).post('/oauth/register_native_traditional').type('form')
      .send(`${new URLSearchParams(registration('bytes@example.com', { firstName: 'x' })).toString().replace('firstName=x', 'firstName=%FF%FE')}`);
    expect(percent.body.stat).toBe('ok');
    // percent-escapes that decode to no UTF-8 are kept as sent (Node's querystring), never a crash
    expect(percent.body.capture_user.givenName).toBe('%FF%FE');
  });

  it('one email, any case, one record: a duplicate gets the localized "in use" message', async () => {
    await register('dup@example.com');
    const again = await register('DUP@example.com', { locale: 'de-DE' });
    expect(again.body).toMatchObject({ code: 390, invalid_fields: { emailAddress: ['Diese E-Mail-Adresse wird bereits verwendet.'] } });
  });

  it('two parallel registrations with one email: exactly one record, the other 390', async () => {
    const results = await Promise.all([register('race@example.com'), register('RACE@example.com'), register('race@EXAMPLE.com')]);
    expect(results.filter((r) => r.body.stat === 'ok')).toHaveLength(1);
    for (const r of results.filter((x) => x.body.stat !== 'ok')) {
      expect(r.body).toMatchObject({ code: 390, invalid_fields: { emailAddress: ['This email address is already in use.'] } });
    }
    expect(await stored(t.runtime.db).count('entities', 'email_key = ?', ['race@example.com'])).toBe(1);
  });
});

describe('/oauth/auth_native_traditional', () => {
  beforeAll(async () => {
    expect((await register('login@example.com')).body.stat).toBe('ok');
  });

  it('signs in by email (any case) and by username; answers capture_user and tokens', async () => {
    const res = await signIn('LOGIN@example.com', 'correct horse battery');
    expect(res.body).toMatchObject({ stat: 'ok', access_token: expect.any(String), capture_user: { email: 'login@example.com', lastLogin: expect.any(String) } });
    await request(t.app).post('/entity.create').set('Authorization', owner).type('form')
      .send({ type_name: 'user', attributes: JSON.stringify({ username: 'countess', password: 'analytical engine' }) });
    expect((await signIn('countess', 'analytical engine')).body.stat).toBe('ok');
  });

  it('the Android SDK\'s fallback without a flow: user and password instead of the form\'s fields', async () => {
    // the parameter set of Capture.performTraditionalSignIn when the app has no sign-in form
    const android = (user: string, password: string) => post('/oauth/auth_native_traditional', shared({
      user, password, form: 'signInForm', response_type: 'token', redirect_uri: REDIRECT, refresh_secret: 'a1b2c3d4'.repeat(5), flow: 'standard',
    }));
    expect((await android('login@example.com', 'correct horse battery')).body).toMatchObject({ stat: 'ok', access_token: expect.any(String), capture_user: { email: 'login@example.com' } });
    expect((await android('login@example.com', 'wrong horse')).body).toMatchObject({ code: 210, invalid_fields: { signInForm: expect.any(Array) } });
    // the form's own fields win when both are sent; a half-sent form is still 100
    expect((await signIn('login@example.com', 'correct horse battery', { user: 'someone@example.com', password: 'x' })).body.stat).toBe('ok');
    expect((await post('/oauth/auth_native_traditional', shared({ user: 'login@example.com', password: 'correct horse battery', currentPassword: 'correct horse battery' }))).body)
      .toMatchObject({ code: 100, argument_name: 'signInEmailAddress' });
  });

  it('answers an unknown email and a wrong password with byte-identical bodies (210)', async () => {
    const unknown = await signIn('nobody@example.com', 'correct horse battery');
    const wrong = await signIn('login@example.com', 'wrong horse');
    const strip = (b: Record<string, unknown>) => JSON.stringify({ ...b, request_id: undefined });
    expect(unknown.body).toMatchObject({ stat: 'error', code: 210, error: 'invalid_credentials', invalid_fields: { signInForm: ['The email address or password is incorrect.'] } });
    expect(strip(wrong.body)).toBe(strip(unknown.body));
    const fr = await signIn('nobody@example.com', 'x', { locale: 'fr-FR' });
    expect(fr.body.invalid_fields).toEqual({ signInForm: ['Adresse e-mail ou mot de passe incorrect.'] });
  });

  it('an unknown email costs one argon2 verification, as a wrong password does (a dummy hash is verified)', async () => {
    const { passwords } = t.runtime.services;
    const verify = jest.spyOn(passwords, 'verify');
    const nothing = jest.spyOn(passwords, 'verifyNothing');
    try {
      await signIn('ghost@example.com', 'wrong horse', { signInEmailAddress: 'ghost@example.com' });
      expect([verify.mock.calls.length, nothing.mock.calls.length]).toEqual([0, 1]);
      await expect(nothing.mock.results[0].value).resolves.toBe(false);
      await signIn('login@example.com', 'wrong horse', { signInEmailAddress: 'login@example.com' });
      expect([verify.mock.calls.length, nothing.mock.calls.length]).toEqual([1, 1]);
    } finally {
      verify.mockRestore();
      nothing.mockRestore();
    }
  });

  it('refuses an unknown or malformed merge_token with 200 naming it, and signs nobody in', async () => {
    for (const mergeToken of ['m'.repeat(40), 'not a token!']) {
      const res = await signIn('login@example.com', 'correct horse battery', { merge_token: mergeToken });
      expect(res.body).toMatchObject({ stat: 'error', code: 200, argument_name: 'merge_token' });
      expect(res.body.access_token).toBeUndefined();
    }
  });

  it('a missing form field is 100; a 10 kB password is a plain 210', async () => {
    const res = await post('/oauth/auth_native_traditional', shared({ signInEmailAddress: 'login@example.com' }));
    expect(res.body).toMatchObject({ code: 100, argument_name: 'currentPassword' });
    expect((await signIn('login@example.com', 'x'.repeat(10_240))).body).toMatchObject({ code: 210 });
  });

  it('rehashes a password stored with weaker parameters', async () => {
    const { hash } = await import('@node-rs/argon2');
    const weak = await hash('old parameters', { memoryCost: 4096, timeCost: 1, parallelism: 1, algorithm: ARGON2ID });
    const made = await register('weak@example.com');
    await stored(t.runtime.db).change('UPDATE entities SET password_hash = ? WHERE uuid = ?', [weak, made.body.capture_user.uuid]);
    expect((await signIn('weak@example.com', 'old parameters')).body.stat).toBe('ok');
    const [row] = await stored(t.runtime.db).rows<{ password_hash: string }>('SELECT password_hash FROM entities WHERE uuid = ?', [made.body.capture_user.uuid]);
    expect(row!.password_hash).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    expect((await signIn('weak@example.com', 'old parameters')).body.stat).toBe('ok');
  });

  it('limits failed sign-ins per account before looking the account up (510 with Retry-After)', async () => {
    expect((await register('limited@example.com')).body.stat).toBe('ok');
    for (const email of ['limited@example.com', 'nobody-at-all@example.com']) {
      for (let i = 0; i < 4; i++) expect((await signIn(email, 'bad guess')).body.code).toBe(210);
      const blocked = await signIn(email, 'correct horse battery');
      expect(blocked.body).toMatchObject({ stat: 'error', code: 510, error: 'api_limit_error' });
      expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
    }
  });
});

describe('/oauth/update_profile_native', () => {
  let token: string;
  beforeAll(async () => {
    token = (await register('profile@example.com')).body.access_token;
  });

  it('edits the profile; fields the record holds need not be resent', async () => {
    const res = await update(token, 'editProfileForm', { displayName: 'Countess of Lovelace' });
    expect(res.body).toEqual({ stat: 'ok' });
    const me = await request(t.app).get('/entity').set('Authorization', `OAuth ${token}`);
    expect(me.body.result).toMatchObject({ displayName: 'Countess of Lovelace', givenName: 'Ada', email: 'profile@example.com' });
  });

  it('says which fields the form has not (they changed nothing): a record attribute\'s name where the form\'s field is named otherwise', async () => {
    const res = await update(token, 'editProfileForm', { givenName: 'Augusta', firstName: 'Ada', 'birthdate[dateselect_year]': '1815', 'birthdate[dateselect_month]': '12', 'birthdate[dateselect_day]': '10' });
    expect(res.body).toEqual({ stat: 'ok', ignored_fields: ['givenName'] });
    const me = await request(t.app).get('/entity').set('Authorization', `OAuth ${token}`);
    expect(me.body.result.givenName).toBe('Ada');
  });

  it('refuses an email another record holds (390) and an invalid access token (413)', async () => {
    expect((await update(token, 'editProfileForm', { emailAddress: 'LOGIN@example.com' })).body)
      .toMatchObject({ code: 390, invalid_fields: { emailAddress: ['This email address is already in use.'] } });
    expect((await update('0'.repeat(40), 'editProfileForm', { displayName: 'x' })).body).toMatchObject({ code: 413, error: 'invalid_access_token' });
    expect((await post('/oauth/update_profile_native', shared({ form: 'editProfileForm' }))).body).toMatchObject({ code: 100, argument_name: 'access_token' });
    expect((await update(token, 'signInForm', {})).body).toMatchObject({ code: 200, argument_name: 'form' });
  });

  it('changes the password: wrong current 210, weak new 390, then success ends other sessions', async () => {
    const other = (await signIn('profile@example.com', 'correct horse battery')).body.access_token;
    expect((await update(token, 'changePasswordForm', { currentPassword: 'wrong', newPassword: 'new and long enough', newPasswordConfirm: 'new and long enough' }, 'es-ES')).body)
      .toMatchObject({ code: 210, invalid_fields: { changePasswordForm: ['La contraseña actual no es correcta.'] } });
    expect((await update(token, 'changePasswordForm', { currentPassword: 'correct horse battery', newPassword: 'short', newPasswordConfirm: 'short' })).body)
      .toMatchObject({ code: 390, invalid_fields: { newPassword: ['Passwords must be at least 15 characters long.'] } });
    expect((await update(token, 'changePasswordForm', { currentPassword: 'correct horse battery', newPassword: 'new and long enough', newPasswordConfirm: 'new and long enough' })).body)
      .toEqual({ stat: 'ok' });
    expect((await signIn('profile@example.com', 'correct horse battery')).body.code).toBe(210);
    expect((await signIn('profile@example.com', 'new and long enough')).body.stat).toBe('ok');
    // the session that changed it lives on; the other one ended
    expect((await request(t.app).get('/entity').set('Authorization', `OAuth ${token}`)).body.stat).toBe('ok');
    expect((await request(t.app).get('/entity').set('Authorization', `OAuth ${other}`)).body.code).toBe(413);
  });

  it('limits wrong current passwords like failed sign-ins, from the same per-account budget (510)', async () => {
    const own = (await register('guessed@example.com')).body.access_token;
    const change = (current: string) => update(own, 'changePasswordForm', { currentPassword: current, newPassword: 'new and long enough', newPasswordConfirm: 'new and long enough' });
    expect((await signIn('guessed@example.com', 'bad guess')).body.code).toBe(210);
    for (let i = 0; i < 3; i++) expect((await change(`guess ${i}`)).body.code).toBe(210);
    // the budget (4) is spent: even the right password is refused, here and at sign-in
    const blocked = await change('correct horse battery');
    expect(blocked.body).toMatchObject({ stat: 'error', code: 510, error: 'api_limit_error' });
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
    expect((await signIn('guessed@example.com', 'correct horse battery')).body.code).toBe(510);
  });

  it('sets a password without the current one with a token from a sign-in minutes ago (newPasswordFormNoAuth)', async () => {
    expect((await update(token, 'newPasswordFormNoAuth', { newPassword: 'after the reset', newPasswordConfirm: 'after the reset' })).body).toEqual({ stat: 'ok' });
    expect((await signIn('profile@example.com', 'after the reset')).body.stat).toBe('ok');
    expect((await update(token, 'newPasswordForm', { newPassword: 'x', newPasswordConfirm: 'y' })).body).toMatchObject({ code: 390 });
  });
});

skipUnless(redisUrl !== undefined, 'the cross-instance sign-in limit needs REDIS_URL')('the sign-in limit holds across api instances (Redis)', () => {
  it('failures on one instance block the account on another', async () => {
    const shared = await startTestApp({ redis: true, env: { LOGIN_LIMIT_ACCOUNT: '3/60' } });
    try {
      const second = createRuntime(shared.backend.config, createLogger('silent'));
      const appB = buildApp({ services: second.services, defaultApp: 'local' });
      const id = shared.local.clients.login.client_id;
      const attempt = (app: typeof appB, password: string) => request(app).post('/oauth/auth_native_traditional').type('form')
        .send({ client_id: id, locale: 'en-US', signInEmailAddress: 'shared@example.com', currentPassword: password });
      for (let i = 0; i < 3; i++) expect((await attempt(shared.app, 'guess')).body.code).toBe(210);
      expect((await attempt(appB, 'guess')).body.code).toBe(510);
      await second.close();
    } finally {
      await shared.close();
    }
  });
});
