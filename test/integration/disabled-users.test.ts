import { execFileSync } from 'node:child_process';
import request from 'supertest';
import { disableUser as disable } from '../../src/usecases/operators/disable-user';
import { enableUser as enable } from '../../src/usecases/operators/enable-user';
import { operatorActing } from '../../src/usecases/operators/deps';
import type { Runtime } from '../../src/runtime';

/** The operators' use cases, as the CLI runs them. */
const operator = (runtime: Runtime) => runtime.services;
const command = async (runtime: Runtime, applicationId: number, entityId: number) =>
  ({ app: (await runtime.db.applications.findById(applicationId))!, entityId, acting: operatorActing('test') });
const disableUser = async (runtime: Runtime, applicationId: number, entityId: number) =>
  (await disable(operator(runtime), await command(runtime, applicationId, entityId))).spent;
const enableUser = async (runtime: Runtime, applicationId: number, entityId: number) => enable(operator(runtime), await command(runtime, applicationId, entityId));
/** The disabled state alone, without spending anything (as when a sign-in in flight issues a token after the disable spent the others). */
const setDisabled = async (disabled: boolean) => {
  const { db } = t.runtime;
  await db.transaction(async (tx) => db.records.setDisabled(await appId(), user.id, disabled ? { at: new Date(), until: null, reason: null } : null, tx));
};
import { newestMail } from '../../src/mail-files';
import { basic, startTestApp, type TestApp } from '../helpers/backend';

// A user an operator disabled (gatehouse users:disable): no sign-in, no working token, no new ones

let t: TestApp;
let owner: string;
let user: { id: number; uuid: string };
const PASSWORD = 'correct horse battery';

const signIn = (password: string, locale = 'en-US') => request(t.app).post('/oauth/auth_native_traditional').type('form')
  .send({ client_id: t.local.clients.login.client_id, locale, signInEmailAddress: 'off@example.com', currentPassword: password });
const asUser = (token: string) => request(t.app).post('/entity').set('Authorization', `OAuth ${token}`).type('form').send({});
const appId = async () => (await t.runtime.db.applications.findByName('local'))!.id;

beforeAll(async () => {
  t = await startTestApp();
  owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
  const created = await request(t.app).post('/entity.create').set('Authorization', owner).type('form')
    .send({ type_name: 'user', attributes: JSON.stringify({ email: 'off@example.com', password: PASSWORD }) });
  user = created.body;
});
afterAll(() => t.close());

it('the right password is told the account is disabled (in the flow\'s language); a wrong one gets the usual answer', async () => {
  const session = (await signIn(PASSWORD)).body.access_token as string;
  expect(await disableUser(t.runtime, await appId(), user.id)).toBeGreaterThanOrEqual(1);
  try {
    expect((await asUser(session)).body.code).toBe(413);
    const refused = await signIn(PASSWORD, 'fr-FR');
    expect(refused.body).toMatchObject({
      stat: 'error', code: 210, error: 'invalid_credentials', error_description: 'this account is disabled by an operator of the service',
      message: 'Ce compte est désactivé. Contactez l’assistance de l’application pour l’utiliser à nouveau.',
      invalid_fields: { signInForm: ['Ce compte est désactivé. Contactez l’assistance de l’application pour l’utiliser à nouveau.'] },
    });
    expect(refused.body.access_token).toBeUndefined();
    // nothing is disclosed to a wrong password: the answer of any failed sign-in
    const wrong = await signIn('not the password');
    expect(wrong.body).toMatchObject({ code: 210, invalid_fields: { signInForm: ['The email address or password is incorrect.'] } });
    expect(JSON.stringify(wrong.body)).not.toContain('disabled');
    // an operator's client gets no token or code for it either
    for (const [route, extra] of [['/access/getAccessToken', {}], ['/access/getAuthorizationCode', { redirect_uri: 'https://app.example.com/cb' }]] as const) {
      const res = await request(t.app).post(route).set('Authorization', owner).type('form').send({ type_name: 'user', uuid: user.uuid, ...extra });
      expect(res.body).toMatchObject({ code: 200, argument_name: 'uuid', error_description: expect.stringContaining('the user is disabled') });
    }
  } finally {
    await enableUser(t.runtime, await appId(), user.id);
  }
  const again = await signIn(PASSWORD);
  expect(again.body.stat).toBe('ok');
  expect((await asUser(again.body.access_token)).body.stat).toBe('ok');
  // sessions ended by disabling stay ended
  expect((await asUser(session)).body.code).toBe(413);
});

