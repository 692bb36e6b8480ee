import { createHmac } from 'node:crypto';
import request from 'supertest';
import { basic, manualClock, startTestApp, type TestApp } from '../helpers/backend';

const clock = manualClock(new Date('2026-05-01T08:00:00.000Z'));
let t: TestApp;
let loginId: string;
const REDIRECT = 'https://app.example.com/done';
const PASSWORD = 'correct horse battery';

const post = (path: string, body: Record<string, string>) => request(t.app).post(path).type('form').send(body);
/** `YYYY-MM-DD HH:MM:SS` in UTC, as both SDKs format the date. */
const sdkDate = (d = clock.now()) => d.toISOString().slice(0, 19).replace('T', ' ');
/** The SDKs' signature, computed here from their published sources (not with the project's code). */
const sdkSignature = (secret: string, date: string, accessToken: string) =>
  createHmac('sha1', Buffer.from(secret, 'utf8')).update(`refresh_access_token\n${date}\n${accessToken}\n`, 'utf8').digest('base64');
const secret = (n: number) => `${n}`.padStart(4, '0') + 'f3a9c1d2e4b5a6978899aabbccddeeff0011'.slice(0, 36);

/** Capture.performTraditionalSignIn (Android): the form's fields, refresh_secret, flow and version. */
const androidSignIn = (email: string, refreshSecret: string, password = PASSWORD) => post('/oauth/auth_native_traditional', {
  signInEmailAddress: email, currentPassword: password, client_id: loginId, locale: 'en-US', response_type: 'token', redirect_uri: REDIRECT,
  form: 'signInForm', refresh_secret: refreshSecret, flow: 'standard', flow_version: '1',
});
/** JRCapture refreshAccessTokenForDelegate (iOS): access_token, signature, date, client_id, locale, flow, flow_version. */
const refresh = (accessToken: string, refreshSecret: string, extra: Record<string, string> = {}) => {
  const date = extra.date ?? sdkDate();
  return post('/oauth/refresh_access_token', {
    access_token: accessToken, signature: sdkSignature(refreshSecret, date, accessToken), date, client_id: loginId, locale: 'en-US',
    flow: 'standard', flow_version: '1', ...extra,
  });
};
const readOwn = (accessToken: string) => request(t.app).post('/entity').set('Authorization', `OAuth ${accessToken}`).type('form').send({});

beforeAll(async () => {
  t = await startTestApp({ clock, env: { LOGIN_LIMIT_ACCOUNT: '1000/60' } });
  loginId = t.local.clients.login.client_id;
  const registered = await post('/oauth/register_native_traditional', {
    client_id: loginId, locale: 'en-US', emailAddress: 'ada@example.com', newPassword: PASSWORD, newPasswordConfirm: PASSWORD,
    firstName: 'Ada', lastName: 'Lovelace', displayName: 'ada', refresh_secret: secret(0), response_type: 'token',
  });
  expect(JSON.stringify(registered.body)).toContain('"stat":"ok"');
  // a registration's token has a session too
  expect((await refresh(registered.body.access_token, secret(0))).body).toMatchObject({ stat: 'ok', access_token: expect.any(String), expires_in: 3600 });
});
afterAll(() => t.close());

