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
    expect(await emailVerified()).toMatch(/ \+0000$/);

    // the link again: already used, with what to do next
    const again = await openLink(code);
    expect(again.res.status).toBe(410);
    expect(again.res.text).toContain('already used');
    expect(again.csrf).toBeUndefined();
    const twice = await request(t.app).post('/verify-email').set('Cookie', cookie!).type('form').send({ verification_code: code, csrf });
    expect(twice.text).toContain('already used');
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
});