it('a right password while the account is disabled spends no sign-in budget: enabled again, it is not locked (with a second factor too)', async () => {
  const email = `budget-${Date.now()}@example.com`;
  const created = await request(t.app).post('/entity.create').set('Authorization', owner).type('form')
    .send({ type_name: 'user', attributes: JSON.stringify({ email, password: PASSWORD }) });
  const post = (path: string, body: Record<string, string>) => request(t.app).post(path).type('form').send(body);
  const attempt = () => post('/oauth/auth_native_traditional', { client_id: t.local.clients.login.client_id, locale: 'en-US', signInEmailAddress: email, currentPassword: PASSWORD });
  // an authenticator app: a right password alone keeps the account's count until the code is right too
  const session = (await attempt()).body.access_token as string;
  const enrolled = await post('/oauth/totp_enroll_native', { access_token: session });
  const code = execFileSync('oathtool', ['--totp', '-b', enrolled.body.secret], { encoding: 'utf8' }).trim();
  expect((await post('/oauth/totp_confirm_native', { access_token: session, code })).body.stat).toBe('ok');
  await disableUser(t.runtime, await appId(), created.body.id as number);
  // more right passwords than the account's budget (10 failures in 15 minutes)
  for (let i = 0; i < 12; i++) expect((await attempt()).body.error_description).toBe('this account is disabled by an operator of the service');
  await enableUser(t.runtime, await appId(), created.body.id as number);
  expect((await attempt()).body).toMatchObject({ code: 214, error: 'second_factor_required' });
});

it('an access token issued while the user was being disabled does not work: the token lookup refuses a disabled user\'s', async () => {
  const issued = await request(t.app).post('/access/getAccessToken').set('Authorization', owner).type('form').send({ type_name: 'user', uuid: user.uuid });
  const token = issued.body.accessToken as string;
  expect((await asUser(token)).body.stat).toBe('ok');
  // the state alone, without spending the token (as when a sign-in in flight issues one after the disable spent the others)
  await setDisabled(true);
  expect((await asUser(token)).body.code).toBe(413);
  expect((await request(t.app).post('/oauth/update_profile_native').type('form').send({
    client_id: t.local.clients.login.client_id, locale: 'en-US', access_token: token, form: 'editProfileForm', displayName: 'x',
  })).body.code).toBe(413);
  await setDisabled(false);
  expect((await asUser(token)).body.stat).toBe('ok');
  // enabling spends what was issued while the user was disabled: nothing of that time comes back
  await setDisabled(true);
  await enableUser(t.runtime, await appId(), user.id);
  expect((await asUser(token)).body.code).toBe(413);
});

