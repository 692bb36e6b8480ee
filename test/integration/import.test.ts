import request from 'supertest';
import { basic, startTestApp, type TestApp } from '../helpers/backend';
import { bcryptOf, FIREBASE_REFERENCE, foreignHashes, itWithForeignTools } from '../helpers/foreign-hashes';

// docs/import.md: records created with a password hash made by another system sign in with their
// password, are refused with a wrong one, and are argon2id after their first sign-in; weak formats
// are reported; a hash that cannot be read is refused naming its record. The hashes come from
// passlib, bcrypt, argon2-cffi, hashlib, htpasswd, mkpasswd and Firebase's reference vector.

let t: TestApp;
let owner: string;
const PASSWORD = 'correct horse battery';

const asOwner = (route: string, params: Record<string, string>) => request(t.app).post(route).set('Authorization', owner).type('form').send(params);
const signIn = (email: string, password: string) => request(t.app).post('/oauth/auth_native_traditional').type('form')
  .send({ client_id: t.local.clients.login.client_id, locale: 'en-US', signInEmailAddress: email, currentPassword: password });
const storedHash = async (email: string) => (await t.runtime.db.records.find((await t.runtime.db.applications.findByName('local'))!.id, { email }))!.passwordHash!;

beforeAll(async () => {
  t = await startTestApp({ env: { LOGIN_LIMIT_ADDRESS: '10000/900', LOGIN_LIMIT_ACCOUNT: '10000/900' } });
  owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
});
afterAll(() => t.close());

itWithForeignTools()('every format signs in with its password, is refused with a wrong one, and is argon2id after; weak ones are reported', async () => {
  const made = [...foreignHashes(PASSWORD), { name: 'firebase reference', weak: false, ...FIREBASE_REFERENCE }];
  const records = made.map((f, n) => ({ email: `import-${n}@example.com`, givenName: f.name, password: f.object }));
  const created = await asOwner('/entity.bulkCreate', { type_name: 'user', all_attributes: JSON.stringify(records) });
  expect(created.body).toMatchObject({ stat: 'ok' });
  expect(created.body.results).toHaveLength(made.length);
  expect(created.body.weak_hashes).toEqual(made.flatMap((f, index) => (f.weak ? [{ index, format: expect.any(String) }] : [])));
  expect(created.body.weak_hashes.length).toBeGreaterThanOrEqual(4);

  for (const [n, f] of made.entries()) {
    const email = `import-${n}@example.com`;
    const before = await storedHash(email);
    const right = 'password' in f ? f.password : PASSWORD;
    expect({ name: f.name, wrong: (await signIn(email, `${right}!`)).body.code }).toEqual({ name: f.name, wrong: 210 });
    // a wrong password leaves the imported hash as it was
    expect(await storedHash(email)).toBe(before);
    expect({ name: f.name, stat: (await signIn(email, right)).body.stat }).toEqual({ name: f.name, stat: 'ok' });
    expect({ name: f.name, after: (await storedHash(email)).slice(0, 10) }).toEqual({ name: f.name, after: '$argon2id$' });
    // and the argon2id hash signs in too
    expect((await signIn(email, right)).body.stat).toBe('ok');
  }
}, 120_000);

it('a hash that cannot be read is refused naming its record and why; nothing is created', async () => {
  const res = await asOwner('/entity.bulkCreate', {
    type_name: 'user', all_attributes: JSON.stringify([
      { email: 'fine@example.com', password: { hashed: '$2b$05$abcdefghijklmnopqrstuuR0yO5GMU1Vw6AEm5kNKQ9/h6J7dLaq6' } },
      { email: 'broken@example.com', password: { hashed: 'md5:5f4dcc3b5aa765d61d8327deb882cf99' } },
    ]),
  });
  expect(res.body).toMatchObject({
    stat: 'error', code: 200, argument_name: 'all_attributes',
    item_errors: [{ index: 1, argument_name: 'attributes.password', error_description: expect.stringContaining('names no algorithm') }],
  });
  expect(await t.runtime.db.records.find((await t.runtime.db.applications.findByName('local'))!.id, { email: 'fine@example.com' })).toBeUndefined();
});

it('/entity.create takes a hash from an owner client, not with a creation token; a change of the record never takes one', async () => {
  const bcrypt = bcryptOf(PASSWORD);
  const created = await asOwner('/entity.create', { type_name: 'user', attributes: JSON.stringify({ email: 'one@example.com', password: bcrypt.object }) });
  expect(created.body.stat).toBe('ok');
  expect((await signIn('one@example.com', PASSWORD)).body.stat).toBe('ok');

  const token = (await asOwner('/access/getCreationToken', { type_name: 'user' })).body.creation_token as string;
  expect(token).toEqual(expect.any(String));
  const byToken = await request(t.app).post('/entity.create').type('form')
    .send({ type_name: 'user', creation_token: token, attributes: JSON.stringify({ email: 'two@example.com', password: bcrypt.object }) });
  expect(byToken.body).toMatchObject({ stat: 'error', code: 200, argument_name: 'attributes.password' });

  const changed = await asOwner('/entity.update', { type_name: 'user', uuid: created.body.uuid, attributes: JSON.stringify({ password: bcrypt.object }) });
  expect(changed.body).toMatchObject({ stat: 'error', argument_name: 'attributes.password', error_description: expect.stringContaining('when a record is created') });
});

