import { createHmac } from 'node:crypto';
import request from 'supertest';
import { writeRecord } from '../../src/usecases/records/write-record';
import { disableUser } from '../../src/usecases/operators/disable-user';
import { enableUser } from '../../src/usecases/operators/enable-user';
import { basic, startTestApp, type TestApp } from '../helpers/backend';
import { operatorActing } from '../../src/usecases/operators/deps';

// A sign-in checks the password, then writes its tokens. What changes the account in between must
// not be undone or ignored by the sign-in's write.

let t: TestApp;
const post = (path: string, body: Record<string, string>) => request(t.app).post(path).type('form').send(body);
const shared = () => ({ client_id: t.local.clients.login.client_id, locale: 'en-US' });

beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

it('a password changed while a sign-in with the old one is being checked refuses that sign-in, and keeps the new password', async () => {
  const email = 'racing@example.com';
  const registered = await post('/oauth/register_native_traditional', {
    ...shared(), emailAddress: email, newPassword: 'old password one', newPasswordConfirm: 'old password one', firstName: 'R', lastName: 'C', displayName: 'rc',
  });
  expect(registered.body.stat).toBe('ok');
  const { db, work, passwords } = t.runtime.services;
  const app = (await db.applications.findByName('local'))!;
  const record = (await db.records.find(app.id, { email }))!;
  const newHash = await passwords.hash('new password two');
  // the reset lands after the old password was verified, before the sign-in writes
  const verify = passwords.verify.bind(passwords);
  passwords.verify = async (hash, given) => {
    const ok = await verify(hash, given);
    passwords.verify = verify;
    const app = (await db.applications.findById(record.applicationId))!;
    await work.run((uow) => writeRecord(t.runtime.services, uow, {
      app, entityId: record.id, role: 'client', channel: 'form', acting: { actor: { kind: 'system' }, origin: {} }, passwordHash: newHash, change: () => ({ change: {} }),
    }));
    return ok;
  };
  const signIn = await post('/oauth/auth_native_traditional', { ...shared(), signInEmailAddress: email, currentPassword: 'old password one' });
  expect(signIn.body).toMatchObject({ stat: 'error', code: 210, error: 'invalid_credentials' });
  expect(signIn.body.access_token).toBeUndefined();
  expect((await db.records.find(record.applicationId, { id: record.id }))!.passwordHash).toBe(newHash);
  // the new password signs in
  const again = await post('/oauth/auth_native_traditional', { ...shared(), signInEmailAddress: email, currentPassword: 'new password two' });
  expect(again.body).toMatchObject({ stat: 'ok' });
});

it('a disable that commits while a sign-in is in flight leaves nothing usable: its access token, authorization code and SDK session are refused', async () => {
  const email = 'disabled-racing@example.com';
  const registered = await post('/oauth/register_native_traditional', {
    ...shared(), emailAddress: email, newPassword: 'racing password', newPasswordConfirm: 'racing password', firstName: 'R', lastName: 'C', displayName: 'rd',
  });
  expect(registered.body.stat).toBe('ok');
  const { db, passwords, clock } = t.runtime.services;
  const app = (await db.applications.findByName('local'))!;
  const record = (await db.records.find(app.id, { email }))!;
  // the disable lands after the password was verified, before the sign-in writes its tokens
  const verify = passwords.verify.bind(passwords);
  passwords.verify = async (hash, given) => {
    const ok = await verify(hash, given);
    passwords.verify = verify;
    await disableUser(t.runtime.services, { app, entityId: record.id, acting: operatorActing('test') });
    return ok;
  };
  const refreshSecret = 'f'.repeat(40);
  const redirect = 'https://app.example.com/cb';
  const signIn = await post('/oauth/auth_native_traditional', {
    ...shared(), signInEmailAddress: email, currentPassword: 'racing password', response_type: 'code_and_token', redirect_uri: redirect, refresh_secret: refreshSecret,
  });
  const { access_token: accessToken, authorization_code: code } = signIn.body;
  // the sign-in's write does not order itself with the disable: it answers its tokens (or, should it
  // see the disable, refuses), and whatever it answered works for nothing while the user is disabled
  if (signIn.body.stat === 'ok') expect([typeof accessToken, typeof code]).toEqual(['string', 'string']);
  else expect(signIn.body).toMatchObject({ code: 210 });
  if (accessToken) {
    expect((await request(t.app).post('/entity').set('Authorization', `OAuth ${accessToken}`).type('form').send({})).body.code).toBe(413);
    const date = clock.now().toISOString().slice(0, 19).replace('T', ' ');
    const signature = createHmac('sha1', refreshSecret).update(`refresh_access_token\n${date}\n${accessToken}\n`).digest('base64');
    const renewed = await post('/oauth/refresh_access_token', { ...shared(), access_token: accessToken, signature, date, flow: 'standard', flow_version: '1' });
    expect(renewed.body.stat).toBe('error');
  }
  if (code) {
    const login = t.local.clients.login;
    const exchanged = await request(t.app).post('/oauth/token').set('Authorization', basic(login.client_id, login.client_secret)).type('form')
      .send({ grant_type: 'authorization_code', code, redirect_uri: redirect });
    expect(exchanged.body.stat).toBe('error');
  }
  // and enabling the user brings none of it back
  await enableUser(t.runtime.services, { app, entityId: record.id, acting: operatorActing('test') });
  if (accessToken) expect((await request(t.app).post('/entity').set('Authorization', `OAuth ${accessToken}`).type('form').send({})).body.code).toBe(413);
  if (code) {
    const login = t.local.clients.login;
    const again = await request(t.app).post('/oauth/token').set('Authorization', basic(login.client_id, login.client_secret)).type('form')
      .send({ grant_type: 'authorization_code', code, redirect_uri: redirect });
    expect(again.body.stat).toBe('error');
  }
});
