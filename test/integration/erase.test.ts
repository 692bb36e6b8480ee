import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { QueryTypes, Sequelize } from 'sequelize';
import { basic, onMysql, startTestApp, type TestApp } from '../helpers/backend';
import { mailsTo } from '../helpers/mail-files';
import { stored } from '../helpers/stored';
import { operatorActing } from '../../src/usecases/operators/deps';
import { eraseUser } from '../../src/usecases/operators/erase-user';
import { formatTimestamp } from '../../src/domain/timestamps';
import { createSequelize } from '../../src/db/database';
import { createMigrator, migrate } from '../../src/db/migrate';

// docs/lifecycle.md#erase: a record with a long history, an email change, a social identity, a
// passkey, emails written and outbox rows still pending is erased; afterwards not one byte of its
// addresses, name, username, uuid or identity remains in any table or in the mail folder, and
// /versions/entity answers 310 at every time. A deleted record's history is erased by its uuid.
// An embedded database made before deleted rows were zeroed is cleared of them once, when upgraded.

let t: TestApp;
let owner: string;
const PASSWORD = 'correct horse battery';

const asOwner = (route: string, params: Record<string, string>) => request(t.app).post(route).set('Authorization', owner).type('form').send(params);
const post = (route: string, params: Record<string, string>) => request(t.app).post(route).type('form').send(params);

beforeAll(async () => {
  t = await startTestApp();
  owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
});
afterAll(() => t.close());

/** Every table's every row as text, lower case: where a byte of the person would show. */
async function everything(): Promise<Map<string, string>> {
  const { sequelize } = t.runtime.db;
  const tables = sequelize.getDialect() === 'sqlite'
    ? (await sequelize.query<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table'", { type: QueryTypes.SELECT })).map((r) => r.name)
    : (await sequelize.query<{ name: string }>('SELECT TABLE_NAME AS name FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()', { type: QueryTypes.SELECT })).map((r) => r.name);
  const dump = new Map<string, string>();
  for (const table of tables) {
    const rows = await sequelize.query(`SELECT * FROM ${table}`, { type: QueryTypes.SELECT });
    dump.set(table, JSON.stringify(rows).toLowerCase());
  }
  return dump;
}

/** The tables (and mail files) holding any of `needles`. */
async function holding(needles: string[]): Promise<string[]> {
  const found: string[] = [];
  for (const [table, text] of await everything()) {
    for (const n of needles) if (text.includes(n.toLowerCase()) || text.includes(JSON.stringify(n.toLowerCase()).slice(1, -1))) found.push(`${table}: ${n}`);
  }
  const dir = t.runtime.config.mailDir;
  for (const file of fs.existsSync(dir) ? fs.readdirSync(dir) : []) {
    const text = fs.readFileSync(path.join(dir, file), 'utf8').toLowerCase();
    for (const n of needles) if (text.includes(n.toLowerCase())) found.push(`mail ${file}: ${n}`);
  }
  return found;
}

/**
 * The files of the data folder holding any of `needles` as bytes (SQLite's database file, its
 * write-ahead log, the mail folder, …): what a copy of the folder (a backup, a snapshot) would keep.
 */
function filesHolding(needles: string[]): string[] {
  const { database } = t.runtime.config;
  if (database.dialect !== 'sqlite') return [];
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(file);
      else {
        const bytes = fs.readFileSync(file);
        for (const n of needles) for (const form of new Set([n, n.toLowerCase()])) if (bytes.includes(Buffer.from(form, 'utf8'))) found.push(`${path.relative(dir, file)}: ${form}`);
      }
    }
  };
  walk(path.dirname(database.storage));
  return found;
}

const versionAt = (params: Record<string, string>) => asOwner('/versions/entity', { type_name: 'user', ...params });

