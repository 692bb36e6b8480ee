import request from 'supertest';
import { basic, FLOWS, manualClock, startTestApp, type TestApp, createApp } from '../helpers/backend';
import { stored } from '../helpers/stored';

let t: TestApp;
const clock = manualClock();
let owner: string;
let issuer: { id: string; secret: string; auth: string };
let direct: { id: string; secret: string; auth: string };
let plain: { id: string; secret: string; auth: string };
let user: { id: number; uuid: string };

const call = (path: string, params: Record<string, string> = {}, auth = owner) =>
  request(t.app).get(path).query(params).set('Authorization', auth);

async function addClient(features: string[]) {
  const res = await call('/clients/add', { description: features.join('+') || 'none', features: JSON.stringify(features) });
  return { id: res.body.client_id as string, secret: res.body.client_secret as string, auth: basic(res.body.client_id, res.body.client_secret) };
}

beforeAll(async () => {
  t = await startTestApp({ clock });
  owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
  issuer = await addClient(['access_issuer']);
  direct = await addClient(['direct_access']);
  plain = await addClient([]);
  const created = await request(t.app).post('/entity.create').set('Authorization', owner).type('form')
    .send({ type_name: 'user', attributes: JSON.stringify({ email: 'Ada@Example.com', username: 'ada', givenName: 'Ada', password: 'correct horse battery' }) });
  expect(created.body).toMatchObject({ stat: 'ok', id: expect.any(Number), uuid: expect.any(String) });
  user = created.body;
});
afterAll(() => t.close());

describe('/entity.create and /entity', () => {
  it('reads a record by uuid, id, or a unique key_attribute; never shows the password', async () => {
    for (const params of <Record<string, string>[]>[{ uuid: user.uuid }, { id: String(user.id) }, { key_attribute: 'email', key_value: '"ada@example.com"' },
      { key_attribute: 'username', key_value: '"ADA"' }, { key_attribute: 'id', key_value: String(user.id) }]) {
      const res = await call('/entity', { type_name: 'user', ...params });
      expect(res.body).toMatchObject({ stat: 'ok', result: { uuid: user.uuid, id: user.id, email: 'Ada@Example.com', givenName: 'Ada', emailVerified: null } });
      expect(res.body.result.created).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{6} \+0000$/);
      expect(JSON.stringify(res.body)).not.toMatch(/password|argon2|correct horse/i);
    }
  });

  it('stores the password as an argon2id hash only', async () => {
    const [row] = await stored(t.runtime.db).rows<{ password_hash: string }>('SELECT * FROM entities WHERE uuid = ?', [user.uuid]);
    expect(row!.password_hash).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    expect(JSON.stringify(row)).not.toContain('correct horse battery');
  });

  it('refuses a duplicate email regardless of case (361), bad attributes (200), wrong type_name (200)', async () => {
    const dup = await request(t.app).post('/entity.create').set('Authorization', owner).type('form')
      .send({ type_name: 'user', attributes: JSON.stringify({ email: 'ADA@example.COM' }) });
    expect(dup.body).toMatchObject({ stat: 'error', code: 361, error: 'unique_violation', argument_name: 'attributes.email' });
    for (const [attributes, argument] of [['[1]', 'attributes'], ['{"email":"nope"}', 'attributes.email'], ['{"uuid":"x"}', 'attributes.uuid'],
      ['not json', 'attributes'], [JSON.stringify({ password: 'x'.repeat(2000) }), 'attributes.password']]) {
      const res = await request(t.app).post('/entity.create').set('Authorization', owner).type('form').send({ type_name: 'user', attributes });
      expect(res.body).toMatchObject({ code: 200, error: 'invalid_argument', argument_name: argument });
    }
    const type = await request(t.app).post('/entity.create').set('Authorization', owner).type('form').send({ type_name: 'users', attributes: '{}' });
    expect(type.body).toMatchObject({ code: 200, argument_name: 'type_name' });
    const missing = await request(t.app).post('/entity.create').set('Authorization', owner).type('form').send({ type_name: 'user' });
    expect(missing.body).toMatchObject({ code: 100, argument_name: 'attributes' });
  });

  it('creates with a single-use creation token instead of credentials, bound to its client', async () => {
    const issued = await call('/access/getCreationToken', { type_name: 'user', for_client_id: plain.id }, issuer.auth);
    expect(issued.body).toEqual({ stat: 'ok', creation_token: expect.stringMatching(/^[0-9a-f]{40}$/) });
    const wrongClient = await request(t.app).post('/entity.create').type('form')
      .send({ type_name: 'user', attributes: '{"email":"mobile@example.com"}', creation_token: issued.body.creation_token, client_id: direct.id });
    expect(wrongClient.body).toMatchObject({ code: 200, argument_name: 'creation_token' });
    const made = await request(t.app).post('/entity.create').type('form')
      .send({ type_name: 'user', attributes: '{"email":"mobile@example.com"}', creation_token: issued.body.creation_token, client_id: plain.id });
    expect(made.body).toMatchObject({ stat: 'ok', uuid: expect.any(String) });
    const again = await request(t.app).post('/entity.create').type('form')
      .send({ type_name: 'user', attributes: '{"email":"mobile2@example.com"}', creation_token: issued.body.creation_token });
    expect(again.body).toMatchObject({ code: 200, argument_name: 'creation_token' });
  });

  it('refuses creation without credentials or by a non-owner, and reads by non-readers', async () => {
    const none = await request(t.app).post('/entity.create').type('form').send({ type_name: 'user', attributes: '{}' });
    expect(none.body).toMatchObject({ code: 402 });
    const notOwner = await request(t.app).post('/entity.create').set('Authorization', issuer.auth).type('form').send({ type_name: 'user', attributes: '{}' });
    expect(notOwner.body).toMatchObject({ code: 403 });
    expect((await call('/entity', { uuid: user.uuid }, plain.auth)).body).toMatchObject({ code: 403 });
    expect((await call('/entity', { uuid: user.uuid }, direct.auth)).body.stat).toBe('ok');
  });
});

