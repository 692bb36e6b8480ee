import fs from 'node:fs';
import path from 'node:path';
import { simpleParser } from 'mailparser';
import request from 'supertest';
import { basic, manualClock, startTestApp, type TestApp } from '../helpers/backend';

const clock = manualClock();
let t: TestApp;
let owner: string;
let uuid: string;

const issueCode = async (lifetime = '3600') =>
  (await request(t.app).post('/access/getVerificationCode').set('Authorization', owner).type('form')
    .send({ type_name: 'user', uuid, attribute_name: 'emailVerified', lifetime })).body.verification_code as string;
const emailVerified = async () =>
  (await request(t.app).post('/entity').set('Authorization', owner).type('form').send({ type_name: 'user', uuid })).body.result.emailVerified;
/** The confirm button's form: its hidden fields and the cookie the page set. */
async function openLink(code: string, headers: Record<string, string> = {}) {
  const res = await request(t.app).get('/verify-email').query({ verification_code: code }).set(headers);
  const field = (name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(res.text)?.[1];
  return { res, csrf: field('csrf'), cookie: (res.headers['set-cookie'] as unknown as string[] | undefined)?.[0]?.split(';')[0] };
}

beforeAll(async () => {
  t = await startTestApp({ clock });
  owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
  uuid = (await request(t.app).post('/entity.create').set('Authorization', owner).type('form')
    .send({ type_name: 'user', attributes: '{"email":"page@example.com"}' })).body.uuid;
  // where finished pages send people back
  await request(t.app).post('/settings/set_default').set('Authorization', owner).type('form').send({ key: 'app_url', value: 'https://app.example.com/home' });
  clock.advance(6_000); // the application cache lives 5 s
});
afterAll(() => t.close());

describe('GET /verify-email (where verification emails link)', () => {
  it('the link only shows a button (mail scanners do not use the code); the click verifies', async () => {
    const code = await issueCode();
    const { res, csrf, cookie } = await openLink(code);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/text\/html/);
    expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(res.headers['content-security-policy']).toContain("form-action 'self'");
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.text).toContain('<button type="submit">Verify my email address</button>');
    // it says which address it verifies
    expect(res.text).toContain('Confirm that page@example.com is your email address.');
    expect(cookie).toMatch(/^gh_verify_csrf=/);
    expect(res.headers['set-cookie']![0]).toMatch(/HttpOnly/i);
    expect(await emailVerified()).toBeNull(); // opening the link used nothing

    // a POST without the page's token (another site's form) does nothing
    const forged = await request(t.app).post('/verify-email').type('form').send({ verification_code: code, csrf: 'x'.repeat(32) });
    expect(forged.status).toBe(403);
    expect(await emailVerified()).toBeNull();

    const confirmed = await request(t.app).post('/verify-email').set('Cookie', cookie!).type('form').send({ verification_code: code, csrf });
    expect(confirmed.status).toBe(200);
    expect(confirmed.text).toContain('Your email address is verified');
    expect(confirmed.text).toContain('<a class="button" href="https://app.example.com/home">');
    expect(await emailVerified()).toMatch(/ \+0000$/);

    // the link again: used, the address verified, and the way back to the app (no dead end)
    const again = await openLink(code);
    expect(again.res.status).toBe(410);
    expect(again.res.text).toContain('Your email address is already verified: this link was used.');
    expect(again.res.text).not.toContain('page@example.com');
    expect(again.res.text).toContain('<a class="button" href="https://app.example.com/home">');
    expect(again.csrf).toBeUndefined();
    const twice = await request(t.app).post('/verify-email').set('Cookie', cookie!).type('form').send({ verification_code: code, csrf });
    expect(twice.text).toContain('is already verified');
  });

  it('expired, unknown and incomplete links each say what to do; in the request\'s language', async () => {
    const code = await issueCode('60');
    clock.advance(120_000);
    const expired = await openLink(code);
    expect(expired.res.status).toBe(410);
    expect(expired.res.text).toContain('Ask the app to send you a new verification email');
    const unknown = await openLink('A'.repeat(40), { 'Accept-Language': 'de-DE,de;q=0.9' });
    expect(unknown.res.status).toBe(404);
    expect(unknown.res.text).toContain('Dieser Link ist unbekannt');
    expect(unknown.res.text).toContain('<html lang="de">');
    const incomplete = await request(t.app).get('/verify-email').query({ locale: 'fr-FR' });
    expect(incomplete.status).toBe(404);
    expect(incomplete.text).toContain('Ce lien est incomplet');
    // whatever is sent, nothing comes back unescaped
    const hostile = await request(t.app).get('/verify-email').query({ verification_code: '<script>alert(1)</script>', locale: '"><img src=x>' });
    expect(hostile.text).not.toContain('<script>alert');
    expect(hostile.text).not.toContain('<img');
  });

  it('an expired link from an app\'s email offers a new one, answering as verify_email_native does', async () => {
    const loginId = t.local.clients.login.client_id;
    const mailDir = t.backend.config.mailDir;
    const mails = () => (fs.existsSync(mailDir) ? fs.readdirSync(mailDir) : []);
    const registered = await request(t.app).post('/oauth/register_native_traditional').type('form').send({
      client_id: loginId, locale: 'en-US', emailAddress: 'late@example.com', newPassword: 'correct horse battery', newPasswordConfirm: 'correct horse battery',
      firstName: 'La', lastName: 'Te', displayName: 'late',
    });
    expect(registered.body.stat).toBe('ok');
    await t.runtime.queue.idle?.();
    const welcome = mails().find((f) => fs.readFileSync(path.join(mailDir, f), 'utf8').includes('late@example.com'))!;
    const link = new URL((await simpleParser(fs.readFileSync(path.join(mailDir, welcome)))).text!.match(/https?:\/\/\S+/)![0]);
    clock.advance(8 * 86_400_000); // past the verification lifetime (7 days)
    const expired = await openLink(link.searchParams.get('verification_code')!);
    expect(expired.res.status).toBe(410);
    expect(expired.res.text).toContain('Enter your email address to get a new one');
    expect(expired.res.text).toContain('action="/verify-email/resend"');
    expect(expired.res.text).toMatch(/<label for="f-signInEmailAddress">[^<]+<\/label><input id="f-signInEmailAddress"/);
    const code = link.searchParams.get('verification_code')!;
    const resend = (fields: Record<string, string>, cookie = expired.cookie!) => request(t.app).post('/verify-email/resend').set('Cookie', cookie).type('form').send({ verification_code: code, ...fields });

    const before = mails().length;
    expect((await request(t.app).post('/verify-email/resend').type('form').send({ verification_code: code, csrf: 'x'.repeat(32), signInEmailAddress: 'late@example.com' })).status).toBe(403);
    const unknown = await resend({ csrf: expired.csrf!, signInEmailAddress: 'nobody@example.com' });
    expect(unknown.status).toBe(400);
    const api = await request(t.app).post('/oauth/verify_email_native').type('form')
      .send({ client_id: loginId, locale: 'en-US', redirect_uri: `${t.backend.config.publicBaseUrl}/verify-email`, signInEmailAddress: 'nobody@example.com' });
    expect(api.body.code).toBe(210);
    expect(unknown.text).toContain(api.body.invalid_fields.resendVerificationForm[0]);
    await t.runtime.queue.idle?.();
    expect(mails().length).toBe(before);

    const sent = await resend({ csrf: expired.csrf!, signInEmailAddress: 'late@example.com' });
    expect(sent.status).toBe(200);
    expect(sent.text).toContain('we emailed you a new verification link');
    await t.runtime.queue.idle?.();
    expect(mails().length).toBe(before + 1);

    // a code an owner issued (no app email behind it) only says to ask the app
    const owned = await issueCode('60');
    clock.advance(120_000);
    const plain = await openLink(owned);
    expect(plain.res.text).toContain('Ask the app to send you a new verification email');
    expect(plain.res.text).not.toContain('/verify-email/resend');
  });
});
