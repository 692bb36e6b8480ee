import request from 'supertest';
import { createLogger } from '../../src/logger';
import { basic, startTestApp, type TestApp } from '../helpers/backend';

let t: TestApp;
let owner: string;
let reader: string;
let writer: string;
const call = (path: string, params: Record<string, string>, auth = owner) => request(t.app).post(path).set('Authorization', auth).type('form').send(params);
const create = async (attributes: Record<string, unknown>) => (await call('/entity.create', { type_name: 'user', attributes: JSON.stringify(attributes) })).body as { id: number; uuid: string };
const find = (params: Record<string, string>, auth = owner) => call('/entity.find', { type_name: 'user', ...params }, auth);
const count = (params: Record<string, string>, auth = owner) => call('/entity.count', { type_name: 'user', ...params }, auth);
const emails = (res: request.Response) => (res.body.results as { email: string }[]).map((r) => r.email);

async function client(features: string[]) {
  const res = await call('/clients/add', { description: features.join(), features: JSON.stringify(features) });
  return basic(res.body.client_id, res.body.client_secret);
}

beforeAll(async () => {
  t = await startTestApp({ logger: createLogger(process.env.TEST_LOG ?? 'silent') });
  owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
  reader = await client(['direct_read_access']);
  writer = await client(['direct_access']);
  await create({ email: 'ada@example.com', displayName: 'Ada', age: 36, vip: true, primaryAddress: { country: 'GB', city: 'London' } });
  await create({ email: 'grace@example.com', displayName: 'Grace', age: 85, vip: false, primaryAddress: { country: 'US' } });
  await create({ email: 'linus@example.com', displayName: "O'Linus", age: 54, primaryAddress: { country: 'FI' } });
  await create({ email: 'nobody@example.com', displayName: null, age: '36' });
});
afterAll(() => t.close());