describe('/oauth/refresh_access_token (the mobile SDKs)', () => {
  it('renews an expired access token; the new one reads the record; the session moves to it', async () => {
    const signedIn = await androidSignIn('ada@example.com', secret(1));
    const first = signedIn.body.access_token as string;
    clock.advance(2 * 3600_000); // the SDK refreshes once the hour is over
    expect((await readOwn(first)).body).toMatchObject({ code: 413 });
    const renewed = await refresh(first, secret(1));
    expect(renewed.body).toMatchObject({ stat: 'ok', access_token: expect.any(String), expires_in: 3600 });
    const second = renewed.body.access_token as string;
    expect(second).not.toBe(first);
    expect((await readOwn(second)).body.result).toMatchObject({ email: 'ada@example.com' });
    clock.advance(2 * 3600_000);
    const third = await refresh(second, secret(1));
    expect(third.body.stat).toBe('ok');
    expect((await readOwn(third.body.access_token)).body.stat).toBe('ok');
  });

  it('a session refreshed once, presented again, has leaked: it and its successors end', async () => {
    const first = (await androidSignIn('ada@example.com', secret(2))).body.access_token as string;
    const second = (await refresh(first, secret(2))).body.access_token as string;
    expect((await readOwn(second)).body.stat).toBe('ok');
    clock.advance(1000);
    expect((await refresh(first, secret(2))).body).toMatchObject({ stat: 'error', code: 413, error: 'invalid_access_token' });
    expect((await readOwn(second)).body).toMatchObject({ code: 413 });
    expect((await refresh(second, secret(2))).body).toMatchObject({ code: 413 });
  });

  it('parallel refreshes of one token: exactly one succeeds', async () => {
    const token = (await androidSignIn('ada@example.com', secret(3))).body.access_token as string;
    const answers = await Promise.all(Array.from({ length: 8 }, () => refresh(token, secret(3))));
    expect(answers.filter((a) => a.body.stat === 'ok')).toHaveLength(1);
    for (const a of answers.filter((x) => x.body.stat !== 'ok')) expect(a.body).toMatchObject({ code: 413 });
  });

  it('a password change ends the other devices\' sessions, not the one that changed it', async () => {
    const phone = (await androidSignIn('ada@example.com', secret(4))).body.access_token as string;
    const tablet = (await androidSignIn('ada@example.com', secret(5))).body.access_token as string;
    const changed = await post('/oauth/update_profile_native', {
      client_id: loginId, locale: 'en-US', access_token: tablet, form: 'changePasswordForm',
      currentPassword: PASSWORD, newPassword: 'battery staple horse', newPasswordConfirm: 'battery staple horse',
    });
    expect(changed.body.stat).toBe('ok');
    expect((await refresh(phone, secret(4))).body).toMatchObject({ code: 413 });
    expect((await refresh(tablet, secret(5))).body.stat).toBe('ok');
    await post('/oauth/update_profile_native', {
      client_id: loginId, locale: 'en-US', access_token: (await androidSignIn('ada@example.com', secret(6), 'battery staple horse')).body.access_token,
      form: 'changePasswordForm', currentPassword: 'battery staple horse', newPassword: PASSWORD, newPasswordConfirm: PASSWORD,
    });
  });

  it('refuses a wrong secret, a stale or malformed date, another client, unknown tokens and missing parameters', async () => {
    const token = (await androidSignIn('ada@example.com', secret(7))).body.access_token as string;
    expect((await refresh(token, secret(8))).body).toMatchObject({ code: 200, error: 'invalid_argument', argument_name: 'signature' });
    expect((await refresh(token, secret(7), { date: sdkDate(new Date(clock.now().getTime() - 6 * 60_000)) })).body).toMatchObject({ code: 200, argument_name: 'date' });
    expect((await refresh(token, secret(7), { date: sdkDate(new Date(clock.now().getTime() + 6 * 60_000)) })).body).toMatchObject({ code: 200, argument_name: 'date' });
    expect((await refresh(token, secret(7), { date: 'yesterday' })).body).toMatchObject({ code: 200, argument_name: 'date' });
    expect((await refresh('f'.repeat(40), secret(7))).body).toMatchObject({ code: 413 });
    const other = await request(t.app).post('/clients/add').set('Authorization', basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret))
      .type('form').send({ features: '["login_client"]' });
    expect((await refresh(token, secret(7), { client_id: other.body.client_id })).body).toMatchObject({ code: 413 });
    for (const missing of ['access_token', 'signature', 'date', 'client_id', 'locale']) {
      expect((await refresh(token, secret(7), { [missing]: '' })).body).toMatchObject({ code: 100, argument_name: missing });
    }
    // none of those spent the session
    expect((await refresh(token, secret(7))).body.stat).toBe('ok');
  });

  it('a refresh_secret must look like one; without one a token has no session', async () => {
    expect((await androidSignIn('ada@example.com', 'short')).body).toMatchObject({ code: 200, argument_name: 'refresh_secret' });
    expect((await androidSignIn('ada@example.com', `${secret(9)} x`)).body).toMatchObject({ code: 200, argument_name: 'refresh_secret' });
    const plain = await post('/oauth/auth_native_traditional', { signInEmailAddress: 'ada@example.com', currentPassword: PASSWORD, client_id: loginId, locale: 'en-US' });
    expect((await refresh(plain.body.access_token, secret(9))).body).toMatchObject({ code: 413 });
  });
});
