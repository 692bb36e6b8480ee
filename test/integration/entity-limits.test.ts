import request from 'supertest';
import { createLogger } from '../../src/logger';
import { basic, startTestApp, type TestApp } from '../helpers/backend';

/** `{"a":{"a":…{"a":1}}}`, `levels` objects deep. */
const nested = (levels: number): unknown => {
  let v: unknown = 1;
  for (let i = 0; i < levels; i++) v = { a: v };
  return v;
};

let t: TestApp;
let owner: string;
const call = (path: string, params: Record<string, string>, auth = owner) => request(t.app).post(path).set('Authorization', auth).type('form').send(params);
const create = (attributes: Record<string, unknown>) => call('/entity.create', { type_name: 'user', attributes: JSON.stringify(attributes) });
const find = (params: Record<string, string>) => call('/entity.find', { type_name: 'user', ...params });

beforeAll(async () => {
  t = await startTestApp({ logger: createLogger(process.env.TEST_LOG ?? 'silent') });
  owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
});
afterAll(() => t.close());

describe('nesting of attribute values', () => {
  it('16 levels are stored and found; 17 (and 40,000) are refused with 200 naming the attribute, on every write path', async () => {
    const ok = await create({ email: 'deep@example.com', deep: nested(16), marker: 'deep' });
    expect(ok.body.stat).toBe('ok');
    const refused = await create({ email: 'deeper@example.com', deeper: nested(17) });
    expect(refused.body).toMatchObject({ stat: 'error', code: 200, error: 'invalid_argument', argument_name: 'attributes.deeper' });
    expect(refused.body.error_description).toContain('16 levels');
    // a list counts as a level too, and a value far deeper than any stack is refused the same way
    const lists = await call('/entity.create', { type_name: 'user', attributes: `{"lists":${'['.repeat(40_000)}${']'.repeat(40_000)}}` });
    expect(lists.body).toMatchObject({ code: 200, argument_name: 'attributes.lists' });

    const id = String(ok.body.id);
    expect((await call('/entity.update', { type_name: 'user', id, attributes: JSON.stringify({ other: nested(17) }) })).body)
      .toMatchObject({ code: 200, argument_name: 'attributes.other' });
    // a path counts: x.y is one object (x) around y's value, so 16 levels of value make 17
    expect((await call('/entity.update', { type_name: 'user', id, attribute_name: 'x.y', value: JSON.stringify(nested(16)) })).body)
      .toMatchObject({ code: 200, argument_name: 'attributes.x' });
    expect((await call('/entity.update', { type_name: 'user', id, attribute_name: 'x.y', value: JSON.stringify(nested(15)) })).body.stat).toBe('ok');
    expect((await call('/entity.replace', { type_name: 'user', id, attributes: JSON.stringify({ email: 'deep@example.com', r: nested(40) }) })).body)
      .toMatchObject({ code: 200, argument_name: 'attributes.r' });
    const bulk = await call('/entity.bulkCreate', { type_name: 'user', all_attributes: JSON.stringify([{ email: 'fine@example.com' }, { b: nested(1000) }]) });
    expect(bulk.body).toMatchObject({ code: 200, argument_name: 'all_attributes', item_errors: [{ index: 1, argument_name: 'attributes.b' }] });

    // the record's own access token writes under the same rule
    const token = await call('/access/getAccessToken', { type_name: 'user', id });
    expect((await call('/entity.update', { attributes: JSON.stringify({ mine: nested(17) }) }, `OAuth ${token.body.accessToken}`)).body)
      .toMatchObject({ code: 200, argument_name: 'attributes.mine' });

    // the deepest stored record stays in filters on both engines, and the application's finds keep working
    expect((await find({ filter: "marker = 'deep' and deep is not null" })).body).toMatchObject({ stat: 'ok', result_count: 1 });
    expect((await find({ filter: "marker = 'deep' and deep is null" })).body).toMatchObject({ stat: 'ok', result_count: 0 });
    expect((await call('/entity.count', { type_name: 'user' })).body.stat).toBe('ok');
  });
});