it('erases a record with 1,000 versions, an old address, a social identity, a passkey, emails and pending outbox rows: nothing of the person remains', async () => {
  const login = t.local.clients.login.client_id;
  const first = 'zelda.first-7731@example.com';
  const second = 'zelda.second-7731@example.org';
  const registered = await post('/oauth/register_native_traditional', {
    client_id: login, locale: 'en-US', emailAddress: first, newPassword: PASSWORD, newPasswordConfirm: PASSWORD, firstName: 'Zelda', lastName: 'Quixotic', displayName: 'Zelda Quixotic',
    redirect_uri: 'https://app.example.com/',
  });
  expect(registered.body.stat).toBe('ok');
  const { uuid, id } = registered.body.capture_user as { uuid: string; id: number };
  const createdAt = new Date();
  for (let n = 1; n <= 996; n++) {
    const res = await asOwner('/entity.update', { type_name: 'user', uuid, attributes: JSON.stringify({ givenName: 'Zelda', familyName: 'Quixotic', n }) });
    expect(res.body.stat).toBe('ok');
  }
  const midway = new Date();
  // a change of address: the old one is in the history and was told by email
  expect((await asOwner('/entity.update', { type_name: 'user', uuid, attributes: JSON.stringify({ email: second, username: 'zquix7731' }) })).body.stat).toBe('ok');
  const app = (await t.runtime.db.applications.findByName('local'))!;
  const identifier = 'https://idp.example.test/users/zelda-7731';
  await t.runtime.db.social.profiles.insert({ applicationId: app.id, entityId: id, provider: 'idp', identifier, data: { name: 'Zelda Quixotic' } }, new Date());
  await t.runtime.db.transaction((tx) => t.runtime.db.passkeys.add({
    applicationId: app.id, entityId: id, credentialId: 'cred-zelda-7731', publicKey: 'pk', counter: 0, deviceType: 'multiDevice', backedUp: true,
    transports: ['internal'], aaguid: '00000000-0000-0000-0000-000000000000', name: 'Zelda’s phone', createdAt: new Date(),
  }, tx));
  // a social sign-in in flight carries the identity and the address
  await t.runtime.services.socialTokens.issue(app, { identifier, providerName: 'idp', email: second });
  // a password reset mailed (a file in the mail folder), and two outbox rows still pending (no worker ran them)
  const recoverUrl = (await request(t.app).get('/settings/items').query({ for_client_id: login }).set('Authorization', owner)).body.result.password_recover_url as string;
  expect((await post('/oauth/forgot_password_native', { client_id: login, locale: 'en-US', redirect_uri: recoverUrl, signInEmailAddress: second })).body.stat).toBe('ok');
  expect((await mailsTo(t.runtime, second)).length).toBeGreaterThanOrEqual(1);
  expect((await mailsTo(t.runtime, first)).length).toBeGreaterThanOrEqual(1);
  await t.runtime.db.transaction((tx) => t.runtime.db.outbox.insert([
    { id: 'f0000000-0000-4000-8000-00000000a001', applicationId: app.id, queue: 'mail', name: 'send', payload: { template: 'welcome', locale: 'en-US', to: second, appName: 'x', name: 'Zelda Quixotic' } },
    { id: 'f0000000-0000-4000-8000-00000000a002', applicationId: app.id, queue: 'versions', name: 'snapshot', entityId: id, payload: { entityId: id, uuid, version: 9999, validFrom: new Date().toISOString(), snapshot: { email: second, familyName: 'Quixotic' } } },
  ], new Date(), tx));
  const needles = [first, second, 'Quixotic', 'zquix7731', uuid, identifier, 'cred-zelda-7731'];
  expect((await holding(needles)).length).toBeGreaterThan(10);
  expect(Number((await stored(t.runtime.db).rows<{ n: number }>('SELECT COUNT(*) AS n FROM entity_versions WHERE entity_id = ?', [id]))[0].n)).toBeGreaterThanOrEqual(990);

  const erased = await asOwner('/entity.erase', { type_name: 'user', uuid });
  expect(erased.body).toMatchObject({ stat: 'ok', erased_at: expect.any(String), already_erased: false });
  await t.runtime.queue.idle!();

  expect(await holding(needles)).toEqual([]);
  // nor in any file of the data folder: not in SQLite's log, not in the database file's free pages
  expect(filesHolding([...needles, 'Zelda'])).toEqual([]);
  // no version at any time, by uuid or by id
  for (const at of [createdAt, midway, new Date()]) {
    expect((await versionAt({ uuid, timestamp: formatTimestamp(at) })).body.code).toBe(310);
    expect((await versionAt({ id: String(id), timestamp: formatTimestamp(at) })).body.code).toBe(310);
  }
  expect((await asOwner('/entity', { type_name: 'user', uuid })).body.code).toBe(310);
  // the erasure's own traces: its tombstone, its event and audit entry (naming the client, not the person)
  const [audit] = (await asOwner('/audit/list', { type: 'account.erased' })).body.results;
  expect(audit).toMatchObject({ type: 'account.erased', subject: { kind: 'record', id: String(id) } });
  expect(JSON.stringify(audit.actor)).toContain(t.local.clients.owner.client_id);
  // again: said so, nothing changes
  expect((await asOwner('/entity.erase', { id: String(id) })).body).toMatchObject({ stat: 'ok', already_erased: true, erased_at: erased.body.erased_at });
  // by its uuid too, which the tombstone keeps as a keyed digest only
  expect((await asOwner('/entity.erase', { type_name: 'user', uuid })).body).toMatchObject({ stat: 'ok', already_erased: true, erased_at: erased.body.erased_at });
  // the same email may register again: a new person
  expect((await post('/oauth/register_native_traditional', {
    client_id: login, locale: 'en-US', emailAddress: second, newPassword: PASSWORD, newPasswordConfirm: PASSWORD, firstName: 'New', lastName: 'Person', displayName: 'new', redirect_uri: 'https://app.example.com/',
  })).body.stat).toBe('ok');
}, 120_000);

