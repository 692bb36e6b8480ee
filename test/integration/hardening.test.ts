import { Writable } from 'node:stream';
import request from 'supertest';
import { formatSignatureDate, sign } from '../../src/domain/signature';
import { createRateLimiter } from '../../src/domain/rate-limit';
import { createLogger } from '../../src/logger';
import { buildApp } from '../../src/app';
import { createRuntime } from '../../src/runtime';
import { basic, manualClock, redisUrl, skipUnless, startTestApp, type TestApp } from '../helpers/backend';
import { stored } from '../helpers/stored';
import { LimitReachedError } from '../../src/domain/refusal';

/** Every log line the app writes, to assert what never reaches a log. */
const logLines: string[] = [];
const logStream = new Writable({ write(chunk, _enc, done) { logLines.push(String(chunk)); done(); } });
const clock = manualClock();

let t: TestApp;
let owner: string;
let loginId: string;
const post = (path: string, body: Record<string, string>, headers: Record<string, string> = {}) =>
  request(t.app).post(path).type('form').set(headers).send(body);
const shared = (extra: Record<string, string> = {}) => ({ client_id: loginId, locale: 'en-US', ...extra });
const register = (email: string, extra: Record<string, string> = {}) => post('/oauth/register_native_traditional', shared({
  emailAddress: email, newPassword: 'correct horse battery', newPasswordConfirm: 'correct horse battery', firstName: 'Ada', lastName: 'Lovelace', displayName: 'ada', ...extra,
}));
const signIn = (identifier: string, password: string) =>
  post('/oauth/auth_native_traditional', shared({ signInEmailAddress: identifier, currentPassword: password }));
const update = (accessToken: string, form: string, fields: Record<string, string>) =>
  post('/oauth/update_profile_native', shared({ access_token: accessToken, form, ...fields }));

beforeAll(async () => {
  t = await startTestApp({
    clock, logger: createLogger('info', logStream),
    env: { LOGIN_LIMIT_ACCOUNT: '10/600', LOGIN_LIMIT_ADDRESS: '100000/600', MAIL_LIMIT_RECIPIENT: '5/3600', MAIL_LIMIT_ADDRESS: '100000/3600' },
  });
  owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
  loginId = t.local.clients.login.client_id;
});
afterAll(() => t.close());

describe('NUL and control characters', () => {
  it('are refused at the edge with 200 invalid_argument, never a 500, and no statement reaches the log', async () => {
    const answers = [
      await signIn('a\u0000@example.com', 'x'),
      await post('/oauth/auth_native_traditional', { client_id: 'abc\u0000', locale: 'en-US' }),
      await request(t.app).get('/entity').set('Authorization', owner).query({ key_attribute: 'email', key_value: '"\\u0000"' }),
      await request(t.app).get('/clients/list').set('Authorization', basic('id\u0000', 'secret')),
      await request(t.app).get('/clients/list').set('Authorization', owner).query({ 'na\u0000me': '1' }),
    ];
    for (const res of answers) {
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ stat: 'error', code: 200, error: 'invalid_argument', request_id: expect.any(String) });
    }
    expect(logLines.join('')).not.toMatch(/SELECT|INSERT|UPDATE|\\u0000/);
  });

  it('reach no database from the pages, the account page or the OpenID provider: a page refuses with 400 and its error page, an endpoint with 400 and JSON', async () => {
    const hostile = ['a\u0000b', 'a\u001bb', 'a\u007fb', 'x'.repeat(17_000)];
    const pages = ['/signin', '/register', '/account', '/account/reauth', '/account/identities/link', '/oidc/auth', '/oidc/session/end', '/reset-password', '/verify-email'];
    const forms = ['/signin', '/signin/code', '/signin/passkey', '/signin/enroll', '/signin/forgot', '/register', '/register/passkey', '/register/continue', '/account/password', '/oidc/auth'];
    const endpoints = ['/oidc/token', '/oidc/token/introspection', '/oidc/token/revocation'];
    const before = logLines.length;
    for (const value of hostile) {
      const answers = [
        // (an address longer than Node's header limit, 16 KB, is refused before any route: 431)
        ...await Promise.all(pages.filter(() => value.length < 8_000).map(async (path) => [`GET ${path}`, await request(t.app).get(path)
          .query({ client_id: value, redirect_uri: 'https://app.example.com/cb', response_type: 'code', scope: 'openid' })] as const)),
        ...await Promise.all(forms.map(async (path) => [`POST ${path}`, await post(path, { client_id: value, locale: 'en-US', signInEmailAddress: 'a@example.com', response_type: 'code' })] as const)),
      ];
      for (const [what, res] of answers) {
        // (a form larger than its page takes is refused as too large: 413)
        expect([what, res.status]).toEqual([what, value.length > 8_000 && res.status === 413 ? 413 : 400]);
        expect(res.headers['content-type']).toMatch(/^text\/html/);
        expect(res.headers['content-security-policy']).toMatch(/default-src 'none'/);
        expect(res.text).toMatch(/not set up correctly|too large/);
      }
      for (const path of endpoints) {
        const res = await post(path, { client_id: value, client_secret: 'x', grant_type: 'client_credentials', token: 'abc' });
        expect([path, res.status]).toEqual([path, 401]);
        expect(res.body).toMatchObject({ error: 'invalid_client', request_id: expect.any(String) });
        // in the header as well (client_secret_basic)
        const basicAuth = await request(t.app).post(path).set('Authorization', basic(value.slice(0, 200), 'x')).type('form').send({ grant_type: 'client_credentials', token: 'abc' });
        expect([path, basicAuth.status]).toEqual([path, basicAuth.status < 500 ? basicAuth.status : 'a server error']);
        expect(basicAuth.headers['content-type']).toMatch(/^application\/json/);
      }
    }
    // a NUL in a query string of the provider's JSON endpoints: the spec's error body, 400
    const userinfo = await request(t.app).get('/oidc/me').query({ access_token: 'a\u0000b' });
    expect(userinfo.status).toBe(400);
    expect(userinfo.body).toMatchObject({ stat: 'error', error: 'invalid_request', argument_name: 'access_token', request_id: expect.any(String) });
    expect(logLines.slice(before).join('')).not.toMatch(/unexpected error|SELECT|INSERT|UPDATE/);
  });
});

