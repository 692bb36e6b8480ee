import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { basic, createApp, FLOWS, importFlowsInto, manualClock, startTestApp, type TestApp } from '../helpers/backend';
import { commonPasswordCount, isCommonPassword } from '../../src/domain/common-passwords';

// The password policy (docs/passwords.md): at least 15 characters in the standard flow's new
// versions, 64 and more allowed, no composition rules; every new password checked against the
// commonly used ones, through the API and the pages, in the four locales; the application's own
// minimum, raised, or lowered for accounts with a second factor; existing flow versions keep
// their length rules.

const clock = manualClock();
let t: TestApp;
let owner: string;
const COMMON = 'qwerty123456789'; // 15 characters, and on the list
const GOOD = 'violet tractor umbrella';

const post = (p: string, body: Record<string, string>, host?: string) => {
  const r = request(t.app).post(p);
  return (host ? r.set('Host', host) : r).type('form').send(body);
};
const register = (email: string, password: string, extra: Record<string, string> = {}, host?: string, clientId = t.local.clients.login.client_id) => post('/oauth/register_native_traditional', {
  client_id: clientId, locale: 'en-US', emailAddress: email, newPassword: password, newPasswordConfirm: password,
  firstName: 'Ada', lastName: 'Lovelace', displayName: 'ada', ...extra,
}, host);
const email = () => `pw-${Math.random().toString(36).slice(2)}@example.com`;
const setting = async (key: string, value: string) => {
  const res = await request(t.app).post('/settings/set_default').set('Authorization', owner).type('form').send({ key, value });
  clock.advance(5_100); // the application cache lives 5 s
  return res;
};

beforeAll(async () => {
  t = await startTestApp({ clock, env: { LOGIN_LIMIT_ADDRESS: '10000/900', REGISTER_LIMIT_ADDRESS: '10000/900' } });
  owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
});
afterAll(() => t.close());

it('the list holds more than 100,000 commonly used passwords, compared in lower case', () => {
  expect(commonPasswordCount()).toBeGreaterThan(100_000);
  for (const p of ['password', 'Password1', '123456789', 'QWERTY123456789', COMMON]) expect(isCommonPassword(p)).toBe(true);
  expect(isCommonPassword(GOOD)).toBe(false);
});

describe('a registration through the API', () => {
  it('needs 15 characters, allows 128 of any kind, and refuses a common password, in each locale', async () => {
    expect((await register(email(), 'fourteen chars')).body).toMatchObject({ code: 390, invalid_fields: { newPassword: ['Passwords must be at least 15 characters long.'] } });
    expect((await register(email(), 'fifteen chars!!')).body.stat).toBe('ok');
    // no composition rules: lower case letters only, or digits only, are fine when long and not common
    expect((await register(email(), 'abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijkl')).body.stat).toBe('ok'); // 64
    expect((await register(email(), 'x'.repeat(128).replace(/x/g, (_m, i: number) => 'abcdefghij'[i % 10]))).body.stat).toBe('ok');
    expect((await register(email(), 'a'.repeat(129))).body).toMatchObject({ code: 390, invalid_fields: { newPassword: ['Passwords can be at most 128 characters long.'] } });
    const said = {
      'en-US': 'This password is one of the most used, and the first one attackers try. Choose another one.',
      'fr-FR': 'Ce mot de passe fait partie des plus utilisés, et c’est le premier que les attaquants essaient. Choisissez-en un autre.',
      'de-DE': 'Dieses Passwort gehört zu den meistbenutzten und wird von Angreifern als Erstes ausprobiert. Wähle ein anderes.',
      'es-ES': 'Esta contraseña es de las más usadas y la primera que prueban los atacantes. Elige otra.',
    };
    for (const [locale, message] of Object.entries(said)) {
      expect((await register(email(), COMMON, { locale })).body).toMatchObject({ code: 390, invalid_fields: { newPassword: [message] } });
      expect((await register(email(), COMMON.toUpperCase(), { locale })).body).toMatchObject({ code: 390, invalid_fields: { newPassword: [message] } });
    }
  });
});