it('every grant refuses a disabled user: a code or refresh token a sign-in in flight issued, a reset code mailed after the disable', async () => {
  const login = t.local.clients.login;
  const auth = basic(login.client_id, login.client_secret);
  const recoverUrl = (await request(t.app).get('/settings/items').query({ for_client_id: login.client_id }).set('Authorization', owner)).body.result.password_recover_url;
  const token = (body: Record<string, string>) => request(t.app).post('/oauth/token').set('Authorization', auth).type('form').send(body);
  // what a sign-in in flight leaves when the disable commits around it: a code, a refresh token, an SDK session
  const flight = (await request(t.app).post('/oauth/auth_native_traditional').type('form').send({
    client_id: login.client_id, locale: 'en-US', signInEmailAddress: 'off@example.com', currentPassword: PASSWORD,
    response_type: 'code_and_token', redirect_uri: 'https://app.example.com/cb'
  })).body;
  const pair = (await token({ grant_type: 'authorization_code', code: flight.authorization_code, redirect_uri: 'https://app.example.com/cb' })).body;
  expect(pair.refresh_token).toEqual(expect.any(String));
  const second = (await request(t.app).post('/oauth/auth_native_traditional').type('form').send({
    client_id: login.client_id, locale: 'en-US', signInEmailAddress: 'off@example.com', currentPassword: PASSWORD,
    response_type: 'code', redirect_uri: 'https://app.example.com/cb',
  })).body;
  const verification = (await request(t.app).post('/access/getVerificationCode').set('Authorization', owner).type('form')
    .send({ type_name: 'user', uuid: user.uuid, attribute_name: 'emailVerified' })).body.verification_code;
  // the state alone, nothing spent (as when the sign-in's write lands after the disable's)
  await setDisabled(true);
  try {
    expect((await request(t.app).get('/access/useVerificationCode').query({ verification_code: verification })).body).toMatchObject({ stat: 'error', argument_name: 'verification_code' });
    const code = await token({ grant_type: 'authorization_code', code: second.authorization_code, redirect_uri: 'https://app.example.com/cb' });
    expect(code.body).toMatchObject({ stat: 'error', error_description: expect.stringContaining('disabled') });
    expect((await token({ grant_type: 'refresh_token', refresh_token: pair.refresh_token })).body.stat).toBe('error');
    // a reset link mailed while disabled: its code is no grant either
    expect((await request(t.app).post('/oauth/forgot_password_native').type('form').send({
      client_id: login.client_id, locale: 'en-US', redirect_uri: recoverUrl, signInEmailAddress: 'off@example.com',
    })).body.stat).toBe('ok');
    await t.runtime.queue.idle!();
    const mail = (await newestMail(t.runtime.config.mailDir, 'off@example.com'))!;
    const reset = new URL(mail.link!).searchParams.get('code')!;
    expect((await token({ grant_type: 'authorization_code', code: reset, redirect_uri: recoverUrl })).body.stat).toBe('error');
  } finally {
    await setDisabled(false);
  }
  // while it was disabled nothing rotated: the refresh token works again only because it was never spent, and an enable spends it
  await disableUser(t.runtime, await appId(), user.id);
  await enableUser(t.runtime, await appId(), user.id);
  expect((await token({ grant_type: 'refresh_token', refresh_token: pair.refresh_token })).body.stat).toBe('error');
});

it('disabling spends the verification links mailed before', async () => {
  const code = (await request(t.app).post('/access/getVerificationCode').set('Authorization', owner).type('form')
    .send({ type_name: 'user', uuid: user.uuid, attribute_name: 'emailVerified' })).body.verification_code;
  await disableUser(t.runtime, await appId(), user.id);
  await enableUser(t.runtime, await appId(), user.id);
  expect((await request(t.app).get('/access/useVerificationCode').query({ verification_code: code })).body).toMatchObject({ stat: 'error', argument_name: 'verification_code' });
});

it('a social sign-in of a disabled user is refused before anything is linked or spent, a merge included', async () => {
  const app = (await t.runtime.db.applications.findByName('local'))!;
  const identifier = 'https://idp.example.test#off';
  await t.runtime.db.social.profiles.insert({ applicationId: app.id, entityId: user.id, provider: 'idp', identifier, data: {} }, new Date());
  const token = await t.runtime.services.socialTokens.issue(app, { identifier, providerName: 'idp', email: 'off@example.com' });
  const other = await t.runtime.services.socialTokens.issue(app, { identifier: 'https://idp.example.test#other', providerName: 'idp' });
  const authNative = (extra: Record<string, string> = {}) => request(t.app).post('/oauth/auth_native').type('form').send({
    client_id: t.local.clients.login.client_id, locale: 'de-DE', redirect_uri: 'https://app.example.com/done', token, ...extra,
  });
  await disableUser(t.runtime, app.id, user.id);
  try {
    const refused = await authNative({ merge_token: other });
    expect(refused.body).toMatchObject({ code: 210, message: 'Dieses Konto ist deaktiviert. Wende dich an den Support der App, um es wieder zu nutzen.' });
    expect((await t.runtime.db.social.profiles.forEntity(app.id, user.id)).map((p) => p.identifier)).toEqual([identifier]);
  } finally {
    await enableUser(t.runtime, app.id, user.id);
  }
  // the token was not spent by the refusal: the same sign-in works once enabled
  expect((await authNative()).body).toMatchObject({ stat: 'ok', is_new: false });
});