describe('small answers that were wrong', () => {
  it('first_result takes every value its message allows', async () => {
    const res = await request(t.app).get('/entity.find').set('Authorization', owner).query({ type_name: 'user', first_result: '1000000000' });
    expect(res.body).toMatchObject({ stat: 'ok', result_count: 0 });
    expect((await request(t.app).get('/entity.find').set('Authorization', owner).query({ type_name: 'user', first_result: '1000000001' })).body)
      .toMatchObject({ code: 200, argument_name: 'first_result', error_description: 'invalid argument first_result: must be a whole number from 0 to 1000000000' });
  });

  it('a setting named like a member of every object is a setting like any other', async () => {
    expect((await request(t.app).get('/settings/get').set('Authorization', owner).query({ key: 'toString' })).body).toEqual({ stat: 'ok', result: null });
    expect((await post('/settings/set', { key: 'toString', value: 'x' }, { Authorization: owner })).body).toEqual({ stat: 'ok', result: false });
    expect((await request(t.app).get('/settings/get').set('Authorization', owner).query({ key: 'toString' })).body).toEqual({ stat: 'ok', result: 'x' });
    expect((await post('/settings/delete', { key: 'toString' }, { Authorization: owner })).body).toEqual({ stat: 'ok', result: true });
  });

  it('an attribute path through __proto__, and deleting the password, are refused naming attribute_name', async () => {
    await register('paths@example.com');
    const { access_token: token } = (await signIn('paths@example.com', 'correct horse battery')).body;
    for (const name of ['__proto__.polluted', '__proto__', 'address.__proto__', '_private']) {
      const res = await post('/entity.update', { access_token: token, attribute_name: name, value: '"x"' });
      expect(res.body).toMatchObject({ stat: 'error', code: 200, argument_name: 'attribute_name' });
    }
    const byToken = await post('/entity.delete', { access_token: token, attribute_name: 'password' });
    const byOwner = await post('/entity.delete', { type_name: 'user', key_attribute: 'email', key_value: '"paths@example.com"', attribute_name: 'password' }, { Authorization: owner });
    for (const res of [byToken, byOwner]) expect(res.body).toMatchObject({ stat: 'error', code: 200, argument_name: 'attribute_name' });
    expect((await signIn('paths@example.com', 'correct horse battery')).body.stat).toBe('ok');
  });
});

describe('parameter names', () => {
  it('toString, constructor, valueOf and hasOwnProperty are ordinary names', async () => {
    const res = await request(t.app).get('/clients/list').set('Authorization', owner)
      .query({ toString: '1', constructor: '2', valueOf: '3', hasOwnProperty: '4', __proto__: '5' });
    expect(res.body.stat).toBe('ok');
  });
});

