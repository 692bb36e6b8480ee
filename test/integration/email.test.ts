import type { ParsedMail } from 'mailparser';
import request from 'supertest';
import { mailsTo as mailsWritten } from '../helpers/mail-files';
import { basic, startTestApp, type TestApp } from '../helpers/backend';
import { stored } from '../helpers/stored';

let t: TestApp;
let owner: string;
let login: { id: string; auth: string };
let recoverUrl: string;
let verifyUrl: string;

const post = (p: string, body: Record<string, string>) => request(t.app).post(p).type('form').send(body);
const forgot = (email: string, extra: Record<string, string> = {}) =>
  post('/oauth/forgot_password_native', { client_id: login.id, locale: 'en-US', redirect_uri: recoverUrl, signInEmailAddress: email, ...extra });
const verify = (email: string, extra: Record<string, string> = {}) =>
  post('/oauth/verify_email_native', { client_id: login.id, locale: 'en-US', redirect_uri: 'https://app.example.com/', signInEmailAddress: email, ...extra });
const register = (email: string, extra: Record<string, string> = {}) => post('/oauth/register_native_traditional', {
  client_id: login.id, locale: 'en-US', emailAddress: email, newPassword: 'correct horse battery', newPasswordConfirm: 'correct horse battery',
  firstName: 'Ada', lastName: 'Lovelace', displayName: 'ada', ...extra,
});

const mailsTo = (to: string) => mailsWritten(t.runtime, to);

const linkIn = (mail: ParsedMail, parameter: string) => new URL(mail.text!.match(/https?:\/\/\S+/)![0]).searchParams.get(parameter)!;

beforeAll(async () => {
  t = await startTestApp({ env: { MAIL_LIMIT_RECIPIENT: '3/3600', MAIL_LIMIT_ADDRESS: '1000/3600' } });
  owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
  login = { id: t.local.clients.login.client_id, auth: basic(t.local.clients.login.client_id, t.local.clients.login.client_secret) };
  const settings = (await request(t.app).get('/settings/items').query({ for_client_id: login.id }).set('Authorization', owner)).body.result;
  recoverUrl = settings.password_recover_url;
  verifyUrl = settings.verify_email_url;
});
afterAll(() => t.close());

describe('registration confirmation', () => {
  it('queues a welcome email with a verification link in the request locale', async () => {
    expect((await register('welcome@example.com', { locale: 'fr-FR', displayName: 'Zoé <b>' })).body.stat).toBe('ok');
    const [mail] = await mailsTo('welcome@example.com');
    expect(mail.subject).toBe('Bienvenue sur Gatehouse');
    expect(mail.html).toContain('Bienvenue, Zoé &lt;b&gt; !');
    const code = linkIn(mail, 'verification_code');
    expect(mail.text).toContain(verifyUrl);
    const used = await request(t.app).get('/access/useVerificationCode').query({ verification_code: code });
    expect(used.body.stat).toBe('ok');
  });
});

