import request from 'supertest';
import { findFlowDirectories, loadFlowDirectory } from '../../src/domain/flow-definition';
import { OPERATOR_ROLE_ATTRIBUTE } from '../../src/domain/operators';
import type { Application } from '../../src/domain/storage/applications';
import type { Client } from '../../src/domain/clients';
import { ensureOperatorsApplication } from '../../src/usecases/operators/operators';
import { addOperator, NotAnOperatorsAccountError, promote } from '../../src/usecases/operators/add-operator';
import { changeDefaultSettings } from '../../src/usecases/clients/change-settings';
import { buildConsole } from '../../src/console/console';
import { FLOWS, manualClock, startTestApp, type TestApp } from '../helpers/backend';
import { oathtool } from '../helpers/totp';
import { mailsTo } from '../helpers/mail-files';
import { createLogger } from '../../src/logger';

// Nobody becomes an operator by signing up first (docs/console.md#operators): the operators'
// application takes no registration by any way in, operators:add refuses an account it did not make
// (or takes it over), and a new operator chooses its password from a mailed link that verifies its address.

const clock = manualClock();
const acting = { actor: { kind: 'operator' as const, name: 'test' }, origin: {} };
const PASSWORD = 'pre-claimed horse battery';
let t: TestApp;
let ops: Application;
let login: Client;
const HOST = 'operators.localhost';

beforeAll(async () => {
  t = await startTestApp({ clock, env: { CONSOLE_PORT: '3999', CONSOLE_PUBLIC_URL: 'https://console.example.com', MAIL_LIMIT_RECIPIENT: '100/3600' } });
  ({ app: ops } = await ensureOperatorsApplication(t.runtime.services, { name: 'operators', flows: () => findFlowDirectories(FLOWS).map(loadFlowDirectory), acting }));
  login = (await t.runtime.services.clients.list(ops.id, ['login_client']))[0];
});
afterAll(() => t?.close());

const post = (path: string, body: Record<string, string>) => request(t.app).post(path).set('Host', HOST).type('form').send(body);
const register = (email: string) => post('/oauth/register_native_traditional', {
  client_id: login.clientId, locale: 'en-US', emailAddress: email, newPassword: PASSWORD, newPasswordConfirm: PASSWORD, firstName: 'Eve', lastName: 'Pre', displayName: 'eve',
});
/** Changes the operators' application's settings, seen by the next request (the application cache lives 5 s). */
async function setOps(...entries: [string, string][]) {
  await changeDefaultSettings(t.runtime.services, { applicationId: ops.id, acting, entries });
  clock.advance(5_100);
}
const signIn = (email: string, password = PASSWORD) => post('/oauth/auth_native_traditional', { client_id: login.clientId, locale: 'en-US', signInEmailAddress: email, currentPassword: password });

/**
 * An account someone made before anyone made it an operator (where the application took
 * registrations then), with an authenticator of their own, signed in: its record and session.
 */
async function preClaimed(email: string) {
  await setOps(['registration', 'open']);
  let enroll: string;
  try {
    const registered = await register(email);
    expect(registered.body).toMatchObject({ code: 215, enroll_token: expect.any(String) });
    enroll = registered.body.enroll_token;
  } finally {
    await setOps(['registration', 'closed']);
  }
  const { secret } = (await post('/oauth/totp_enroll_native', { enroll_token: enroll })).body as { secret: string };
  expect((await post('/oauth/totp_confirm_native', { enroll_token: enroll, code: oathtool(secret, clock.now()) })).body.stat).toBe('ok');
  clock.advance(30_000);
  const paused = await signIn(email);
  const session = await post('/oauth/mfa_verify_native', { client_id: login.clientId, mfa_token: paused.body.mfa_token, code: oathtool(secret, clock.now()) });
  expect(session.body).toMatchObject({ stat: 'ok', access_token: expect.any(String) });
  return { record: (await t.runtime.db.records.find(ops.id, { email }))!, accessToken: session.body.access_token as string };
}
const current = async () => (await t.runtime.db.applications.findByName('operators'))!;