describe('limits hold under parallel requests', () => {
  it('40 parallel wrong passwords against one account verify at most 10 (limit 10)', async () => {
    const created = await post('/entity.create', {
      type_name: 'user', attributes: JSON.stringify({ email: 'target@example.com', username: 'target', password: 'correct horse battery' }),
    }, { Authorization: owner });
    expect(created.body.stat).toBe('ok');
    const verify = jest.spyOn(t.runtime.services.passwords, 'verify');
    try {
      const answers = await Promise.all(Array.from({ length: 40 }, () => signIn('target@example.com', 'wrong guess')));
      const codes = answers.map((r) => r.body.code);
      expect(codes.filter((c) => c === 210)).toHaveLength(10);
      expect(codes.filter((c) => c === 510)).toHaveLength(30);
      expect(verify.mock.calls.length).toBeLessThanOrEqual(10);
      // the account's budget, not the identifier's: the username is locked out too
      expect((await signIn('target', 'correct horse battery')).body.code).toBe(510);
    } finally {
      verify.mockRestore();
    }
  });

  it('20 parallel reset requests for one recipient send exactly 5 (limit 5)', async () => {
    expect((await register('reset-me@example.com')).body.stat).toBe('ok');
    const before = await stored(t.runtime.db).count('outbox');
    const answers = await Promise.all(Array.from({ length: 20 }, () => post('/oauth/forgot_password_native', shared({
      redirect_uri: 'http://localhost:3000/reset-password', signInEmailAddress: 'RESET-me@example.com',
    }))));
    expect(answers.filter((r) => r.body.stat === 'ok')).toHaveLength(5);
    expect(answers.filter((r) => r.body.code === 510)).toHaveLength(15);
    expect(await stored(t.runtime.db).count('outbox')).toBe(before + 5);
  });

  it('the in-memory limiter keeps every lockout past 100,000 keys', async () => {
    const limiter = createRateLimiter();
    const limit = { max: 1, windowSeconds: 600 };
    await limiter.take([['locked', limit]]);
    for (let i = 0; i < 100_050; i++) await limiter.take([[`k${i}`, limit]]);
    await expect(limiter.take([['locked', limit]])).rejects.toBeInstanceOf(LimitReachedError);
  });

  it('registrations are limited per client address', async () => {
    const limited = await startTestApp({ env: { REGISTER_LIMIT_ADDRESS: '2/3600' } });
    try {
      const id = limited.local.clients.login.client_id;
      const attempt = (n: number) => request(limited.app).post('/oauth/register_native_traditional').type('form').send({
        client_id: id, locale: 'en-US', emailAddress: `r${n}@example.com`, newPassword: 'correct horse battery', newPasswordConfirm: 'correct horse battery',
        firstName: 'Ada', lastName: 'Lovelace', displayName: 'ada',
      });
      const codes = (await Promise.all([1, 2, 3, 4].map(attempt))).map((r) => r.body.stat === 'ok' ? 'ok' : r.body.code);
      expect(codes.filter((c) => c === 'ok')).toHaveLength(2);
      expect(codes.filter((c) => c === 510)).toHaveLength(2);
    } finally {
      await limited.close();
    }
  });

  it('a full argon2 queue answers 503 with Retry-After at once, and nothing else breaks', async () => {
    const busy = await startTestApp({ env: { ARGON2_CONCURRENCY: '1', ARGON2_QUEUE_MAX: '1' } });
    try {
      const id = busy.local.clients.login.client_id;
      const answers = await Promise.all(Array.from({ length: 12 }, (_, n) => request(busy.app).post('/oauth/auth_native_traditional').type('form')
        .send({ client_id: id, locale: 'en-US', signInEmailAddress: `nobody${n}@example.com`, currentPassword: 'x' })));
      const refused = answers.filter((r) => r.status === 503);
      expect(refused.length).toBeGreaterThan(0);
      for (const r of refused) {
        expect(r.body).toMatchObject({ stat: 'error', code: 510, error: 'api_limit_error', retry_after: 1 });
        expect(r.headers['retry-after']).toBe('1');
      }
      expect(answers.every((r) => r.status === 503 || r.body.code === 210)).toBe(true);
    } finally {
      await busy.close();
    }
  });
});