describe('/oauth/forgot_password_native', () => {
  it('mails a one-time code on password_recover_url that resets the password through /oauth/token', async () => {
    await register('reset@example.com');
    expect((await forgot('reset@example.com', { locale: 'de-DE' })).body).toEqual({ stat: 'ok' });
    const mails = await mailsTo('reset@example.com');
    expect(mails).toHaveLength(2); // the welcome email and this one, in either order
    const mail = mails.find((m) => m.subject === 'Setze dein Gatehouse-Passwort zurück')!;
    expect(mail).toBeDefined();
    expect(mail.text).toContain('innerhalb von 1 Stunde');
    const code = linkIn(mail, 'code');
    expect(mail.text).toContain(`${recoverUrl}?code=${code}`);
    const pair = await request(t.app).post('/oauth/token').set('Authorization', login.auth).type('form')
      .send({ grant_type: 'authorization_code', code, redirect_uri: recoverUrl });
    expect(pair.body.stat).toBe('ok');
    const set = await post('/oauth/update_profile_native', {
      client_id: login.id, locale: 'en-US', access_token: pair.body.access_token, form: 'newPasswordFormNoAuth',
      newPassword: 'a brand new one', newPasswordConfirm: 'a brand new one',
    });
    expect(set.body).toEqual({ stat: 'ok' });
    const signIn = (password: string) => post('/oauth/auth_native_traditional', { client_id: login.id, locale: 'en-US', signInEmailAddress: 'reset@example.com', currentPassword: password });
    expect((await signIn('a brand new one')).body.stat).toBe('ok');
    expect((await signIn('correct horse battery')).body.code).toBe(210);
    // the code was single use
    const again = await request(t.app).post('/oauth/token').set('Authorization', login.auth).type('form')
      .send({ grant_type: 'authorization_code', code, redirect_uri: recoverUrl });
    expect(again.body.code).toBe(413);
  });

  it('an unregistered email: 212 keyed by the form name, and nothing sent', async () => {
    const res = await forgot('ghost@example.com', { locale: 'es-ES' });
    expect(res.body).toMatchObject({ stat: 'error', code: 212, error: 'no_such_account', invalid_fields: { forgotPasswordForm: ['Ninguna cuenta usa este correo electrónico.'] } });
    expect(await mailsTo('ghost@example.com')).toHaveLength(0);
  });

  it('an account without a password: 540 with a localized message, nothing sent', async () => {
    await request(t.app).post('/entity.create').set('Authorization', owner).type('form')
      .send({ type_name: 'user', attributes: JSON.stringify({ email: 'social@example.com' }) });
    const res = await forgot('social@example.com', { locale: 'fr-FR' });
    expect(res.body).toMatchObject({ stat: 'error', code: 540, error: 'triggered_error', message: expect.stringContaining('réseau social') });
    expect(await mailsTo('social@example.com')).toHaveLength(0);
  });

  it('a redirect_uri other than password_recover_url: 200 naming it, nothing sent', async () => {
    await register('redirect@example.com');
    const res = await forgot('redirect@example.com', { redirect_uri: 'https://evil.example.com/' });
    expect(res.body).toMatchObject({ code: 200, argument_name: 'redirect_uri', expected_value: recoverUrl });
    expect((await mailsTo('redirect@example.com')).map((m) => m.subject)).toEqual(['Welcome to Gatehouse']);
  });

  it('a client without password_recover_url: a clear error, nothing queued', async () => {
    const bare = await request(t.app).post('/clients/add').set('Authorization', owner).type('form').send({ features: '["login_client"]' });
    await request(t.app).post('/settings/set_multi').set('Authorization', owner).type('form')
      .send({ for_client_id: bare.body.client_id, items: JSON.stringify({ default_flow_name: 'standard', default_flow_version: '1' }) });
    const before = await stored(t.runtime.db).count('outbox');
    const res = await forgot('redirect@example.com', { client_id: bare.body.client_id });
    expect(res.body).toMatchObject({ stat: 'error', code: 500 });
    expect(res.body.error_description).toContain('password_recover_url');
    expect(await stored(t.runtime.db).count('outbox')).toBe(before);
  });

  it('bad input: 100 for a missing field, 390 for an email of the wrong shape, 200 for an unknown form', async () => {
    const missing = await post('/oauth/forgot_password_native', { client_id: login.id, locale: 'en-US', redirect_uri: recoverUrl });
    expect(missing.body).toMatchObject({ code: 100, argument_name: 'signInEmailAddress' });
    expect((await forgot('not an email')).body).toMatchObject({ code: 390, invalid_fields: { signInEmailAddress: ['Enter a valid email address, such as name@example.com.'] } });
    expect((await forgot('x@example.com', { form: 'ForgotPasswordForm' })).body).toMatchObject({ code: 200, argument_name: 'form' });
    expect((await forgot('x@example.com', { redirect_uri: '' })).body).toMatchObject({ code: 100, argument_name: 'redirect_uri' });
  });

  it('limits emails per address before knowing whether it is registered (510)', async () => {
    for (const email of ['limit@example.com', 'limit-ghost@example.com']) {
      if (email === 'limit@example.com') await register(email);
      const answers = [];
      for (let i = 0; i < 3; i++) answers.push((await forgot(email)).body.code ?? 'ok');
      const blocked = await forgot(email);
      expect(blocked.body).toMatchObject({ code: 510, error: 'api_limit_error' });
      expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
    }
    // 3 sent to the registered address, none to the other
    expect(await mailsTo('limit@example.com')).toHaveLength(3 + 1); // + its welcome email
    expect(await mailsTo('limit-ghost@example.com')).toHaveLength(0);
  });
});

describe('/oauth/verify_email_native', () => {
  it('mails a verification code that sets emailVerified; a second request then answers 540', async () => {
    await register('verify@example.com');
    expect((await verify('verify@example.com', { locale: 'es-ES' })).body).toEqual({ stat: 'ok' });
    // the welcome email of the registration may be written after it: found by subject, not by order
    const mail = (await mailsTo('verify@example.com')).find((m) => m.subject === 'Confirma tu correo electrónico para Gatehouse');
    expect(mail).toBeDefined();
    const used = await request(t.app).get('/access/useVerificationCode').query({ verification_code: linkIn(mail!, 'verification_code') });
    expect(used.body.stat).toBe('ok');
    const again = await verify('verify@example.com', { locale: 'de-DE' });
    expect(again.body).toMatchObject({ code: 540, error: 'triggered_error', message: 'Diese E-Mail-Adresse ist bereits bestätigt.' });
  });

  it('an unregistered email: 210; a missing redirect_uri: 100', async () => {
    expect((await verify('nobody@example.com')).body).toMatchObject({ code: 210, invalid_fields: { resendVerificationForm: ['No account uses this email address.'] } });
    expect((await verify('nobody@example.com', { redirect_uri: '' })).body).toMatchObject({ code: 100, argument_name: 'redirect_uri' });
  });
});