describe('/entity.find and /entity.count', () => {
  it.each([
    ["email = 'ADA@example.com'", ['ada@example.com']],
    ["displayName = 'O''Linus'", ['linus@example.com']],
    ["primaryAddress.country = 'US' or primaryAddress.country = 'FI'", ['grace@example.com', 'linus@example.com']],
    ['age > 40', ['grace@example.com', 'linus@example.com']],
    ['age = 36', ['ada@example.com']], // the string '36' is not the number 36
    ["age = '36'", ['nobody@example.com']],
    ['vip = true', ['ada@example.com']],
    ['vip = false or vip is null', ['grace@example.com', 'linus@example.com', 'nobody@example.com']],
    ['displayName is null', ['nobody@example.com']],
    ["not (primaryAddress.country = 'GB') and primaryAddress.country is not null", ['grace@example.com', 'linus@example.com']],
    ["email = 'x'' or ''1''=''1'", []],
  ])('%s', async (filter, expected) => {
    const res = await find({ filter });
    expect(res.body).toMatchObject({ stat: 'ok', result_count: expected.length });
    expect(emails(res).sort()).toEqual(expected);
    expect((await call('/entity.count', { type_name: 'user', filter }, reader)).body).toEqual({ stat: 'ok', total_count: expected.length });
  });

  it('compares timestamps and ids (ids are opaque: read, never assumed consecutive)', async () => {
    const first = await find({ filter: "email = 'ada@example.com' or email = 'grace@example.com'", attributes: '["id"]' });
    const [low, high] = (first.body.results as { id: number }[]).map((r) => r.id).sort((a, b) => a - b);
    const filter = `lastUpdated > '2000-01-01 00:00:00.000000 +0000' and id >= ${low} and id <= ${high}`;
    const res = await find({ filter });
    expect(emails(res).sort()).toEqual(['ada@example.com', 'grace@example.com']);
    expect((await call('/entity.count', { type_name: 'user', filter }, reader)).body).toEqual({ stat: 'ok', total_count: 2 });
  });

  it('pages stably by sort_on, limits attributes, and counts the total', async () => {
    const page = (first: number) => find({ filter: 'age is not null', sort_on: '["-displayName"]', max_results: '2', first_result: String(first), show_total_count: 'true', attributes: '["email","primaryAddress.country"]' });
    const first = await page(0);
    const second = await page(2);
    expect(first.body).toMatchObject({ result_count: 2, total_count: 4 });
    expect([...emails(first), ...emails(second)]).toHaveLength(4);
    expect(new Set([...emails(first), ...emails(second)]).size).toBe(4);
    expect(emails(first)).toEqual(['linus@example.com', 'grace@example.com']); // O'Linus, Grace, Ada, then no displayName
    expect(first.body.results[0]).toEqual({ email: 'linus@example.com', primaryAddress: { country: 'FI' } });
  });

  it('finds by a linked identity (profiles.identifier)', async () => {
    const grace = (await find({ filter: "email = 'grace@example.com'" })).body.results[0];
    await t.runtime.db.social.profiles.insert({ applicationId: grace.id === undefined ? 0 : (await t.runtime.db.applications.findByName('local'))!.id, entityId: grace.id, provider: 'idp', identifier: 'https://idp.example#grace', data: {} }, new Date());
    expect(emails(await find({ filter: "profiles.identifier = 'https://idp.example#grace'" }))).toEqual(['grace@example.com']);
    expect(emails(await find({ filter: 'profiles.identifier is null and age > 80' }))).toEqual([]);
  });

  it('a bad filter is 200 naming its position; sorting and paging parameters are checked', async () => {
    expect((await find({ filter: "email = 'x' and" })).body).toMatchObject({ code: 200, argument_name: 'filter', error_description: expect.stringContaining('position 16') });
    expect((await find({ filter: 'password is null' })).body).toMatchObject({ code: 200, argument_name: 'filter' });
    expect((await find({ filter: "created > 'yesterday'" })).body).toMatchObject({ code: 200, argument_name: 'filter' });
    expect((await find({ sort_on: '["x; DROP TABLE entities"]' })).body).toMatchObject({ code: 200, argument_name: 'sort_on' });
    expect((await find({ max_results: '5000' })).body).toMatchObject({ code: 200, argument_name: 'max_results' });
    // wrong in two ways: told in the order the parameters are read (filter, paging, sort, attributes)
    expect((await find({ filter: 'password is null', max_results: '5000' })).body).toMatchObject({ code: 200, argument_name: 'filter' });
    expect((await find({ sort_on: '["password"]', attributes: 'not a list' })).body).toMatchObject({ code: 200, argument_name: 'sort_on' });
    expect((await count({ filter: 'password is null' })).body).toMatchObject({ code: 200, argument_name: 'filter' });
    expect((await find({}, writer)).body.result_count).toBe(4);
  });

  it('needs a reading client', async () => {
    const login = basic(t.local.clients.login.client_id, t.local.clients.login.client_secret);
    expect((await find({}, login)).body).toMatchObject({ code: 403 });
  });
});

