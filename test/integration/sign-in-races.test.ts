import request from 'supertest';
import { changeAccount } from '../../src/domain/accounts';
import { startTestApp, type TestApp } from '../helpers/backend';

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
  const { db, outbox, versions, clock, passwords } = t.runtime.services;
  const app = (await db.applications.findByName('local'))!;
  const record = (await db.records.find(app.id, { email }))!;
  const newHash = await passwords.hash('new password two');
  // the reset lands after the old password was verified, before the sign-in writes
  const verify = passwords.verify.bind(passwords);
  passwords.verify = async (hash, given) => {
    const ok = await verify(hash, given);
    passwords.verify = verify;
    await changeAccount({ db, outbox, versions, now: () => clock.now() }, record.applicationId, record.id, { passwordHash: newHash });
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