describe('Signature replay', () => {
  const signed = (path: string, params: Record<string, string>) => {
    const date = formatSignatureDate(clock.now());
    const text = `${path}\n${date}\n${Object.entries(params).map(([k, v]) => `${k}=${v}\n`).sort().join('')}`;
    return { Date: date, Authorization: `Signature ${t.local.clients.owner.client_id}:${sign(t.local.clients.owner.client_secret, text)}` };
  };

  it('a signed request that changes state is accepted once; reads may repeat', async () => {
    const params = { description: 'signed once', features: '["direct_access"]' };
    const headers = signed('/clients/add', params);
    expect((await post('/clients/add', params, headers)).body.stat).toBe('ok');
    const again = await post('/clients/add', params, headers);
    expect(again.body).toMatchObject({ stat: 'error', code: 402, error: 'invalid_client_credentials' });
    expect(again.body.error_description).toMatch(/already accepted once/);
    const list = (await request(t.app).get('/clients/list').set('Authorization', owner)).body.results as { description: string }[];
    expect(list.filter((c) => c.description === 'signed once')).toHaveLength(1);

    const read = signed('/clients/list', {});
    expect((await request(t.app).get('/clients/list').set(read)).body.stat).toBe('ok');
    expect((await request(t.app).get('/clients/list').set(read)).body.stat).toBe('ok');
  });
});

describe('email identity', () => {
  it('an email typed decomposed (NFD) is the same account as the precomposed one (NFC)', async () => {
    expect((await register('jos\u00e9@example.com')).body.stat).toBe('ok');
    const second = await register('jose\u0301@example.com');
    expect(second.body).toMatchObject({ code: 390, invalid_fields: { emailAddress: ['This email address is already in use.'] } });
    const signedIn = await signIn('JOSE\u0301@example.com', 'correct horse battery');
    expect(signedIn.body).toMatchObject({ stat: 'ok', capture_user: { email: 'jos\u00e9@example.com' } });
  });
});

describe('setting a password without the current one', () => {
  it('needs a token from a reset link or a sign-in within five minutes; an issued token cannot take the account over', async () => {
    const fresh = (await register('takeover@example.com')).body.access_token as string;
    const { uuid } = (await request(t.app).get('/entity').set('Authorization', `OAuth ${fresh}`)).body.result;
    const issued = await post('/access/getAccessToken', { type_name: 'user', uuid }, { Authorization: owner });
    const set = (token: string) => update(token, 'newPasswordFormNoAuth', { newPassword: 'taken over completely!', newPasswordConfirm: 'taken over completely!' });
    expect((await set(issued.body.accessToken)).body).toMatchObject({ stat: 'error', code: 200, argument_name: 'form' });

    clock.advance(6 * 60_000);
    expect((await set(fresh)).body).toMatchObject({ stat: 'error', code: 200, argument_name: 'form' });
    const again = (await signIn('takeover@example.com', 'correct horse battery')).body.access_token as string;
    expect((await set(again)).body).toEqual({ stat: 'ok' });
    expect((await signIn('takeover@example.com', 'taken over completely!')).body.stat).toBe('ok');
  });
});

describe('tokens bound to a client (for_client_id)', () => {
  it('a creation token for one client is refused without that client and to others', async () => {
    const other = await post('/clients/add', { description: 'other app', features: '["login_client"]' }, { Authorization: owner });
    const token = (await post('/access/getCreationToken', { type_name: 'user', for_client_id: loginId }, { Authorization: owner })).body.creation_token;
    const create = (extra: Record<string, string>) => post('/entity.create', { type_name: 'user', attributes: '{"email":"bound@example.com"}', creation_token: token, ...extra });
    expect((await create({})).body).toMatchObject({ code: 200, argument_name: 'creation_token' });
    expect((await create({ client_id: other.body.client_id })).body).toMatchObject({ code: 200, argument_name: 'creation_token' });
    expect((await create({ client_id: loginId })).body.stat).toBe('ok');
  });

  it('an access token for one client is refused to another', async () => {
    const other = await post('/clients/add', { description: 'second login client', features: '["login_client"]' }, { Authorization: owner });
    const uuid = (await post('/entity.create', { type_name: 'user', attributes: '{"email":"forclient@example.com"}' }, { Authorization: owner })).body.uuid;
    const token = (await post('/access/getAccessToken', { type_name: 'user', uuid, for_client_id: loginId }, { Authorization: owner })).body.accessToken;
    const edit = (clientId: string) => post('/oauth/update_profile_native', {
      client_id: clientId, locale: 'en-US', flow: 'standard', flow_version: '1', access_token: token, form: 'editProfileForm',
      emailAddress: 'forclient@example.com', firstName: 'Ada', lastName: 'Lovelace', displayName: 'x',
    });
    expect((await edit(other.body.client_id)).body).toMatchObject({ code: 413 });
    expect((await edit(loginId)).body).toEqual({ stat: 'ok' });
  });
});

