import request from 'supertest';
import { basic, manualClock, startTestApp, type TestApp } from '../helpers/backend';

const clock = manualClock();

let t: TestApp;
let owner: string;
let loginId: string;
const APP = 'https://app.example.com';
const EVIL = 'https://evil.example';

const setting = (params: Record<string, string>, path = '/settings/set') => request(t.app).post(path).set('Authorization', owner).type('form').send(params);
const preflightOf = (path: string, origin: string) => request(t.app).options(path).set('Origin', origin)
  .set('Access-Control-Request-Method', 'POST').set('Access-Control-Request-Headers', 'content-type');
const signIn = (origin: string, password = 'correct horse battery', clientId = loginId) => request(t.app).post('/oauth/auth_native_traditional').set('Origin', origin).type('form')
  .send({ client_id: clientId, locale: 'en-US', signInEmailAddress: 'cors@example.com', currentPassword: password });

beforeAll(async () => {
  t = await startTestApp({ clock, env: { LOGIN_LIMIT_ACCOUNT: '1000/60' } });
  owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
  loginId = t.local.clients.login.client_id;
  const registered = await request(t.app).post('/oauth/register_native_traditional').type('form').send({
    client_id: loginId, locale: 'en-US', emailAddress: 'cors@example.com', newPassword: 'correct horse battery', newPasswordConfirm: 'correct horse battery',
    firstName: 'Cors', lastName: 'Test', displayName: 'cors',
  });
  expect(registered.body.stat).toBe('ok');
});
afterAll(() => t.close());

describe('CORS for browser apps (login client setting allowed_origins)', () => {
  it('allows nothing by default', async () => {
    const pre = await preflightOf('/oauth/auth_native_traditional', APP);
    expect(pre.status).toBe(204);
    expect(pre.headers['access-control-allow-origin']).toBeUndefined();
    const res = await signIn(APP);
    expect(res.body.stat).toBe('ok'); // the server answers; the browser keeps it from the page
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('allows the origins a login client lists, on its own calls, answers and errors alike', async () => {
    // a wildcard, or a URL with a path, is refused when set, with the form expected
    for (const bad of [`${APP} *`, `${APP} https://app.example.com/path`, JSON.stringify([APP])]) {
      expect((await setting({ for_client_id: loginId, key: 'allowed_origins', value: bad })).body)
        .toMatchObject({ stat: 'error', code: 200, argument_name: 'value', error_description: expect.stringContaining('such as https://app.example.com') });
    }
    expect((await setting({ for_client_id: loginId, key: 'allowed_origins', value: `${APP}, https://other.example` })).body.stat).toBe('ok');
    const pre = await preflightOf('/oauth/auth_native_traditional', APP);
    expect(pre.status).toBe(204);
    expect(pre.headers).toMatchObject({
      'access-control-allow-origin': APP, 'access-control-allow-methods': 'POST', 'access-control-max-age': '600',
      'access-control-allow-headers': expect.stringContaining('Content-Type'),
    });
    expect(pre.headers.vary).toContain('Origin');
    for (const path of ['/oauth/register_native_traditional', '/oauth/refresh_access_token', '/oauth/forgot_password_native', '/entity']) {
      expect((await preflightOf(path, APP)).headers['access-control-allow-origin']).toBe(APP);
    }

    const ok = await signIn(APP);
    expect(ok.body.stat).toBe('ok');
    expect(ok.headers['access-control-allow-origin']).toBe(APP);
    const wrong = await signIn(APP, 'wrong horse');
    expect(wrong.body.code).toBe(210);
    expect(wrong.headers['access-control-allow-origin']).toBe(APP);

    // an origin not listed, a wildcard, or a URL with a path: never
    for (const origin of [EVIL, 'https://app.example.com.evil.example', 'null']) {
      expect((await preflightOf('/oauth/auth_native_traditional', origin)).headers['access-control-allow-origin']).toBeUndefined();
      expect((await signIn(origin)).headers['access-control-allow-origin']).toBeUndefined();
    }
  });

  it('an access token\'s own record, read from the page: allowed by the client the token was issued to', async () => {
    const token = (await signIn(APP)).body.access_token as string;
    const read = await request(t.app).post('/entity').set('Origin', APP).set('Authorization', `OAuth ${token}`).type('form').send({});
    expect(read.body.result.email).toBe('cors@example.com');
    expect(read.headers['access-control-allow-origin']).toBe(APP);
    const fromEvil = await request(t.app).post('/entity').set('Origin', EVIL).set('Authorization', `OAuth ${token}`).type('form').send({});
    expect(fromEvil.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('is per client: another login client without the setting gets nothing; the application default covers clients without one', async () => {
    const other = await request(t.app).post('/clients/add').set('Authorization', owner).type('form').send({ features: '["login_client"]' });
    expect((await signIn(APP, 'correct horse battery', other.body.client_id)).headers['access-control-allow-origin']).toBeUndefined();
    await setting({ key: 'allowed_origins', value: 'https://shop.example' }, '/settings/set_default');
    clock.advance(6_000); // the application's settings are cached for 5 s
    expect((await signIn('https://shop.example', 'correct horse battery', other.body.client_id)).headers['access-control-allow-origin']).toBe('https://shop.example');
    // the first client's own list still wins for it
    expect((await signIn('https://shop.example')).headers['access-control-allow-origin']).toBeUndefined();
  });

  it('a browser app adds the second factor a sign-in asks for: its enroll_token calls, sent with its client_id, are readable by its page', async () => {
    expect((await setting({ for_client_id: loginId, key: 'allowed_origins', value: `${APP}, https://other.example` })).body.stat).toBe('ok');
    await setting({ key: 'second_factor', value: 'required' }, '/settings/set_default');
    clock.advance(6_000);
    try {
      const sent = await signIn(APP);
      expect(sent.body).toMatchObject({ code: 215, enroll_token: expect.any(String) });
      expect(sent.headers['access-control-allow-origin']).toBe(APP);
      expect((await preflightOf('/oauth/totp_enroll_native', APP)).headers['access-control-allow-origin']).toBe(APP);
      const enroll = (params: Record<string, string>) => request(t.app).post('/oauth/totp_enroll_native').set('Origin', APP).type('form').send(params);
      const started = await enroll({ client_id: loginId, enroll_token: sent.body.enroll_token as string });
      expect(started.body).toMatchObject({ stat: 'ok', secret: expect.any(String) });
      expect(started.headers['access-control-allow-origin']).toBe(APP);
      // another client's id: the token was not its sign-in's
      const other = await request(t.app).post('/clients/add').set('Authorization', owner).type('form').send({ features: '["login_client"]' });
      expect((await enroll({ client_id: other.body.client_id as string, enroll_token: sent.body.enroll_token as string })).body)
        .toMatchObject({ stat: 'error', code: 200, argument_name: 'enroll_token', error_description: expect.stringContaining('another client') });
      expect((await enroll({ client_id: 'no-such-client', enroll_token: sent.body.enroll_token as string })).body).toMatchObject({ stat: 'error', code: 403, error: 'permission_error' });
    } finally {
      await setting({ key: 'second_factor', value: 'optional' }, '/settings/set_default');
      clock.advance(6_000);
    }
  });

  it('endpoints browsers have no business calling answer no preflight; flow documents are public', async () => {
    expect((await preflightOf('/clients/list', APP)).status).toBe(405);
    expect((await preflightOf('/entity.delete', APP)).status).toBe(405);
    const doc = await request(t.app).get('/widget_data/flows/local/standard/1/en-US.json').set('Origin', EVIL);
    expect(doc.headers['access-control-allow-origin']).toBe('*');
  });
});