it('a record deleted before is erased by its uuid: its history goes; the use case directly, as the command line runs it', async () => {
  const email = 'deleted-then-erased@example.com';
  const created = await asOwner('/entity.create', { type_name: 'user', attributes: JSON.stringify({ email, givenName: 'Wilhelmina' }) });
  const { uuid, id } = created.body as { uuid: string; id: number };
  await asOwner('/entity.update', { type_name: 'user', uuid, attributes: JSON.stringify({ familyName: 'Ostrogoth' }) });
  expect((await asOwner('/entity.delete', { type_name: 'user', uuid })).body.stat).toBe('ok');
  await t.runtime.queue.idle!();
  // deleted, its history stays (what /versions/entity is for)
  expect((await versionAt({ uuid, timestamp: formatTimestamp(new Date(Date.now() - 1)) })).body.code).toBe(310);
  expect((await holding([email, 'Ostrogoth'])).length).toBeGreaterThan(0);

  const app = (await t.runtime.db.applications.findByName('local'))!;
  const result = await eraseUser(t.runtime.services, { app, entityId: (await t.runtime.db.versions.deletedEntityId(app.id, uuid))!, acting: operatorActing('ada') });
  expect(result.already).toBe(false);
  await t.runtime.queue.idle!();
  expect(await holding([email, 'Ostrogoth', 'Wilhelmina', uuid])).toEqual([]);
  expect(id).toBeGreaterThan(0);
});

it('bad input: no record named, one that never existed, a login client', async () => {
  expect((await asOwner('/entity.erase', {})).body).toMatchObject({ stat: 'error', code: 100, argument_name: 'uuid' });
  expect((await asOwner('/entity.erase', { uuid: '00000000-0000-4000-8000-000000000000' })).body).toMatchObject({ stat: 'error', code: 310 });
  expect((await asOwner('/entity.erase', { id: '999999999' })).body).toMatchObject({ stat: 'error', code: 310, error_description: expect.stringContaining('nothing to erase') });
  const login = t.local.clients.login;
  const res = await request(t.app).post('/entity.erase').set('Authorization', basic(login.client_id, login.client_secret)).type('form').send({ id: '1' });
  expect(res.body).toMatchObject({ stat: 'error', code: 403 });
});

(onMysql ? it.skip : it)('an embedded database made before deleted rows were zeroed: upgraded, its files keep none of the rows it deleted back then', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-upgraded-'));
  const storage = path.join(dir, 'gatehouse.sqlite');
  const marker = 'deleted-before-upgrade@example.org';
  const folderHolding = () => fs.readdirSync(dir).filter((f) => fs.readFileSync(path.join(dir, f)).includes(Buffer.from(marker)));
  try {
    // as an install of a version before secure_delete left it: in WAL mode, deleted rows' bytes left where they were
    const old = new Sequelize({ dialect: 'sqlite', storage, logging: false });
    await old.query('PRAGMA journal_mode = WAL');
    await old.query('PRAGMA secure_delete = OFF');
    await createMigrator({ sequelize: old, procedures: false }).up({ to: '0033-logout-deliveries' });
    // enough rows to free whole pages, and one kept among them (its page stays in use, with gaps where they were)
    const now = new Date().toISOString();
    const insert = (name: string, settings: object) => old.query('INSERT INTO applications (name, settings, created_at, updated_at) VALUES (?, ?, ?, ?)', { replacements: [name, JSON.stringify(settings), now, now] });
    for (let i = 0; i < 200; i++) await insert(i === 100 ? 'kept' : `gone-${i}`, { email: i === 100 ? 'kept@example.org' : marker, pad: 'x'.repeat(400) });
    await old.query("DELETE FROM applications WHERE name <> 'kept'");
    await old.close();
    expect(folderHolding()).toEqual(['gatehouse.sqlite']);

    const upgraded = createSequelize({ dialect: 'sqlite', storage });
    expect(await migrate({ sequelize: upgraded, procedures: false })).toEqual(['0034-clean-free-pages', '0035-account-claims']);
    expect(folderHolding()).toEqual([]);
    expect(await upgraded.query("SELECT name FROM applications", { type: QueryTypes.SELECT })).toEqual([{ name: 'kept' }]);
    await upgraded.close();
    expect(folderHolding()).toEqual([]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