describe('profile edits', () => {
  it('an optional field sent empty clears its stored value', async () => {
    const token = (await register('clear@example.com', { mobile: '+15551234567' })).body.access_token;
    const read = async () => (await request(t.app).get('/entity').set('Authorization', `OAuth ${token}`)).body.result;
    expect((await read()).mobileNumber).toBe('+15551234567');
    expect((await update(token, 'editProfileForm', { mobile: '' })).body).toEqual({ stat: 'ok' });
    expect((await read()).mobileNumber).toBeNull();
  });
});

describe('verification codes for any time attribute of the schema', () => {
  it('accepts a time attribute the application declares (time_attributes), refuses others', async () => {
    const uuid = (await post('/entity.create', { type_name: 'user', attributes: '{"email":"terms@example.com"}' }, { Authorization: owner })).body.uuid;
    const code = (attribute: string) => post('/access/getVerificationCode', { type_name: 'user', uuid, attribute_name: attribute }, { Authorization: owner });
    expect((await code('termsAccepted')).body).toMatchObject({ code: 200, argument_name: 'attribute_name' });
    await post('/settings/set_default', { key: 'time_attributes', value: 'termsAccepted, phoneVerified' }, { Authorization: owner });
    clock.advance(6_000); // the application cache lives 5 s
    const issued = await code('termsAccepted');
    expect(issued.body.stat).toBe('ok');
    expect((await post('/access/useVerificationCode', { verification_code: issued.body.verification_code })).body).toEqual({ stat: 'ok', uuid });
    const record = (await request(t.app).get('/entity').set('Authorization', owner).query({ uuid })).body.result;
    expect(record.termsAccepted).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{6} \+0000$/);
  });
});

describe('the database unreachable', () => {
  it('answers 503 with Retry-After and says the database is unavailable; /readyz fails', async () => {
    const { loadConfig } = await import('../../src/config');
    const { freePort } = await import('../helpers/processes');
    const config = loadConfig({
      DATABASE_URL: `mysql://root@127.0.0.1:${await freePort()}/nothing`, SECRET_KEY: 'a'.repeat(64), MAIL_TRANSPORT: 'file', LOG_LEVEL: 'silent',
    }, t.backend.dir);
    const down = createRuntime(config, createLogger('silent'));
    try {
      const app = buildApp({ services: down.services, defaultApp: 'local', readiness: () => down.readiness() });
      const res = await request(app).get('/clients/list').set('Authorization', owner);
      expect(res.status).toBe(503);
      expect(res.headers['retry-after']).toBe('5');
      expect(res.body).toMatchObject({ stat: 'error', code: 500, sub_error: 'service_unavailable', error_description: expect.stringMatching(/database is unavailable/) });
      const ready = await request(app).get('/readyz');
      expect(ready.status).toBe(503);
      expect(ready.body.checks).toEqual({ database: 'is unreachable' });
      expect((await request(app).get('/healthz')).body).toEqual({ stat: 'ok' });
    } finally {
      await down.close();
    }
  });
});

describe('logs', () => {
  it('each request line says its route, application, client and outcome, and nothing secret', async () => {
    logLines.length = 0;
    await post('/oauth/auth_native_traditional', shared({ signInEmailAddress: 'nobody-logged@example.com', currentPassword: 'hunter2-secret' }));
    const ownerId = t.local.clients.owner.client_id;
    await request(t.app).get('/clients/list?client_secret=leak-me').set('Authorization', basic(ownerId, t.local.clients.owner.client_secret));
    const lines = logLines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === 'request');
    expect(lines[0]).toMatchObject({
      route: '/oauth/auth_native_traditional', path: '/oauth/auth_native_traditional', status: 200, app: 'local', client_id: loginId,
      error_code: 210, error: 'invalid_credentials', ms: expect.any(Number),
    });
    expect(lines[1]).toMatchObject({ route: '/clients/list', app: 'local', client_id: ownerId, status: 200 });
    expect(lines[1].error_code).toBeUndefined();
    const text = logLines.join('');
    expect(text).not.toMatch(/hunter2|leak-me|nobody-logged/);
  });

  it('never carry an emailed code or link', async () => {
    await register('logged@example.com');
    await post('/oauth/forgot_password_native', shared({ redirect_uri: 'http://localhost:3000/reset-password', signInEmailAddress: 'logged@example.com' }));
    await t.runtime.queue.idle?.();
    const text = logLines.join('');
    expect(text).toContain('email written as a file');
    expect(text).not.toMatch(/code=|verification_code=|reset-password\?/);
  });
});