describe('the cost of a filter', () => {
  beforeAll(async () => {
    await create({ email: 'members@example.com', toString: 'x', constructor: 'c', valueOf: 3, marker: 'members' });
  });

  it('at most 100 comparisons: 100 run on both engines, 101 are refused with 200 naming the filter and the limit', async () => {
    const terms = (n: number) => Array.from({ length: n }, (_, i) => `displayName = 'n${i}'`).join(' or ');
    expect((await find({ filter: `${terms(99)} or marker = 'members'` })).body).toMatchObject({ stat: 'ok', result_count: 1 });
    const refused = await find({ filter: terms(101) });
    expect(refused.body).toMatchObject({ stat: 'error', code: 200, argument_name: 'filter' });
    expect(refused.body.error_description).toContain('at most 100');
    expect((await call('/entity.count', { type_name: 'user', filter: terms(101) })).body).toMatchObject({ code: 200, argument_name: 'filter' });
  });

  it('parentheses 16 deep (mixed and/or/not, identities and JSON members) run on both engines; 17 are refused', async () => {
    // each level wraps the rest in one more pair of parentheses and negates it (identities and JSON members beside)
    const deep = (levels: number) => {
      let f = "marker = 'members'";
      for (let i = 0; i < levels; i++) {
        f = i % 2 === 0 ? `not (${f}) and (displayName != 'n${i}' or displayName is null)` : `not (${f}) or profiles.identifier = 'none${i}'`;
      }
      return f;
    };
    expect((await find({ filter: deep(16) })).body).toMatchObject({ stat: 'ok', result_count: 1 });
    expect((await find({ filter: deep(17) })).body).toMatchObject({ code: 200, argument_name: 'filter', error_description: expect.stringContaining('16 deep') });
    // a run of nots nests nothing: 41 of them are one NOT
    expect((await find({ filter: `marker = 'members' and ${'not '.repeat(41)}(toString = 'x')` })).body).toMatchObject({ stat: 'ok', result_count: 0 });
    expect((await find({ filter: `marker = 'members' and ${'not '.repeat(40)}(toString = 'x')` })).body).toMatchObject({ stat: 'ok', result_count: 1 });
  });

  it('names that are members of JavaScript objects are attributes like any other (filter and sort_on)', async () => {
    expect((await find({ filter: "toString = 'x'" })).body).toMatchObject({ stat: 'ok', result_count: 1 });
    expect((await find({ filter: "constructor = 'c' and valueOf = 3" })).body).toMatchObject({ stat: 'ok', result_count: 1 });
    expect((await find({ filter: "__proto__ is null and marker = 'members'" })).body).toMatchObject({ stat: 'ok', result_count: 1 });
    expect((await find({ filter: "profiles.constructor = 'x'" })).body).toMatchObject({ stat: 'ok', result_count: 0 });
    for (const sortOn of ['toString', '-constructor', '__proto__', 'valueOf', 'hasOwnProperty']) {
      expect((await find({ filter: "marker = 'members'", sort_on: JSON.stringify([sortOn]) })).body).toMatchObject({ stat: 'ok', result_count: 1 });
    }
  });

  it('an answer carries at most 10 MiB of records: a larger page is refused naming max_results and how many fit', async () => {
    const filler = 'x'.repeat(62 * 1024);
    for (let batch = 0; batch < 2; batch++) {
      const items = Array.from({ length: 90 }, () => ({ big: true, filler }));
      expect((await call('/entity.bulkCreate', { type_name: 'user', all_attributes: JSON.stringify(items) })).body.stat).toBe('ok');
    }
    const refused = await find({ filter: 'big = true' });
    expect(refused.body).toMatchObject({ stat: 'error', code: 200, argument_name: 'max_results', limit_bytes: 10 * 1024 * 1024 });
    const fits = Number(/at most (\d+) records/.exec(refused.body.error_description)![1]);
    expect(fits).toBeGreaterThan(150);
    expect(fits).toBeLessThan(170);
    const page = await find({ filter: 'big = true', max_results: String(fits), attributes: JSON.stringify(['id']) });
    expect(page.body).toMatchObject({ stat: 'ok', result_count: fits });
    const rest = await find({ filter: 'big = true', first_result: String(fits), show_total_count: 'true' });
    expect(rest.body).toMatchObject({ stat: 'ok', result_count: 180 - fits, total_count: 180 });
  });
});

describe('timestamps', () => {
  it('impossible dates are refused in filters, writes and lookups, and so are years before 1000 (once read as 19xx)', async () => {
    for (const bad of ['9999-12-31 23:59:59 -2359', '2026-02-31 00:00:00 +0000', '0050-06-01 00:00:00 +0000']) {
      expect((await find({ filter: `created > '${bad}'` })).body).toMatchObject({ code: 200, argument_name: 'filter' });
      expect((await create({ emailVerified: bad })).body).toMatchObject({ code: 200, argument_name: 'attributes.emailVerified' });
    }
    const early = await create({ email: 'early@example.com', emailVerified: '1000-06-01 00:00:00.000000 +0000' });
    expect(early.body.stat).toBe('ok');
    const read = await call('/entity', { type_name: 'user', id: String(early.body.id) });
    expect(read.body.result.emailVerified).toBe('1000-06-01 00:00:00.000000 +0000');
    expect((await find({ filter: "emailVerified < '1001-01-01 00:00:00 +0000'" })).body).toMatchObject({ stat: 'ok', result_count: 1 });
    const lookup = await call('/versions/entity', { type_name: 'user', id: String(early.body.id), timestamp: '2026-02-31 00:00:00.000000 +0000' });
    expect(lookup.body).toMatchObject({ code: 200, argument_name: 'timestamp' });
  });
});