describe('record identification (every /access call that names a record)', () => {
  const cases: [Record<string, string>, number, string][] = [
    [{}, 100, 'uuid'],
    [{ uuid: 'not-a-uuid' }, 200, 'uuid'],
    [{ uuid: '00000000-0000-4000-8000-000000000000' }, 310, 'uuid'],
    [{ id: 'abc' }, 200, 'id'],
    [{ id: '999999' }, 310, 'id'],
    [{ key_attribute: 'givenName', key_value: '"Ada"' }, 200, 'key_attribute'],
    [{ key_attribute: 'email', key_value: 'ada@example.com' }, 200, 'key_value'],
    [{ key_attribute: 'email', key_value: '42' }, 200, 'key_value'],
    [{ key_attribute: 'id', key_value: '"1"' }, 200, 'key_value'],
    [{ key_attribute: 'email' }, 100, 'key_value'],
    [{ key_attribute: 'email', key_value: '"nobody@example.com"' }, 310, 'key_value'],
    [{ uuid: 'x', id: '1' }, 200, 'id'],
  ];
  it.each(cases)('%j → %i naming %s', async (params, code, argument) => {
    const res = await call('/access/getAccessToken', { type_name: 'user', ...params });
    expect(res.body).toMatchObject({ stat: 'error', code, argument_name: argument });
    expect(res.body.error_description).toBeTruthy();
  });
});