skipUnless(redisUrl !== undefined, 'the cross-pod client cache test needs REDIS_URL')('client changes reach every pod (Redis)', () => {
  it('a secret reset or a deletion on one pod is honoured by another as soon as the change message arrives', async () => {
    const podA = await startTestApp({ redis: true });
    // pod B's clock stands still: its cache never expires by age, so only the change message can clear it
    const second = createRuntime(podA.backend.config, createLogger('silent'), manualClock());
    const podB = buildApp({ services: second.services, defaultApp: 'local' });
    const list = (app: typeof podB, id: string, secret: string) => request(app).get('/clients/list').set('Authorization', basic(id, secret));
    /** Pod B's answer, once it differs from `stale` (a pub/sub message takes a moment to arrive). */
    const onB = async (id: string, secret: string, stale: string) => {
      for (let i = 0; i < 100; i++) {
        const res = await list(podB, id, secret);
        if (String(res.body.stat) !== stale) return res.body;
        await new Promise((r) => setTimeout(r, 20));
      }
      return (await list(podB, id, secret)).body;
    };
    try {
      const ownerA = basic(podA.local.clients.owner.client_id, podA.local.clients.owner.client_secret);
      const added = await request(podA.app).post('/clients/add').set('Authorization', ownerA).type('form').send({ description: 'cached', features: '["owner"]' });
      expect(await onB(added.body.client_id, added.body.client_secret, 'error')).toMatchObject({ stat: 'ok' }); // cached on B now

      const reset = await request(podA.app).post('/clients/reset_secret').set('Authorization', ownerA).type('form').send({ for_client_id: added.body.client_id });
      expect(reset.body.stat).toBe('ok');
      expect(await onB(added.body.client_id, added.body.client_secret, 'ok')).toMatchObject({ code: 402 });
      expect((await list(podB, added.body.client_id, reset.body.new_secret)).body.stat).toBe('ok');

      const deleted = await request(podA.app).post('/clients/delete').set('Authorization', ownerA).type('form').send({ client_id_for_deletion: added.body.client_id });
      expect(deleted.body).toEqual({ stat: 'ok' });
      expect(await onB(added.body.client_id, reset.body.new_secret, 'ok')).toMatchObject({ code: 402 });
    } finally {
      await second.close();
      await podA.close();
    }
  });
});

skipUnless(redisUrl !== undefined, 'the two-pod limit test needs REDIS_URL')('limits across pods (Redis)', () => {
  it('40 parallel wrong passwords split over two pods verify at most 10 (limit 10)', async () => {
    const podA = await startTestApp({ redis: true, env: { LOGIN_LIMIT_ACCOUNT: '10/600', LOGIN_LIMIT_ADDRESS: '100000/600' } });
    const second = createRuntime(podA.backend.config, createLogger('silent'));
    const podB = buildApp({ services: second.services, defaultApp: 'local' });
    const verifies = [jest.spyOn(podA.runtime.services.passwords, 'verify'), jest.spyOn(second.services.passwords, 'verify')];
    try {
      const id = podA.local.clients.login.client_id;
      const ownerA = basic(podA.local.clients.owner.client_id, podA.local.clients.owner.client_secret);
      await request(podA.app).post('/entity.create').set('Authorization', ownerA).type('form')
        .send({ type_name: 'user', attributes: JSON.stringify({ email: 'pods@example.com', password: 'correct horse battery' }) });
      const guess = (app: typeof podB) => request(app).post('/oauth/auth_native_traditional').type('form')
        .send({ client_id: id, locale: 'en-US', signInEmailAddress: 'pods@example.com', currentPassword: 'wrong guess' });
      const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => guess(i % 2 ? podB : podA.app)));
      expect(answers.filter((r) => r.body.code === 210)).toHaveLength(10);
      expect(answers.filter((r) => r.body.code === 510)).toHaveLength(30);
      expect(verifies[0].mock.calls.length + verifies[1].mock.calls.length).toBeLessThanOrEqual(10);
    } finally {
      verifies.forEach((v) => v.mockRestore());
      await second.close();
      await podA.close();
    }
  });
});
