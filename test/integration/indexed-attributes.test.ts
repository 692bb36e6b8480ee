import request from 'supertest';
import { basic, manualClock, startTestApp, type TestApp } from '../helpers/backend';
import { buildAttributeIndexes } from '../../src/usecases/records/indexed-attributes';
import { BUILD_DELAY_MS, MAX_INDEXED_ATTRIBUTES } from '../../src/domain/indexed-attributes';

// docs/entity-filters.md#indexed-attributes through the admin API: index, list, unindex; what
// /entityType shows; what /entity.find answers once an index is built; every refusal as the spec's error.

const clock = manualClock(new Date('2026-05-01T10:00:00.000Z'));
let t: TestApp;
let owner: string;

beforeAll(async () => {
  t = await startTestApp({ clock });
  owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
});
afterAll(() => t.close());

const call = (path: string, params: Record<string, string> = {}, auth = owner) =>
  request(t.app).post(path).set('Authorization', auth).type('form').send(params);
const build = () => buildAttributeIndexes(t.runtime.services, { batchSize: 4, maxBatches: 100 });

it('indexes an attribute: building, then (after the delay every pod needs) built in batches, shown by /entityType, used by /entity.find', async () => {
  for (let n = 0; n < 10; n++) {
    const made = await call('/entity.create', { type_name: 'user', attributes: JSON.stringify({ email: `p${n}@example.com`, familyName: n % 3 === 0 ? 'Curie' : 'Noether', primaryAddress: { country: n % 2 ? 'FR' : 'DE' } }) });
    expect(made.body.stat).toBe('ok');
  }
  const indexed = await call('/attributes/index', { name: 'familyName' });
  expect(indexed.body).toEqual({ stat: 'ok', created: true, result: { name: 'familyName', state: 'building', created: expect.any(String), ready: null } });
  expect((await call('/attributes/index', { name: ' familyName ' })).body).toMatchObject({ stat: 'ok', created: false, result: { name: 'familyName' } });
  expect((await call('/attributes/index', { name: 'primaryAddress.country' })).body.stat).toBe('ok');
  // nothing is built before every pod keeps the index
  expect(await build()).toEqual({ records: 0, ready: [], removed: [] });
  clock.advance(BUILD_DELAY_MS + 1);
  const built = await build();
  expect(built.records).toBe(20);
  expect(built.ready.map((r) => r.name).sort()).toEqual(['familyName', 'primaryAddress.country']);
  expect((await call('/attributes/list')).body.results.map((a: { name: string; state: string }) => [a.name, a.state])).toEqual([['familyName', 'ready'], ['primaryAddress.country', 'ready']]);

  const type = await call('/entityType', { type_name: 'user' });
  const defs = type.body.schema.attr_defs as { name: string; indexed?: string }[];
  expect(defs.find((d) => d.name === 'familyName')).toMatchObject({ type: 'string', indexed: 'ready' });
  expect(defs.find((d) => d.name === 'primaryAddress.country')).toMatchObject({ type: 'json', indexed: 'ready' });
  expect(defs.find((d) => d.name === 'givenName')?.indexed).toBeUndefined();

  const found = await call('/entity.find', { type_name: 'user', filter: "familyName = 'Curie' and primaryAddress.country = 'FR'", attributes: '["email"]' });
  expect(found.body.stat).toBe('ok');
  expect(found.body.results.map((r: { email: string }) => r.email).sort()).toEqual(['p3@example.com', 'p9@example.com']);
  expect((await call('/entity.count', { type_name: 'user', filter: 'familyName is null' })).body.total_count).toBe(0);

  // a change is kept at once: the new value is found, the old one not
  await call('/entity.update', { type_name: 'user', key_attribute: 'email', key_value: '"p3@example.com"', attributes: '{"familyName":"Sklodowska"}' });
  expect((await call('/entity.find', { type_name: 'user', filter: "familyName = 'Sklodowska'", attributes: '["email"]' })).body.results).toEqual([{ email: 'p3@example.com' }]);

  // audited as the owner's change
  const audit = await call('/audit/list', { type: 'attribute.' });
  expect(audit.body.results.map((e: { type: string; subject: { id: string } }) => [e.type, e.subject.id])).toEqual(expect.arrayContaining([['attribute.indexed', 'familyName']]));

  expect((await call('/attributes/unindex', { name: ' familyName' })).body).toEqual({ stat: 'ok' });
  expect((await call('/attributes/list')).body.results.map((a: { name: string; state: string }) => [a.name, a.state])).toEqual([['familyName', 'removing'], ['primaryAddress.country', 'ready']]);
  expect((await call('/attributes/index', { name: 'familyName' })).body).toMatchObject({ stat: 'error', code: 200, argument_name: 'name', error_description: expect.stringMatching(/being removed/) });
  // the search still answers, by a scan; the values go later, in batches
  expect((await call('/entity.find', { type_name: 'user', filter: "familyName = 'Sklodowska'", attributes: '["email"]' })).body.results).toEqual([{ email: 'p3@example.com' }]);
  clock.advance(BUILD_DELAY_MS + 1);
  expect((await build()).removed).toEqual([expect.objectContaining({ name: 'familyName' })]);
  expect((await call('/attributes/list')).body.results.map((a: { name: string }) => a.name)).toEqual(['primaryAddress.country']);
});

describe('refusals', () => {
  it.each([
    [{}, 100, 'missing_argument', undefined],
    [{ name: 'email' }, 200, 'invalid_argument', /has an index of its own/],
    [{ name: 'password' }, 200, 'invalid_argument', /cannot be searched/],
    [{ name: 'profiles.identifier' }, 200, 'invalid_argument', /linked identities/],
    [{ name: 'a..b' }, 200, 'invalid_argument', /letters, digits/],
    [{ name: '1st' }, 200, 'invalid_argument', /letters, digits/],
    [{ name: 'a.b.c.d.e' }, 200, 'invalid_argument', /4 deep/],
  ] as [Record<string, string>, number, string, RegExp | undefined][])('/attributes/index %j → %i', async (params, code, error, message) => {
    const res = await call('/attributes/index', params);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ stat: 'error', code, error, request_id: expect.any(String), ...(code === 200 && { argument_name: 'name' }) });
    if (message) expect(res.body.error_description).toMatch(message);
  });

  it('unindexing what is not indexed names it; a client that is not an owner is refused', async () => {
    const res = await call('/attributes/unindex', { name: 'nickname' });
    expect(res.body).toMatchObject({ stat: 'error', code: 200, error: 'invalid_argument', argument_name: 'name', error_description: expect.stringMatching(/not indexed/) });
    const login = basic(t.local.clients.login.client_id, t.local.clients.login.client_secret);
    expect((await call('/attributes/list', {}, login)).body).toMatchObject({ stat: 'error', code: 403 });
  });

  it(`at most ${MAX_INDEXED_ATTRIBUTES} indexed attributes`, async () => {
    const have = (await call('/attributes/list')).body.results.length as number;
    for (let n = have; n < MAX_INDEXED_ATTRIBUTES; n++) expect((await call('/attributes/index', { name: `field${n}` })).body.stat).toBe('ok');
    const res = await call('/attributes/index', { name: 'oneTooMany' });
    expect(res.body).toMatchObject({ stat: 'error', code: 200, argument_name: 'name', error_description: expect.stringMatching(/remove one first/) });
  });
});
