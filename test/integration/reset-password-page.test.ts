import fs from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import { simpleParser } from 'mailparser';
import { manualClock, startTestApp, type TestApp } from '../helpers/backend';

let t: TestApp;
const clock = manualClock();
let loginId: string;
let recoverUrl: string;
const PASSWORD = 'correct horse battery';
const escapeHtml = (v: string) => v.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
const post = (route: string, body: Record<string, string>) => request(t.app).post(route).type('form').send(body);
const signIn = (password: string) => post('/oauth/auth_native_traditional', { client_id: loginId, locale: 'en-US', signInEmailAddress: 'reset@example.com', currentPassword: password });

/** Asks for a reset email and answers the code its link carries. */
async function resetCode(): Promise<string> {
  const before = new Set(fs.existsSync(t.backend.config.mailDir) ? fs.readdirSync(t.backend.config.mailDir) : []);
  expect((await post('/oauth/forgot_password_native', { client_id: loginId, locale: 'en-US', redirect_uri: recoverUrl, signInEmailAddress: 'reset@example.com' })).body.stat).toBe('ok');
  await t.runtime.queue.idle?.();
  const file = fs.readdirSync(t.backend.config.mailDir).find((f) => !before.has(f))!;
  const mail = await simpleParser(fs.readFileSync(path.join(t.backend.config.mailDir, file)));
  const link = new URL(mail.text!.match(/https?:\/\/\S+/)![0]);
  expect(link.pathname).toBe('/reset-password');
  return link.searchParams.get('code')!;
}
async function open(code: string, query: Record<string, string> = {}) {
  const res = await request(t.app).get('/reset-password').query({ code, ...query });
  const field = (name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(res.text)?.[1];
  return { res, csrf: field('csrf'), cookie: (res.headers['set-cookie'] as unknown as string[] | undefined)?.[0]?.split(';')[0] };
}
const submit = (cookie: string, fields: Record<string, string>) => request(t.app).post('/reset-password').set('Cookie', cookie).type('form').send(fields);

beforeAll(async () => {
  t = await startTestApp({ clock, env: { MAIL_LIMIT_RECIPIENT: '100/3600' } });
  loginId = t.local.clients.login.client_id;
  recoverUrl = `${t.backend.config.publicBaseUrl}/reset-password`;
  expect((await post('/oauth/register_native_traditional', {
    client_id: loginId, locale: 'en-US', emailAddress: 'reset@example.com', newPassword: PASSWORD, newPasswordConfirm: PASSWORD, firstName: 'Re', lastName: 'Set', displayName: 'reset',
  })).body.stat).toBe('ok');
});
afterAll(() => t.close());

describe('GET /reset-password (where password emails link)', () => {
  it('shows the flow\'s form; a mistake keeps the code; the new password works and every session ends', async () => {
    const session = (await signIn(PASSWORD)).body.access_token as string;
    const code = await resetCode();
    const { res, csrf, cookie } = await open(code);
    expect(res.status).toBe(200);
    expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    // the flow's fields, labels bound to inputs, rules as attributes
    expect(res.text).toMatch(/<label for="f-newPassword">[^<]+<\/label><input id="f-newPassword" name="newPassword" aria-describedby="f-newPassword-tip f-newPassword-error" required data-rules="[^"]+" type="password" autocomplete="new-password" minlength="15"/);
    expect(res.text).toContain('name="newPasswordConfirm"');
    // the account's address in a username field, for password managers to save the new password under
    expect(res.text).toContain('<input type="text" name="username" autocomplete="username" value="reset@example.com" class="visually-hidden" tabindex="-1" aria-hidden="true" readonly>');

    // a mismatch: the flow's message, the form again, the code not spent
    const mismatch = await submit(cookie!, { code, csrf: csrf!, newPassword: 'battery staple horse', newPasswordConfirm: 'battery stapler' });
    expect(mismatch.status).toBe(400);
    expect(mismatch.text).toMatch(/role="alert">[^<]+</);
    expect(mismatch.text).toContain('aria-invalid="true"');
    const retry = /name="csrf" value="([^"]*)"/.exec(mismatch.text)![1];
    const retryCookie = (mismatch.headers['set-cookie'] as unknown as string[])[0].split(';')[0];

    // a POST without the page's token does nothing
    expect((await request(t.app).post('/reset-password').type('form').send({ code, csrf: 'x'.repeat(32), newPassword: 'battery staple horse', newPasswordConfirm: 'battery staple horse' })).status).toBe(403);

    // the way back: the client's app_url (else its redirect URIs' origin)
    const owner = `Basic ${Buffer.from(`${t.local.clients.owner.client_id}:${t.local.clients.owner.client_secret}`).toString('base64')}`;
    await request(t.app).post('/settings/set').set('Authorization', owner).type('form').send({ for_client_id: loginId, key: 'redirect_uris', value: 'https://app.example.com/signed-in' });
    clock.advance(6_000); // the client cache lives 5 s
    const done = await submit(retryCookie, { code, csrf: retry, newPassword: 'battery staple horse', newPasswordConfirm: 'battery staple horse' });
    expect(done.status).toBe(200);
    expect(done.text).toContain('Your password is changed');
    expect(done.text).toContain('<a class="button" href="https://app.example.com">Continue to the app</a>');
    expect((await signIn('battery staple horse')).body.stat).toBe('ok');
    expect((await signIn(PASSWORD)).body.code).toBe(210);
    expect((await request(t.app).post('/entity').set('Authorization', `OAuth ${session}`).type('form').send({})).body.code).toBe(413);

    // the link again: used
    const again = await open(code);
    expect(again.res.status).toBe(410);
    expect(again.res.text).toContain('already used');
    expect((await submit(retryCookie, { code, csrf: retry, newPassword: 'x'.repeat(10), newPasswordConfirm: 'x'.repeat(10) })).text).toContain('already used');
  });

  it('unknown codes, other codes, French, and hostile input', async () => {
    expect((await open('A'.repeat(40))).res.status).toBe(404);
    expect((await request(t.app).get('/reset-password')).status).toBe(404);
    const fr = await open(await resetCode(), { locale: 'fr-FR' });
    expect(fr.res.text).toContain('Choisissez un nouveau mot de passe');
    expect(fr.res.text).toContain('<html lang="fr">');
    // a code that is no password reset (an authorization code from a sign-in) opens nothing
    const signedIn = await post('/oauth/auth_native_traditional', {
      client_id: loginId, locale: 'en-US', signInEmailAddress: 'reset@example.com', currentPassword: 'battery staple horse', response_type: 'code', redirect_uri: recoverUrl,
    });
    expect((await open(signedIn.body.authorization_code)).res.status).toBe(404);
    const hostile = await request(t.app).get('/reset-password').query({ code: '"><script>alert(1)</script>', locale: '<img src=x>' });
    expect(hostile.text).not.toContain('<script>alert');
    expect(hostile.text).not.toContain('<img');
  });

  it('a used or expired link offers a new email, which answers no more than forgot_password_native', async () => {
    const mails = () => (fs.existsSync(t.backend.config.mailDir) ? fs.readdirSync(t.backend.config.mailDir).length : 0);
    const code = await resetCode();
    clock.advance(2 * 3600_000);
    const expired = await open(code);
    expect(expired.res.status).toBe(410);
    expect(expired.res.text).toContain('This link has expired');
    // the flow's forgotPasswordForm, posting to the resend address
    expect(expired.res.text).toContain('action="/reset-password/resend"');
    expect(expired.res.text).toMatch(/<label for="f-signInEmailAddress">[^<]+<\/label><input id="f-signInEmailAddress" name="signInEmailAddress"/);
    const resend = (cookie: string, fields: Record<string, string>) => request(t.app).post('/reset-password/resend').set('Cookie', cookie).type('form').send(fields);

    // without the page's token: nothing sent
    const before = mails();
    expect((await request(t.app).post('/reset-password/resend').type('form').send({ code, csrf: 'y'.repeat(32), signInEmailAddress: 'reset@example.com' })).status).toBe(403);
    // an unknown address: the flow's message, as the API's 212 says it
    const unknown = await resend(expired.cookie!, { code, csrf: expired.csrf!, signInEmailAddress: 'nobody@example.com' });
    expect(unknown.status).toBe(400);
    const api = await post('/oauth/forgot_password_native', { client_id: loginId, locale: 'en-US', redirect_uri: recoverUrl, signInEmailAddress: 'nobody@example.com' });
    expect(api.body.code).toBe(212);
    expect(unknown.text).toContain(escapeHtml(api.body.invalid_fields.forgotPasswordForm[0]));
    // HTML typed into the field comes back escaped
    const hostile = await resend(expired.cookie!, { code, csrf: expired.csrf!, signInEmailAddress: '"><b>x</b>@example.com' });
    expect(hostile.text).not.toContain('<b>x</b>');
    expect(hostile.text).toContain('&lt;b&gt;x&lt;/b&gt;');
    await t.runtime.queue.idle?.();
    expect(mails()).toBe(before);

    const sent = await resend(expired.cookie!, { code, csrf: expired.csrf!, signInEmailAddress: 'reset@example.com' });
    expect(sent.status).toBe(200);
    expect(sent.text).toContain('we emailed you a new link');
    await t.runtime.queue.idle?.();
    expect(mails()).toBe(before + 1);
    // and the new link works
    const fresh = await open(await resetCode());
    expect(fresh.res.status).toBe(200);
  });
});