describe('every other new password', () => {
  it('a change of password, and records created or changed through the API', async () => {
    const address = email();
    const signed = (await register(address, GOOD)).body;
    const change = (next: string) => post('/oauth/update_profile_native', {
      client_id: t.local.clients.login.client_id, locale: 'de-DE', access_token: signed.access_token, form: 'changePasswordForm',
      currentPassword: GOOD, newPassword: next, newPasswordConfirm: next,
    });
    expect((await change(COMMON)).body).toMatchObject({ code: 390, invalid_fields: { newPassword: ['Dieses Passwort gehört zu den meistbenutzten und wird von Angreifern als Erstes ausprobiert. Wähle ein anderes.'] } });
    const create = (password: string) => request(t.app).post('/entity.create').set('Authorization', owner).type('form')
      .send({ type_name: 'user', attributes: JSON.stringify({ email: email(), password }) });
    expect((await create(COMMON)).body).toMatchObject({ code: 200, argument_name: 'attributes.password', error_description: expect.stringContaining('commonly used') });
    expect((await create(GOOD)).body.stat).toBe('ok');
    const bulk = await request(t.app).post('/entity.bulkCreate').set('Authorization', owner).type('form')
      .send({ type_name: 'user', all_attributes: JSON.stringify([{ email: email(), password: GOOD }, { email: email(), password: 'password1' }]) });
    expect(bulk.body).toMatchObject({ code: 200, argument_name: 'all_attributes', item_errors: [{ index: 1, argument_name: 'attributes.password', error_description: expect.stringContaining('commonly used') }] });
    const update = await request(t.app).post('/entity.update').set('Authorization', owner).type('form')
      .send({ type_name: 'user', id: String(signed.capture_user.id), attributes: JSON.stringify({ password: 'iloveyou' }) });
    expect(update.body).toMatchObject({ code: 200, argument_name: 'attributes.password' });
    // the current password as the new one: refused, in the request's language
    expect((await change(GOOD)).body).toMatchObject({ code: 390, invalid_fields: { newPassword: ['Das ist dein aktuelles Passwort. Wähle ein neues.'] } });
  });

  it('no path of the records API stores a password shorter than the application\'s minimum (never below 8), and none signs in', async () => {
    const short = 'Zq9';
    const seven = 'Zq9#kW2';
    const stated = { code: 200, argument_name: 'attributes.password', error_description: expect.stringContaining('shorter than 8 characters') };
    const create = (password: string, address = email()) => request(t.app).post('/entity.create').set('Authorization', owner).type('form')
      .send({ type_name: 'user', attributes: JSON.stringify({ email: address, password }) });
    for (const p of [short, seven]) {
      const address = email();
      expect((await create(p, address)).body).toMatchObject(stated);
      const signIn = await post('/oauth/auth_native_traditional', { client_id: t.local.clients.login.client_id, locale: 'en-US', signInEmailAddress: address, currentPassword: p });
      expect(signIn.body).toMatchObject({ stat: 'error', code: 210 });
    }
    const bulk = await request(t.app).post('/entity.bulkCreate').set('Authorization', owner).type('form')
      .send({ type_name: 'user', all_attributes: JSON.stringify([{ email: email(), password: GOOD }, { email: email(), password: short }]) });
    expect(bulk.body).toMatchObject({ code: 200, argument_name: 'all_attributes[1].password', error_description: expect.stringContaining('shorter than 8') });
    const made = (await create('Zq9#kW2x')).body;
    expect(made.stat).toBe('ok');
    for (const [path, attributes] of [['/entity.update', { password: short }], ['/entity.replace', { email: email(), password: short }]] as const) {
      const res = await request(t.app).post(path).set('Authorization', owner).type('form').send({ type_name: 'user', id: String(made.id), attributes: JSON.stringify(attributes) });
      expect([path, res.body]).toMatchObject([path, stated]);
    }
    const byPath = await request(t.app).post('/entity.update').set('Authorization', owner).type('form')
      .send({ type_name: 'user', id: String(made.id), attribute_name: 'password', value: JSON.stringify(short) });
    expect(byPath.body).toMatchObject({ stat: 'error', code: 200 });
    // the application's own minimum, when it raises it
    expect((await setting('password_min_length', '20')).body.stat).toBe('ok');
    try {
      expect((await create('nineteen characters')).body).toMatchObject({ ...stated, error_description: expect.stringContaining('shorter than 20 characters') });
      expect((await create('twenty characters ok')).body.stat).toBe('ok');
    } finally {
      expect((await setting('password_min_length', '')).body.stat).toBe('ok');
    }
  });
});