describe('/entity, /entity.update, /entity.replace and /entity.delete', () => {
  it('reads with attributes and attribute_name; an unknown record is 310', async () => {
    const { uuid } = await create({ email: 'read@example.com', primaryAddress: { country: 'NZ' } });
    expect((await call('/entity', { uuid, attributes: '["email","primaryAddress.country"]' }, reader)).body.result).toEqual({ email: 'read@example.com', primaryAddress: { country: 'NZ' } });
    expect((await call('/entity', { uuid, attribute_name: '/primaryAddress/country' }, reader)).body.result).toBe('NZ');
    expect((await call('/entity', { uuid, attribute_name: 'profiles' }, reader)).body.result).toEqual([]);
    expect((await call('/entity', { uuid: '00000000-0000-4000-8000-000000000000' }, reader)).body).toMatchObject({ code: 310, error: 'record_not_found' });
  });

  it('updates by merging, or one attribute; keeps emails unique (361); include_record answers the record', async () => {
    const { uuid } = await create({ email: 'upd@example.com', primaryAddress: { country: 'DE', city: 'Berlin' } });
    const merged = await call('/entity.update', { uuid, attributes: '{"primaryAddress":{"city":"Hamburg"},"displayName":"Up"}', include_record: 'true' }, writer);
    expect(merged.body.result).toMatchObject({ displayName: 'Up', primaryAddress: { country: 'DE', city: 'Hamburg' } });
    expect((await call('/entity.update', { uuid, attribute_name: 'primaryAddress.country', value: '"AT"' }, writer)).body).toEqual({ stat: 'ok' });
    expect((await call('/entity', { uuid, attribute_name: 'primaryAddress' }, reader)).body.result).toEqual({ country: 'AT', city: 'Hamburg' });
    expect((await call('/entity.update', { uuid, attributes: '{"email":"ADA@example.com"}' }, writer)).body).toMatchObject({ code: 361, error: 'unique_violation' });
    expect((await call('/entity.update', { uuid, attributes: '{"uuid":"x"}' }, writer)).body).toMatchObject({ code: 200, argument_name: 'attributes.uuid' });
    expect((await call('/entity.update', { uuid, attributes: '{"displayName":"No"}' }, reader)).body).toMatchObject({ code: 403 });
  });

  it('parallel updates of different attributes of one record lose nothing', async () => {
    const { uuid } = await create({ email: 'race@example.com' });
    await Promise.all(Array.from({ length: 10 }, (_, i) => call('/entity.update', { uuid, attribute_name: `field${i}`, value: String(i) }, writer)));
    const record = (await call('/entity', { uuid }, reader)).body.result;
    for (let i = 0; i < 10; i++) expect(record[`field${i}`]).toBe(i);
  });

  it('an access token updates its own record only, never its password or verification', async () => {
    const registered = await request(t.app).post('/oauth/register_native_traditional').type('form').send({
      client_id: t.local.clients.login.client_id, locale: 'en-US', emailAddress: 'self@example.com', newPassword: 'correct horse battery', newPasswordConfirm: 'correct horse battery',
      firstName: 'Self', lastName: 'Made', displayName: 'Self',
    });
    const token = `OAuth ${registered.body.access_token}`;
    expect((await call('/entity.update', { attributes: '{"displayName":"Me"}' }, token)).body).toEqual({ stat: 'ok' });
    expect((await call('/entity.update', { attributes: '{"password":"takeover"}' }, token)).body).toMatchObject({ code: 200, argument_name: 'attributes.password' });
    expect((await call('/entity.update', { attributes: '{"emailVerified":"2026-01-01 00:00:00 +0000"}' }, token)).body).toMatchObject({ code: 200, argument_name: 'attributes.emailVerified' });
    const other = await create({ email: 'other-self@example.com' });
    expect((await call('/entity.update', { uuid: other.uuid, attributes: '{"displayName":"x"}' }, token)).body).toMatchObject({ code: 403 });
    // a whole record is replaced or deleted with client credentials only
    expect((await call('/entity.replace', { attributes: '{}' }, token)).body).toMatchObject({ code: 403, error: 'permission_error' });
    expect((await call('/entity.delete', {}, token)).body).toMatchObject({ code: 403, error: 'permission_error' });
  });

  it('the original clients\' shapes: the server library\'s value object, and the mobile SDKs\' sync with the access token', async () => {
    // the server library sends the new attributes as a JSON object in value, signed with its client credentials
    const { uuid } = await create({ email: 'lib@example.com', displayName: 'Lib' });
    expect((await call('/entity.update', { type_name: 'user', uuid, value: '{"displayName":"Library","mobileNumber":"+15550001"}' }, writer)).body).toEqual({ stat: 'ok' });
    expect((await call('/entity', { uuid }, reader)).body.result).toMatchObject({ displayName: 'Library', mobileNumber: '+15550001' });
    const replaced = await call('/entity.replace', { type_name: 'user', uuid, value: '{"email":"lib@example.com","displayName":"Whole"}', include_record: 'true' }, writer);
    expect(replaced.body.result).toMatchObject({ displayName: 'Whole' });
    expect(replaced.body.result.mobileNumber).toBeUndefined();
    expect((await call('/entity.update', { uuid, value: '{"a":1}', attributes: '{"b":2}' }, writer)).body).toMatchObject({ code: 200, argument_name: 'value' });
    expect((await call('/entity.update', { uuid }, writer)).body).toMatchObject({ code: 100, argument_name: 'value' });

    // the SDKs' CaptureRecord sync: replace and delete of sub-values with the signed-in user's access token (a parameter)
    const registered = await request(t.app).post('/oauth/register_native_traditional').type('form').send({
      client_id: t.local.clients.login.client_id, locale: 'en-US', emailAddress: 'sdk@example.com', newPassword: 'correct horse battery', newPasswordConfirm: 'correct horse battery',
      firstName: 'Sdk', lastName: 'User', displayName: 'Sdk',
    });
    const access = registered.body.access_token as string;
    const sdk = (path: string, params: Record<string, string>) => request(t.app).post(path).type('form').send({ type_name: 'user', access_token: access, ...params });
    expect((await sdk('/entity.update', { attribute_name: '/primaryAddress', value: '{"city":"Oslo"}' })).body).toEqual({ stat: 'ok' });
    expect((await sdk('/entity.replace', { attribute_name: '/primaryAddress', value: '{"country":"NO"}' })).body).toEqual({ stat: 'ok' });
    expect((await sdk('/entity.update', { attribute_name: '/mobileNumber', value: '"+15550002"' })).body).toEqual({ stat: 'ok' });
    expect((await sdk('/entity', { attribute_name: '/mobileNumber' })).body.result).toBe('+15550002');
    expect((await sdk('/entity.delete', { attribute_name: '/mobileNumber' })).body).toEqual({ stat: 'ok' });
    // the synced copy of profiles, unchanged: nothing to do; changed: refused
    expect((await sdk('/entity.replace', { attribute_name: '/profiles', value: '[]' })).body).toEqual({ stat: 'ok' });
    expect((await sdk('/entity.replace', { attribute_name: '/profiles', value: '[{"identifier":"x"}]' })).body).toMatchObject({ code: 200, argument_name: 'attribute_name' });
    const mine = (await sdk('/entity', {})).body.result;
    expect(mine.primaryAddress).toEqual({ country: 'NO' });
    expect(mine.mobileNumber).toBeUndefined();
    // the same rules as /entity.update: never uuid, id, created, a password or the verification state
    for (const [name, value] of [['/uuid', '"x"'], ['/id', '1'], ['/created', '"2026-01-01 00:00:00 +0000"'], ['/password', '"takeover"'], ['/emailVerified', '"2026-01-01 00:00:00 +0000"']]) {
      const res = await sdk('/entity.replace', { attribute_name: name, value });
      expect(res.body).toMatchObject({ stat: 'error', code: 200 });
    }
    expect((await sdk('/entity.delete', { attribute_name: '/uuid' })).body).toMatchObject({ code: 200, argument_name: 'attribute_name' });
    // another record's sub-value: 403
    expect((await sdk('/entity.replace', { uuid, attribute_name: '/displayName', value: '"x"' })).body).toMatchObject({ code: 403 });
    expect((await sdk('/entity.delete', { uuid, attribute_name: '/displayName' })).body).toMatchObject({ code: 403 });
  });

  it('replaces the whole attribute set (a record read and sent back unchanged is accepted) or one sub-value', async () => {
    const { uuid } = await create({ email: 'rep@example.com', keep: 1, drop: 2 });
    const read = (await call('/entity', { uuid }, reader)).body.result;
    const { drop: _d, ...edited } = { ...read, keep: 3 };
    expect((await call('/entity.replace', { uuid, attributes: JSON.stringify(edited) }, writer)).body).toEqual({ stat: 'ok' });
    const after = (await call('/entity', { uuid }, reader)).body.result;
    expect(after).toMatchObject({ keep: 3, email: 'rep@example.com' });
    expect(after.drop).toBeUndefined();
    expect((await call('/entity.replace', { uuid, attributes: JSON.stringify({ ...edited, id: 1 }) }, writer)).body).toMatchObject({ code: 200, argument_name: 'attributes.id' });
  });

  it('deletes a sub-value, or the record with its tokens', async () => {
    const registered = await request(t.app).post('/oauth/register_native_traditional').type('form').send({
      client_id: t.local.clients.login.client_id, locale: 'en-US', emailAddress: 'gone@example.com', newPassword: 'correct horse battery', newPasswordConfirm: 'correct horse battery',
      firstName: 'Gone', lastName: 'Soon', displayName: 'Gone',
    });
    const uuid = registered.body.capture_user.uuid as string;
    expect((await call('/entity.delete', { uuid, attribute_name: 'givenName' }, writer)).body).toEqual({ stat: 'ok' });
    expect((await call('/entity', { uuid }, reader)).body.result.givenName).toBeNull();
    expect((await call('/entity.delete', { uuid }, writer)).body).toEqual({ stat: 'ok' });
    expect((await call('/entity', { uuid }, reader)).body).toMatchObject({ code: 310 });
    expect((await request(t.app).get('/entity').set('Authorization', `OAuth ${registered.body.access_token}`)).body).toMatchObject({ code: 413 });
    expect((await call('/entity.delete', { uuid }, reader)).body).toMatchObject({ code: 403 });
  });
});