describe('the operators\' application takes no registration', () => {
  it('refuses the API\'s registration with the spec\'s error, saying why', async () => {
    const res = await register('newhire@corp.example');
    expect(res.body).toMatchObject({ stat: 'error', error: 'permission_error', error_description: expect.stringContaining('does not take registrations'), request_id: expect.any(String) });
    expect(await t.runtime.db.records.find(ops.id, { email: 'newhire@corp.example' })).toBeUndefined();
  });

  it('takes no account made with a creation token either (the person registering with a token an app was given)', async () => {
    const [owner] = await t.runtime.services.clients.list(ops.id, ['owner']);
    const auth = `Basic ${Buffer.from(`${owner.clientId}:${owner.secret}`).toString('base64')}`;
    const token = (await request(t.app).post('/access/getCreationToken').set('Host', HOST).set('Authorization', auth).type('form').send({ type_name: 'user' })).body.creation_token as string;
    expect(token).toEqual(expect.any(String));
    const made = await request(t.app).post('/entity.create').set('Host', HOST).type('form')
      .send({ type_name: 'user', creation_token: token, attributes: JSON.stringify({ email: 'token@corp.example', operatorRole: 'admin' }) });
    expect(made.body).toMatchObject({ stat: 'error', code: 403, error_description: expect.stringContaining('does not take registrations') });
    expect(await t.runtime.db.records.find(ops.id, { email: 'token@corp.example' })).toBeUndefined();
  });

  it('shows no way to register on the hosted pages, and /register is the sign-in page', async () => {
    const query = { client_id: login.clientId, redirect_uri: 'https://console.example.com/callback', response_type: 'code', locale: 'en-US' };
    const signIn = await request(t.app).get('/signin').set('Host', HOST).query(query);
    expect(signIn.status).toBe(200);
    expect(signIn.text).not.toContain('/register?');
    const page = await request(t.app).get('/register').set('Host', HOST).query(query);
    expect(page.status).toBe(200);
    expect(page.text).toContain('id="f-signInEmailAddress"');
    expect(page.text).not.toContain('id="f-newPassword"');
    const posted = await request(t.app).post('/register').set('Host', HOST).type('form').send({ ...query, emailAddress: 'x@corp.example', newPassword: PASSWORD, newPasswordConfirm: PASSWORD });
    expect(posted.status).not.toBe(303);
    expect(await t.runtime.db.records.find(ops.id, { email: 'x@corp.example' })).toBeUndefined();
  });

  it('mails no registration code: an email code to an unknown address registers nothing, even where the client says so', async () => {
    await setOps(['email_code_sign_in', 'on'], ['email_code_registration', 'on']);
    try {
      const begun = await post('/oauth/email_code_begin', { client_id: login.clientId, locale: 'en-US', email: 'code@corp.example' });
      expect(begun.body).toMatchObject({ stat: 'ok', code_token: expect.any(String) });
      expect(await mailsTo(t.runtime, 'code@corp.example')).toHaveLength(0);
    } finally {
      await setOps(['email_code_sign_in', 'off'], ['email_code_registration', 'off']);
    }
  });

  it('is closed again by every operators:add, and the console stays shut while it is open', async () => {
    await setOps(['registration', 'open']);
    const consoleApp = buildConsole({ services: t.runtime.services, operatorsApp: 'operators', publicUrl: 'https://console.example.com', logger: createLogger('silent') });
    const shut = await request(consoleApp).get('/');
    expect(shut.status).toBe(503);
    expect(shut.text).toContain('takes registrations');
    ({ app: ops } = await ensureOperatorsApplication(t.runtime.services, { name: 'operators', flows: () => [], acting }));
    expect(ops.settings.registration).toBe('closed');
    expect((await request(consoleApp).get('/')).status).toBe(303);
  });
});