describe('the application\'s minimum', () => {
  it('password_min_length raises it for every flow; password_min_length_second_factor lowers it for an account with an authenticator', async () => {
    // an account with an authenticator app may have a shorter password when the application says so
    const address = email();
    const signed = (await register(address, GOOD)).body;
    const enrolled = await post('/oauth/totp_enroll_native', { access_token: signed.access_token });
    const code = execFileSync('oathtool', ['--totp', '-b', enrolled.body.secret, '-N', `@${Math.floor(clock.now().getTime() / 1000)}`], { encoding: 'utf8' }).trim();
    expect((await post('/oauth/totp_confirm_native', { access_token: signed.access_token, code })).body.stat).toBe('ok');
    const change = (token: string, current: string, next: string) => post('/oauth/update_profile_native', {
      client_id: t.local.clients.login.client_id, locale: 'en-US', access_token: token, form: 'changePasswordForm',
      currentPassword: current, newPassword: next, newPasswordConfirm: next,
    });
    expect((await change(signed.access_token, GOOD, 'ten chars!')).body).toMatchObject({ code: 390, invalid_fields: { newPassword: ['Passwords must be at least 15 characters long.'] } });
    expect((await setting('password_min_length_second_factor', '8')).body.stat).toBe('ok');
    try {
      expect((await change(signed.access_token, GOOD, 'short!')).body).toMatchObject({ code: 390, invalid_fields: { newPassword: ['Use at least 8 characters.'] } });
      expect((await change(signed.access_token, GOOD, 'password')).body).toMatchObject({ code: 390, invalid_fields: { newPassword: [expect.stringContaining('most used')] } });
      expect((await change(signed.access_token, GOOD, 'ten chars!')).body).toEqual({ stat: 'ok' });
      // an account without a second factor still needs 15
      const other = (await register(email(), GOOD)).body;
      expect((await change(other.access_token, GOOD, 'ten chars!')).body).toMatchObject({ code: 390, invalid_fields: { newPassword: ['Passwords must be at least 15 characters long.'] } });
    } finally {
      expect((await setting('password_min_length_second_factor', '15')).body.stat).toBe('ok');
    }
    expect((await setting('password_min_length', '7')).body).toMatchObject({ code: 200, argument_name: 'value' });
    expect((await setting('password_min_length', '20')).body.stat).toBe('ok');
    try {
      expect((await register(email(), 'nineteen characters', { locale: 'es-ES' })).body).toMatchObject({ code: 390, invalid_fields: { newPassword: ['Usa al menos 20 caracteres.'] } });
      expect((await register(email(), 'twenty characters ok')).body.stat).toBe('ok');
    } finally {
      expect((await setting('password_min_length', '15')).body.stat).toBe('ok');
    }

  });
});

it('a flow version imported before keeps its length rule; the new version has the new one; both refuse common passwords', async () => {
  // the standard flow as it was: 8 characters, no rule of its own for common passwords
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-old-flow-'));
  try {
    fs.cpSync(path.join(FLOWS, 'standard'), path.join(dir, 'standard'), { recursive: true });
    const file = path.join(dir, 'standard', 'flow.json');
    const flow = JSON.parse(fs.readFileSync(file, 'utf8'));
    flow.fields.newPassword.validation = flow.fields.newPassword.validation
      .filter((r: { rule: string }) => r.rule !== 'notCommon')
      .map((r: { rule: string; value?: number }) => (r.rule === 'minLength' ? { ...r, value: 8 } : r));
    fs.writeFileSync(file, JSON.stringify(flow));
    const legacy = await createApp(t.runtime, 'legacy', dir);
    expect((await importFlowsInto(t.runtime, 'legacy', FLOWS))).toEqual([{ name: 'standard', version: 2 }]);
    const host = 'legacy.localhost';
    const at = (version: string, password: string, locale = 'en-US') => register(email(), password, { flow: 'standard', flow_version: version, locale }, host, legacy.clients.login.client_id);
    expect((await at('1', 'ten chars!')).body.stat).toBe('ok');
    expect((await at('2', 'ten chars!')).body).toMatchObject({ code: 390, invalid_fields: { newPassword: ['Passwords must be at least 15 characters long.'] } });
    // version 1 has no message of its own: the service's, in the locale
    expect((await at('1', 'football', 'fr-FR')).body).toMatchObject({ code: 390, invalid_fields: { newPassword: [expect.stringContaining('fait partie des plus utilisés')] } });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

describe('the pages', () => {
  const APP = 'https://app.example.com/callback';
  const said = {
    'en-US': ['At least 15 characters.', 'This password is one of the most used'],
    'fr-FR': ['Au moins 15 caractères.', 'Ce mot de passe fait partie des plus utilisés'],
    'de-DE': ['Mindestens 15 Zeichen.', 'Dieses Passwort gehört zu den meistbenutzten'],
    'es-ES': ['Al menos 15 caracteres.', 'Esta contraseña es de las más usadas'],
  };

  it('the registration page says the rule and refuses a common password, in each locale', async () => {
    const login = t.local.clients.login.client_id;
    const set = await request(t.app).post('/settings/set').set('Authorization', owner).type('form').send({ for_client_id: login, key: 'redirect_uris', value: APP });
    expect(set.body.stat).toBe('ok');
    clock.advance(5_100);
    for (const [locale, [tip, common]] of Object.entries(said)) {
      const agent = request.agent(t.app);
      const entry = { client_id: login, redirect_uri: APP, locale, state: 's' };
      const page = await agent.get('/register').query(entry);
      expect(page.text).toContain(tip);
      const csrf = /name="csrf" value="([^"]*)"/.exec(page.text)![1];
      const refused = await agent.post('/register').type('form').send({
        ...entry, csrf, emailAddress: email(), newPassword: COMMON, newPasswordConfirm: COMMON, firstName: 'Ada', lastName: 'Lovelace', displayName: 'ada',
      });
      expect(refused.status).toBe(400);
      expect(refused.text).toMatch(new RegExp(`id="f-newPassword-error" role="alert">${common}`));
    }
  });
});