describe('/access/getAccessToken', () => {
  it('issues a one-hour token usable with the OAuth header and the access_token parameter', async () => {
    const res = await call('/access/getAccessToken', { type_name: 'user', uuid: user.uuid }, issuer.auth);
    expect(res.body).toEqual({ stat: 'ok', accessToken: expect.stringMatching(/^[0-9a-f]{40}$/) });
    const byHeader = await request(t.app).get('/entity').set('Authorization', `OAuth ${res.body.accessToken}`);
    expect(byHeader.body.result.uuid).toBe(user.uuid);
    const byParam = await request(t.app).post('/entity').type('form').send({ access_token: res.body.accessToken });
    expect(byParam.body.result.uuid).toBe(user.uuid);
    const [row] = await stored(t.runtime.db).rows<{ expires_at: string; created_at: string }>("SELECT * FROM credentials WHERE kind = 'access_token' ORDER BY id DESC LIMIT 1");
    expect(Math.round((new Date(row!.expires_at).getTime() - new Date(row!.created_at).getTime()) / 1000)).toBe(3600);
    expect(JSON.stringify(row)).not.toContain(res.body.accessToken);
  });

  it('an access token reads only its own record', async () => {
    const other = await request(t.app).post('/entity.create').set('Authorization', owner).type('form')
      .send({ type_name: 'user', attributes: '{"email":"other@example.com"}' });
    const tok = (await call('/access/getAccessToken', { type_name: 'user', uuid: user.uuid })).body.accessToken;
    const res = await request(t.app).get('/entity').query({ uuid: other.body.uuid }).set('Authorization', `OAuth ${tok}`);
    expect(res.body).toMatchObject({ code: 403 });
  });

  it('needs type_name, refuses other kinds of client, unknown for_client_id', async () => {
    expect((await call('/access/getAccessToken', { uuid: user.uuid })).body).toMatchObject({ code: 100, argument_name: 'type_name' });
    expect((await call('/access/getAccessToken', { uuid: user.uuid, type_name: '' })).body).toMatchObject({ code: 100, argument_name: 'type_name' });
    expect((await call('/access/getAccessToken', { type_name: 'user', uuid: user.uuid }, direct.auth)).body).toMatchObject({ code: 403 });
    expect((await call('/access/getAccessToken', { type_name: 'user', uuid: user.uuid, for_client_id: 'nope' })).body)
      .toMatchObject({ code: 200, argument_name: 'for_client_id' });
    expect((await request(t.app).get('/access/getAccessToken').query({ type_name: 'user', uuid: user.uuid })).body).toMatchObject({ code: 402 });
  });

  it("a token of another application never works here, and this application's records are invisible there", async () => {
    const other = await createApp(t.runtime, 'other', FLOWS);
    const otherOwner = basic(other.clients.owner.client_id, other.clients.owner.client_secret);
    const res = await request(t.app).get('/access/getAccessToken').set('Host', 'other.localhost')
      .query({ type_name: 'user', uuid: user.uuid }).set('Authorization', otherOwner);
    expect(res.body).toMatchObject({ code: 310, error: 'record_not_found', argument_name: 'uuid' });
    const here = (await call('/access/getAccessToken', { type_name: 'user', uuid: user.uuid })).body.accessToken;
    const there = await request(t.app).get('/entity').set('Host', 'other.localhost').set('Authorization', `OAuth ${here}`);
    expect(there.body).toMatchObject({ code: 413, error: 'invalid_access_token' });
  });
});