describe('the time of a filter', () => {
  let slow: TestApp;
  let someId: number;
  beforeAll(async () => {
    // 10 ms: far below the filter's cost (some 250 ms on MariaDB, 50 ms on SQLite, for 3,000 records ×
    // 100 comparisons) and far above the statement's start (a 1 ms limit could expire before MariaDB
    // began to watch the statement, which then ran to its end)
    slow = await startTestApp({ env: { ENTITY_QUERY_TIMEOUT_MS: '10' } });
    const auth = basic(slow.local.clients.owner.client_id, slow.local.clients.owner.client_secret);
    const items = Array.from({ length: 1000 }, (_, i) => ({ displayName: `user ${i}`, address: { city: `c${i % 7}`, zip: String(i) } }));
    for (let batch = 0; batch < 3; batch++) {
      const res = await request(slow.app).post('/entity.bulkCreate').set('Authorization', auth).type('form').send({ type_name: 'user', all_attributes: JSON.stringify(items) });
      expect(res.body.stat).toBe('ok');
      someId = res.body.results[0].id;
    }
  });
  afterAll(() => slow.close());

  it('a statement past ENTITY_QUERY_TIMEOUT_MS is stopped by the database: 200 naming the filter and the limit, and the next request is served', async () => {
    const auth = basic(slow.local.clients.owner.client_id, slow.local.clients.owner.client_secret);
    const filter = Array.from({ length: 100 }, (_, i) => `address.zip = '${i * 31}x'`).join(' or ');
    for (const path of ['/entity.find', '/entity.count']) {
      const res = await request(slow.app).post(path).set('Authorization', auth).type('form').send({ type_name: 'user', filter, sort_on: '["-displayName"]' });
      expect(res.body).toMatchObject({ stat: 'error', code: 200, argument_name: 'filter', limit_ms: 10 });
      expect(res.body.error_description).toContain('longer than 10 ms');
    }
    // an indexed lookup fits within the limit (a fresh connection state, nothing left interrupted)
    const quick = await request(slow.app).post('/entity').set('Authorization', auth).type('form').send({ type_name: 'user', id: String(someId) });
    expect(quick.body).toMatchObject({ stat: 'ok', result: { id: someId } });
  });
});

describe('entity.bulkCreate with passwords', () => {
  let bulk: TestApp;
  beforeAll(async () => {
    bulk = await startTestApp({ env: { ARGON2_MEMORY_KIB: '8192', ARGON2_ITERATIONS: '1', ARGON2_CONCURRENCY: '2' } });
  });
  afterAll(() => bulk.close());

  it('the documented 1,000 records with passwords are created, and a sign-in meanwhile is answered first', async () => {
    const login = bulk.local.clients.login.client_id;
    const signUp = await request(bulk.app).post('/oauth/register_native_traditional').type('form').send({
      client_id: login, locale: 'en-US', emailAddress: 'meanwhile@example.com', newPassword: 'correct horse battery', newPasswordConfirm: 'correct horse battery',
      firstName: 'M', lastName: 'W', displayName: 'meanwhile',
    });
    expect(signUp.body.stat).toBe('ok');
    const auth = basic(bulk.local.clients.owner.client_id, bulk.local.clients.owner.client_secret);
    const items = Array.from({ length: 1000 }, (_, i) => ({ email: `bulk${i}@example.com`, password: `password number ${i}` }));
    const finished: string[] = [];
    const created = request(bulk.app).post('/entity.bulkCreate').set('Authorization', auth).type('form')
      .send({ type_name: 'user', all_attributes: JSON.stringify(items) }).then((r) => (finished.push('bulk'), r));
    await new Promise((r) => setTimeout(r, 200));
    const signIn = await request(bulk.app).post('/oauth/auth_native_traditional').type('form')
      .send({ client_id: login, locale: 'en-US', signInEmailAddress: 'meanwhile@example.com', currentPassword: 'correct horse battery' });
    finished.push('sign-in');
    expect(signIn.body.stat).toBe('ok');
    const res = await created;
    expect(res.body).toMatchObject({ stat: 'ok' });
    expect(res.body.results).toHaveLength(1000);
    expect(finished).toEqual(['sign-in', 'bulk']);
    // the last record's password works
    const last = await request(bulk.app).post('/oauth/auth_native_traditional').type('form')
      .send({ client_id: login, locale: 'en-US', signInEmailAddress: 'bulk999@example.com', currentPassword: 'password number 999' });
    expect(last.body.stat).toBe('ok');
  });
});