describe('/entity.bulkCreate and /entityType', () => {
  it('creates every record in one transaction, or none, naming the failing item', async () => {
    const bulk = (records: unknown[]) => call('/entity.bulkCreate', { type_name: 'user', all_attributes: JSON.stringify(records) }, writer);
    const created = await bulk([{ email: 'bulk1@example.com', password: 'correct horse battery' }, { email: 'bulk2@example.com', displayName: 'Two' }]);
    expect(created.body).toMatchObject({ stat: 'ok', uuid_results: [expect.any(String), expect.any(String)], results: [{ id: expect.any(Number) }, { id: expect.any(Number) }] });
    const invalid = await bulk([{ email: 'bulk3@example.com' }, { email: 'not an email' }]);
    expect(invalid.body).toMatchObject({ code: 200, argument_name: 'all_attributes', item_errors: [{ index: 1, argument_name: 'attributes.email' }] });
    const duplicate = await bulk([{ email: 'bulk4@example.com' }, { email: 'BULK1@example.com' }]);
    expect(duplicate.body).toMatchObject({ code: 361, item_index: 1 });
    expect((await call('/entity.count', { filter: "email = 'bulk3@example.com' or email = 'bulk4@example.com'" })).body.total_count).toBe(0);
    expect((await bulk([])).body).toMatchObject({ code: 200, argument_name: 'all_attributes' });
    expect((await call('/entity.bulkCreate', { type_name: 'user', all_attributes: '[{}]' }, reader)).body).toMatchObject({ code: 403 });
  });

  it('describes the user type', async () => {
    const res = await call('/entityType', { type_name: 'user' }, reader);
    expect(res.body.schema.name).toBe('user');
    expect(res.body.schema.attr_defs).toEqual(expect.arrayContaining([{ name: 'email', type: 'string', constraints: ['unique'], length: 254 }]));
    expect((await call('/entityType', { type_name: 'thing' }, reader)).body).toMatchObject({ code: 200, argument_name: 'type_name' });
  });
});