describe('/access/getAuthorizationCode and getCreationToken: parameters', () => {
  const code = (params: Record<string, string>, auth = owner) => {
    // the long case is named short so the test title stays readable
    const expanded = params.redirect_uri === 'https://x/long' ? { redirect_uri: `https://x/${'a'.repeat(3000)}` } : params;
    return call('/access/getAuthorizationCode', { type_name: 'user', uuid: user.uuid, redirect_uri: 'https://app.example.com/cb', ...expanded }, auth);
  };

  it('issues a code', async () => {
    expect((await code({})).body).toEqual({ stat: 'ok', authorizationCode: expect.stringMatching(/^[0-9a-f]{40}$/) });
    expect((await code({ lifetime: '3600', transaction_state: '{"a":1}' }, issuer.auth)).body.stat).toBe('ok');
  });

  it.each([
    [{ redirect_uri: '' }, 100, 'redirect_uri'],
    [{ redirect_uri: 'ftp://x' }, 200, 'redirect_uri'],
    [{ redirect_uri: 'https://x/long' }, 200, 'redirect_uri (3000 characters)'],
    [{ lifetime: '0' }, 200, 'lifetime'],
    [{ lifetime: '-5' }, 200, 'lifetime'],
    [{ lifetime: '1.5' }, 200, 'lifetime'],
    [{ lifetime: 'soon' }, 200, 'lifetime'],
    [{ lifetime: '3601' }, 200, 'lifetime'],
    [{ transaction_state: '[1,2]' }, 200, 'transaction_state'],
    [{ transaction_state: '{bad' }, 200, 'transaction_state'],
    [{ type_name: 'robot' }, 200, 'type_name'],
  ])('%j → %i naming %s', async (params, c, argument) => {
    expect((await code(params)).body).toMatchObject({ stat: 'error', code: c, argument_name: argument.split(' ')[0] });
  });

  it('the per-application maximum lifetime is a setting', async () => {
    await call('/settings/set_default', { key: 'max_lifetime.creation_token', value: '60' });
    clock.advance(5_100); // the application cache lives 5 s
    const over = await call('/access/getCreationToken', { type_name: 'user', lifetime: '61' });
    expect(over.body).toMatchObject({ code: 200, argument_name: 'lifetime' });
    expect(over.body.error_description).toContain('at most 60 seconds');
    expect((await call('/access/getCreationToken', { type_name: 'user', lifetime: '60' })).body.stat).toBe('ok');
    expect((await call('/access/getCreationToken', { type_name: 'user' }, direct.auth)).body).toMatchObject({ code: 403 });
  });
});

describe('verification codes', () => {
  it('getVerificationCode → useVerificationCode sets emailVerified once', async () => {
    const issued = await call('/access/getVerificationCode', { type_name: 'user', uuid: user.uuid, attribute_name: 'emailVerified' }, direct.auth);
    expect(issued.body).toEqual({ stat: 'ok', verification_code: expect.stringMatching(/^[0-9a-f]{40}$/) });
    const used = await request(t.app).get('/access/useVerificationCode').query({ verification_code: issued.body.verification_code });
    expect(used.body).toEqual({ stat: 'ok', uuid: user.uuid });
    const record = await call('/entity', { uuid: user.uuid });
    expect(record.body.result.emailVerified).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{6} \+0000$/);
    const again = await request(t.app).post('/access/useVerificationCode').type('form').send({ verification_code: issued.body.verification_code });
    expect(again.body).toMatchObject({ stat: 'error', code: 200, error: 'invalid_argument', argument_name: 'verification_code' });
  });

  it('refuses unknown and expired codes, and bad parameters', async () => {
    expect((await request(t.app).get('/access/useVerificationCode').query({ verification_code: 'nope' })).body)
      .toMatchObject({ code: 200, argument_name: 'verification_code' });
    expect((await request(t.app).get('/access/useVerificationCode')).body).toMatchObject({ code: 100, argument_name: 'verification_code' });
    const short = await call('/access/getVerificationCode', { type_name: 'user', uuid: user.uuid, attribute_name: 'emailVerified', lifetime: '1' });
    clock.advance(1_100);
    expect((await request(t.app).get('/access/useVerificationCode').query({ verification_code: short.body.verification_code })).body)
      .toMatchObject({ code: 200, argument_name: 'verification_code' });
    expect((await call('/access/getVerificationCode', { type_name: 'user', uuid: user.uuid, attribute_name: 'givenName' })).body)
      .toMatchObject({ code: 200, argument_name: 'attribute_name' });
    expect((await call('/access/getVerificationCode', { type_name: 'user', uuid: user.uuid })).body).toMatchObject({ code: 100, argument_name: 'attribute_name' });
    expect((await call('/access/getVerificationCode', { type_name: 'user', uuid: user.uuid, attribute_name: 'emailVerified' }, issuer.auth)).body)
      .toMatchObject({ code: 403 });
  });
});