describe('imported hashes cannot stall the service', () => {
  // the costliest scrypt within the bounds (N·r·p = 2^21, about 0.7 s of a core each)
  const costly = (n: number) => ({ email: `costly-${n}@example.com`, password: { hashed: Buffer.alloc(32, n).toString('base64'), format: 'scrypt', salt: 'c2FsdHNhbHQ=', n: 2 ** 14, r: 8, p: 16 } });
  let id: string;
  beforeAll(async () => {
    const created = await asOwner('/entity.bulkCreate', { type_name: 'user', all_attributes: JSON.stringify(Array.from({ length: 12 }, (_, n) => costly(n))) });
    expect(created.body.stat).toBe('ok');
    id = String(created.body.results[0].id);
  });
  /** The slowest of `count` reads of a record (a database query each), one after another. */
  async function slowestRead(count: number): Promise<number> {
    let slowest = 0;
    for (let i = 0; i < count; i++) {
      const started = performance.now();
      expect((await asOwner('/entity', { type_name: 'user', id })).body.stat).toBe('ok');
      slowest = Math.max(slowest, performance.now() - started);
    }
    return slowest;
  }

  it('a database query during wrong passwords on costly imported hashes answers as fast as without', async () => {
    const without = await slowestRead(10);
    const guesses = Promise.all([0, 1, 2, 3].map((n) => signIn(`costly-${n}@example.com`, 'not the password')));
    await new Promise((r) => setTimeout(r, 100)); // the verifications have begun
    const during = await slowestRead(10);
    const answers = await guesses;
    expect(answers.map((a) => a.body.code)).toEqual([210, 210, 210, 210]);
    // on libuv's pool, beside the SQLite driver, such a read waited for the verifications (seconds)
    expect({ without: Math.round(without), during: Math.round(during), fast: during < Math.max(10 * without, 250) }).toMatchObject({ fast: true });
  }, 60_000);

  it('past a few at once, a sign-in on an imported hash answers 503 with Retry-After, at once', async () => {
    const answers = await Promise.all(Array.from({ length: 12 }, (_, n) => signIn(`costly-${n}@example.com`, 'not the password')));
    const busy = answers.filter((a) => a.status === 503);
    expect(busy.length).toBeGreaterThan(0);
    expect(busy[0].headers['retry-after']).toMatch(/^\d+$/);
    expect(busy[0].body).toMatchObject({ stat: 'error', request_id: expect.any(String), error_description: expect.any(String) });
    expect(answers.filter((a) => a.body.code === 210).length).toBeGreaterThanOrEqual(4);
  }, 60_000);
});

describe('imports are visible and quiet', () => {
  it('one bulkCreate is one audit entry naming its counts; the export and the count of formats name each hash\'s format, never the hash', async () => {
    const audit = async () => (await asOwner('/audit/list', { max_results: '1000' })).body.results as { type: string; data: Record<string, unknown> }[];
    const before = (await audit()).length;
    const bcrypt = bcryptOf(PASSWORD);
    const records = Array.from({ length: 30 }, (_, n) => ({ email: `quiet-${n}@example.com`, password: n % 3 === 0 ? PASSWORD : bcrypt.object }));
    expect((await asOwner('/entity.bulkCreate', { type_name: 'user', all_attributes: JSON.stringify(records) })).body.stat).toBe('ok');
    const entries = (await audit()).slice(0, (await audit()).length - before);
    expect(entries).toEqual([expect.objectContaining({ type: 'records.imported', data: { created: 30, refused: 0, weak: 0, formats: { argon2id: 10, bcrypt: 20 } } })]);
    const app = (await t.runtime.db.applications.findByName('local'))!;
    const counts = await t.runtime.db.records.countPasswordFormats(app.id);
    expect(counts.bcrypt).toBeGreaterThanOrEqual(20);
    // signed in once, a bcrypt account is argon2id: one fewer on an imported hash
    expect((await signIn('quiet-1@example.com', PASSWORD)).body.stat).toBe('ok');
    expect((await t.runtime.db.records.countPasswordFormats(app.id)).bcrypt).toBe(counts.bcrypt - 1);
    const exported = await asOwner('/entity.export', { type_name: 'user', id: String((await t.runtime.db.records.find(app.id, { email: 'quiet-2@example.com' }))!.id) });
    expect(exported.body.result.account).toMatchObject({ has_password: true, password_format: 'bcrypt' });
    expect(JSON.stringify(exported.body)).not.toContain('$2');
  });
});