describe('operators:add', () => {
  it('makes a new operator and mails it a single-use link; the link sets the password and verifies the address', async () => {
    const done = await addOperator(t.runtime.services, { app: await current(), email: 'ada@corp.example', role: 'admin', reset: false, acting });
    expect(done).toMatchObject({ kind: 'created', mailed: true, record: { emailVerified: null, passwordHash: null, attributes: { [OPERATOR_ROLE_ATTRIBUTE]: 'admin' } } });
    const [mail] = await mailsTo(t.runtime, 'ada@corp.example');
    expect(mail.subject).toContain('operator');
    const link = new URL(mail.text!.match(/https?:\/\/\S+/)![0]);
    const code = link.searchParams.get('code')!;
    const page = await request(t.app).get('/reset-password').set('Host', HOST).query({ code });
    expect(page.status).toBe(200);
    const csrf = /name="csrf" value="([^"]*)"/.exec(page.text)![1];
    const cookie = (page.headers['set-cookie'] as unknown as string[])[0].split(';')[0];
    const chosen = 'operator chosen battery staple';
    const set = await request(t.app).post('/reset-password').set('Host', HOST).set('Cookie', cookie).type('form').send({ code, csrf, newPassword: chosen, newPasswordConfirm: chosen });
    expect(set.status).toBeLessThan(400);
    const after = (await t.runtime.db.records.find(ops.id, { email: 'ada@corp.example' }))!;
    expect(after.emailVerified).toBeInstanceOf(Date);
    expect(after.passwordHash).toBeTruthy();
    // single use
    const again = await request(t.app).post('/reset-password').set('Host', HOST).set('Cookie', cookie).type('form').send({ code, csrf, newPassword: chosen, newPasswordConfirm: chosen });
    expect(again.text).not.toContain('role="status"');
    expect((await t.runtime.db.records.find(ops.id, { email: 'ada@corp.example' }))!.version).toBe(after.version);
  });

  it('refuses an account it did not make: a pre-claimed address gets no role', async () => {
    const { record: eve } = await preClaimed('newhire@corp.example');
    await expect(addOperator(t.runtime.services, { app: await current(), email: 'NewHire@corp.example', role: 'admin', reset: false, acting })).rejects.toBeInstanceOf(NotAnOperatorsAccountError);
    await expect(promote(t.runtime.services, { app: await current(), record: eve, role: 'viewer', reset: false, acting })).rejects.toThrow(/--reset/);
    expect((await t.runtime.db.records.find(ops.id, { id: eve.id }))!.attributes[OPERATOR_ROLE_ATTRIBUTE]).toBeUndefined();
  });

  it('with --reset takes it over: what the registrant signed in with is gone, its sessions end, the address is mailed a link', async () => {
    const { record: mallory, accessToken } = await preClaimed('taken@corp.example');
    expect((await request(t.app).get('/entity').set('Host', HOST).query({ access_token: accessToken })).body.stat).toBe('ok');
    // a sign-in of the registrant's waiting for its code when the account is taken over
    clock.advance(30_000);
    const waiting = (await signIn('taken@corp.example')).body.mfa_token as string;
    expect(waiting).toEqual(expect.any(String));
    const done = await addOperator(t.runtime.services, { app: await current(), email: 'taken@corp.example', role: 'support', reset: true, acting });
    expect(done).toMatchObject({ kind: 'taken_over', record: { id: mallory.id, passwordHash: null, emailVerified: null, attributes: { [OPERATOR_ROLE_ATTRIBUTE]: 'support' } } });
    // the registrant's session, password and authenticator are gone
    expect((await request(t.app).get('/entity').set('Host', HOST).query({ access_token: accessToken })).body).toMatchObject({ code: 413 });
    expect((await signIn('taken@corp.example')).body).toMatchObject({ stat: 'error', code: 210 });
    expect(await t.runtime.db.factors.totp(ops.id, mallory.id)).toBeUndefined();
    expect((await post('/oauth/mfa_verify_native', { client_id: login.clientId, mfa_token: waiting, recovery_code: 'aaaaa-bbbbb' })).body).toMatchObject({ stat: 'error', argument_name: 'mfa_token' });
    const mails = await mailsTo(t.runtime, 'taken@corp.example');
    expect(mails.at(-1)!.subject).toContain('operator');
    // an operator's role changes without --reset once the command made it one
    expect(await promote(t.runtime.services, { app: await current(), record: done.record, role: 'viewer', reset: false, acting })).toMatchObject({ kind: 'role_set', from: 'support', to: 'viewer' });
  });
});
