import request from 'supertest';
import { formatTimestamp } from '../../src/domain/timestamps';
import { stored } from '../helpers/stored';
import { createVersionsProcessor } from '../../src/jobs/versions';
import { createMaintenanceProcessor, DEFAULT_MAINTENANCE } from '../../src/jobs/maintenance';
import { createLogger } from '../../src/logger';
import { basic, createTestBackend, manualClock, startTestApp, type TestApp, createApp } from '../helpers/backend';
import { openDatabase } from '../../src/db';
import { createMigrator } from '../../src/db/migrate';
import { history } from '../../src/usecases/subscribers/history';
import { event, recordSubject } from '../../src/domain/events';
import { versionsOf } from '../../src/domain/sign-in-runs';

const clock = manualClock(new Date('2026-03-01T10:00:00.000Z'));
let t: TestApp;
let owner: string;
let appId: number;
const logger = createLogger('silent');

const call = (path: string, params: Record<string, string>, auth = owner) => request(t.app).post(path).set('Authorization', auth).type('form').send(params);
const at = (params: Record<string, string>, auth = owner) => call('/versions/entity', { type_name: 'user', ...params }, auth);
const ts = (iso: string) => formatTimestamp(new Date(iso));
const idle = () => (t.runtime.queue as { idle?: () => Promise<void> }).idle?.();
const tick = (ms = 1000) => clock.advance(ms);
const dbTime = (d: Date) => stored(t.runtime.db).time(d);
const rows = (sql: string, values: unknown[] = []) => stored(t.runtime.db).rows(sql, values);
/** Every version of a record recorded in entity_versions (a run of sign-ins is one row: docs/versions.md#compact-history). */
const snapshotsOf = async (entityId: number) =>
  (await rows('SELECT version, valid_from, deleted, snapshot, sign_ins FROM entity_versions WHERE entity_id = ? ORDER BY version', [entityId]))
    .flatMap((r) => versionsOf({ version: Number(r.version), validFrom: new Date(String(r.valid_from).replace(' +00:00', 'Z')), snapshot: JSON.parse(String(r.snapshot)), signIns: r.sign_ins as string | null }))
    .map((v) => ({ ...v, deleted: v.snapshot === null, snapshot: v.snapshot as Record<string, any> }));
const processor = () => createVersionsProcessor({ services: { ...t.runtime.services, logger } });
const runJob = (outboxId: string) => processor()({ id: outboxId, queue: 'versions', name: 'snapshot', data: { outboxId } }, { attempt: 1, finalAttempt: false });

beforeAll(async () => {
  t = await startTestApp({ clock, logger });
  owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
  appId = (await t.runtime.db.applications.findByName('local'))!.id;
});
afterAll(() => t.close());

describe('/versions/entity (docs/api.md#versionsentity)', () => {
  let ada: { id: number; uuid: string };

  beforeAll(async () => {
    clock.advance(0);
    ada = (await call('/entity.create', { type_name: 'user', attributes: JSON.stringify({ email: 'ada@example.com', displayName: 'Ada', password: 'correct horse battery' }) })).body;
    tick();
    await call('/entity.update', { type_name: 'user', id: String(ada.id), attributes: '{"displayName":"Countess"}' });
    tick();
    await call('/entity.update', { type_name: 'user', id: String(ada.id), attributes: '{"primaryAddress":{"country":"GB"}}' });
    await idle();
  });

  it('answers the record as it was at each time, by id and by uuid', async () => {
    const first = await at({ id: String(ada.id), timestamp: '2026-03-01 10:00:00.000000 +0000' });
    expect(first.body).toMatchObject({ stat: 'ok', result: { id: ada.id, uuid: ada.uuid, email: 'ada@example.com', displayName: 'Ada' } });
    expect(first.body.result.password).toBeUndefined();
    expect((await at({ uuid: ada.uuid, timestamp: '2026-03-01 10:00:00.999999 +0000' })).body.result.displayName).toBe('Ada');
    expect((await at({ id: String(ada.id), timestamp: ts('2026-03-01T10:00:01.000Z') })).body.result).toMatchObject({
      displayName: 'Countess', lastUpdated: '2026-03-01 10:00:01.000000 +0000',
    });
    expect((await at({ id: String(ada.id), timestamp: '2026-03-01T10:00:02Z' })).body.result).toMatchObject({ displayName: 'Countess', primaryAddress: { country: 'GB' } });
    expect((await at({ id: String(ada.id), timestamp: '2026-03-01 12:00:01 +0200' })).body.result.primaryAddress).toBeUndefined(); // 10:00:01 UTC
  });

  it('a time before the record existed is 310', async () => {
    const res = await at({ id: String(ada.id), timestamp: '2026-03-01 09:59:59.999000 +0000' });
    expect(res.body).toMatchObject({ stat: 'error', code: 310, error: 'record_not_found', argument_name: 'id' });
    expect((await at({ uuid: ada.uuid, timestamp: '2026-02-01 00:00:00 +0000' })).body).toMatchObject({ code: 310, argument_name: 'uuid' });
  });

  it('records one snapshot per committed change, numbered, never with a password hash', async () => {
    const snapshots = await snapshotsOf(ada.id);
    expect(snapshots.map((s) => s.version)).toEqual([1, 2, 3]);
    expect(snapshots.map((s) => s.snapshot.displayName)).toEqual(['Ada', 'Countess', 'Countess']);
    const stored = JSON.stringify(await rows('SELECT * FROM entity_versions'));
    expect(stored).not.toMatch(/argon2|password/i);
    expect((await rows("SELECT COUNT(*) AS n FROM outbox WHERE queue = 'versions' AND status <> 'done'"))[0].n).toEqual(0);
  });

  it('attributes limits the answer; attribute_name answers one value', async () => {
    const time = '2026-03-01 10:00:05 +0000';
    expect((await at({ id: String(ada.id), timestamp: time, attributes: '["displayName","primaryAddress.country"]' })).body.result)
      .toEqual({ displayName: 'Countess', primaryAddress: { country: 'GB' } });
    expect((await at({ id: String(ada.id), timestamp: time, attribute_name: 'email' })).body.result).toBe('ada@example.com');
  });

  it('client_id and client_secret in the body, and the reading kinds only', async () => {
    const { client_id, client_secret } = t.local.clients.owner;
    const res = await request(t.app).post('/versions/entity').type('form')
      .send({ type_name: 'user', id: String(ada.id), timestamp: '2026-03-01 10:00:00 +0000', client_id, client_secret });
    expect(res.body).toMatchObject({ stat: 'ok', result: { displayName: 'Ada' } });
    const reader = await call('/clients/add', { features: '["direct_read_access"]' });
    expect((await at({ id: String(ada.id), timestamp: '2026-03-01 10:00:00 +0000' }, basic(reader.body.client_id, reader.body.client_secret))).body.stat).toBe('ok');
    const login = basic(t.local.clients.login.client_id, t.local.clients.login.client_secret);
    expect((await at({ id: String(ada.id), timestamp: '2026-03-01 10:00:00 +0000' }, login)).body).toMatchObject({ code: 403, error: 'permission_error' });
    expect((await request(t.app).post('/versions/entity').type('form').send({ type_name: 'user', id: String(ada.id), timestamp: '2026-03-01 10:00:00 +0000' })).body)
      .toMatchObject({ code: 402 });
    expect((await at({ id: String(ada.id), timestamp: '2026-03-01 10:00:00 +0000' }, basic(client_id, 'wrong'))).body).toMatchObject({ code: 402 });
  });

  it.each([
    [{ timestamp: '2026-03-01 10:00:00 +0000', id: '1', type_name: '' }, 100, 'type_name'],
    [{ timestamp: '2026-03-01 10:00:00 +0000', id: '1', type_name: 'group' }, 200, 'type_name'],
    [{ id: '1' }, 100, 'timestamp'],
    [{ id: '1', timestamp: 'yesterday' }, 200, 'timestamp'],
    [{ id: '1', timestamp: '2026-13-01 10:00:00' }, 200, 'timestamp'],
    [{ timestamp: '2026-03-01 10:00:00 +0000' }, 100, 'id'],
    [{ id: '1', uuid: '0b5c3a51-7a8e-4a5e-9d5c-1a2b3c4d5e6f', timestamp: '2026-03-01 10:00:00 +0000' }, 200, 'id'],
    [{ id: '1 OR 1=1', timestamp: '2026-03-01 10:00:00 +0000' }, 200, 'id'],
    [{ uuid: "' OR ''='", timestamp: '2026-03-01 10:00:00 +0000' }, 200, 'uuid'],
    [{ key_attribute: 'email', key_value: '"ada@example.com"', timestamp: '2026-03-01 10:00:00 +0000' }, 100, 'id'],
    [{ id: '999999', timestamp: '2026-03-01 10:00:00 +0000' }, 310, 'id'],
    [{ uuid: '0b5c3a51-7a8e-4a5e-9d5c-1a2b3c4d5e6f', timestamp: '2026-03-01 10:00:00 +0000' }, 310, 'uuid'],
  ])('bad input %j → %i', async (params, code, argument) => {
    const res = await call('/versions/entity', { type_name: 'user', ...params } as Record<string, string>);
    expect(res.status).toBeLessThan(500);
    expect(res.body).toMatchObject({ stat: 'error', code, argument_name: argument });
    expect(res.body.error_description).toBeTruthy();
  });

  it('another application\'s record is never found', async () => {
    const other = await createApp(t.runtime, 'other', `${__dirname}/../../flows`);
    const auth = basic(other.clients.owner.client_id, other.clients.owner.client_secret);
    const res = await request(t.app).post('/versions/entity').set('Host', 'other.gatehouse.test').set('Authorization', auth).type('form')
      .send({ type_name: 'user', id: String(ada.id), timestamp: '2026-03-01 10:00:05 +0000' });
    expect(res.body).toMatchObject({ code: 310 });
  });
});

describe('every change of a record is a version', () => {
  const loginId = () => t.local.clients.login.client_id;
  const flow = (path: string, body: Record<string, string>) => request(t.app).post(path).type('form').send({ client_id: loginId(), locale: 'en-US', ...body });

  it('registration, sign-in, profile edit, password change, verification and deletion', async () => {
    tick(60_000);
    const registered = await flow('/oauth/register_native_traditional', {
      emailAddress: 'grace@example.com', newPassword: 'correct horse battery', newPasswordConfirm: 'correct horse battery', firstName: 'Grace', lastName: 'Hopper', displayName: 'grace',
    });
    expect(registered.body.stat).toBe('ok');
    const { id, uuid } = registered.body.capture_user as { id: number; uuid: string };
    tick();
    const signedIn = await flow('/oauth/auth_native_traditional', { signInEmailAddress: 'grace@example.com', currentPassword: 'correct horse battery' });
    expect(signedIn.body.capture_user.lastLogin).toBe(formatTimestamp(clock.now()));
    tick();
    await flow('/oauth/update_profile_native', {
      access_token: signedIn.body.access_token, form: 'editProfileForm', emailAddress: 'grace@example.com', firstName: 'Grace', lastName: 'Hopper', displayName: 'Amazing Grace',
    });
    tick();
    const changed = await flow('/oauth/update_profile_native', { access_token: signedIn.body.access_token, form: 'newPasswordForm', newPassword: 'battery staple horse', newPasswordConfirm: 'battery staple horse' });
    expect(changed.body.stat).toBe('ok');
    tick();
    const code = await call('/access/getVerificationCode', { type_name: 'user', uuid, attribute_name: 'emailVerified' });
    expect((await request(t.app).post('/access/useVerificationCode').type('form').send({ verification_code: code.body.verification_code })).body.stat).toBe('ok');
    tick();
    const deletedAt = clock.now();
    expect((await call('/entity.delete', { type_name: 'user', id: String(id) })).body.stat).toBe('ok');
    await idle();

    const snapshots = await snapshotsOf(id);
    expect(snapshots.map((s) => s.version)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(snapshots.map((s) => s.snapshot?.displayName ?? null)).toEqual(['grace', 'grace', 'Amazing Grace', 'Amazing Grace', 'Amazing Grace', null]);
    expect(snapshots[1].snapshot.lastLogin).toBeTruthy();
    expect(snapshots[4].snapshot.emailVerified).toBeTruthy();
    expect(snapshots[5]).toMatchObject({ deleted: true, snapshot: null });
    expect(JSON.stringify(snapshots)).not.toMatch(/argon2/);

    // the deleted record: 310 after deletion, by id and by uuid; its history before deletion still answers
    for (const key of [{ id: String(id) }, { uuid }] as Record<string, string>[]) {
      expect((await at({ ...key, timestamp: formatTimestamp(deletedAt) })).body).toMatchObject({ code: 310 });
      expect((await at({ ...key, timestamp: formatTimestamp(new Date(deletedAt.getTime() - 1)) })).body.result)
        .toMatchObject({ displayName: 'Amazing Grace', emailVerified: expect.any(String) });
    }
  });

  it('parallel sign-ins of one account and an update: each a version of its own, nothing lost', async () => {
    tick(60_000);
    const registered = await flow('/oauth/register_native_traditional', {
      emailAddress: 'hedy@example.com', newPassword: 'correct horse battery', newPasswordConfirm: 'correct horse battery', firstName: 'Hedy', lastName: 'Lamarr', displayName: 'hedy',
    });
    const { id } = registered.body.capture_user as { id: number };
    const answers = await Promise.all([
      ...Array.from({ length: 6 }, () => flow('/oauth/auth_native_traditional', { signInEmailAddress: 'hedy@example.com', currentPassword: 'correct horse battery' })),
      call('/entity.update', { type_name: 'user', id: String(id), attributes: '{"inventor":true}' }),
    ]);
    expect(answers.map((a) => a.body.stat)).toEqual(Array(7).fill('ok'));
    await idle();
    const snapshots = await snapshotsOf(id);
    expect(snapshots.map((s) => s.version)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    // the update is in every version after it: no sign-in wrote over it from an older read
    const updatedAt = snapshots.findIndex((s) => s.snapshot.inventor === true);
    expect(updatedAt).toBeGreaterThan(0);
    for (const s of snapshots.slice(updatedAt)) expect(s.snapshot.inventor).toBe(true);
    // each sign-in answered capture_user as its own version left the record
    for (const a of answers.slice(0, 6)) expect(snapshots.map((s) => JSON.stringify(s.snapshot))).toContain(JSON.stringify(a.body.capture_user));
  });

  it('concurrent updates of one record give one snapshot each, in commit order', async () => {
    tick(60_000);
    const { id } = (await call('/entity.create', { type_name: 'user', attributes: '{"counter":0}' })).body;
    const writes = await Promise.all(Array.from({ length: 12 }, (_, n) =>
      call('/entity.update', { type_name: 'user', id: String(id), attributes: JSON.stringify({ [`field${n}`]: n }), include_record: 'true' })));
    expect(writes.every((w) => w.body.stat === 'ok')).toBe(true);
    await idle();
    const snapshots = await snapshotsOf(id);
    expect(snapshots.map((s) => s.version)).toEqual(Array.from({ length: 13 }, (_, n) => n + 1));
    // each version holds every field written before it (no write lost another's) plus its own
    for (const [n, s] of snapshots.entries()) expect(Object.keys(s.snapshot).filter((k) => k.startsWith('field'))).toHaveLength(n);
    // what each request answered is the snapshot of its version
    for (const w of writes) expect(snapshots.map((s) => JSON.stringify(s.snapshot))).toContain(JSON.stringify(w.body.result));
    const times = snapshots.map((s) => s.validFrom.getTime());
    expect([...times].sort((a, b) => a - b)).toEqual(times);
  });
});

describe('snapshots not recorded yet', () => {
  /** A change committed with its outbox row by a pod that then died before enqueuing the job. */
  const changeWithoutEnqueue = (id: number, attributes: Record<string, unknown>) => {
    const { db, versions } = t.runtime.services;
    return db.transaction(async (tx) => {
      const locked = (await db.records.findForUpdate(appId, id, tx))!;
      const { snapshot } = await versions.written(await db.records.update(locked, { attributes }, clock.now(), tx), tx);
      // the row the history subscriber makes of the change's event, written as the unit of work writes it
      const [job] = history.jobs!(event('record.updated', appId, clock.now(), { actor: { kind: 'system' }, origin: {} }, recordSubject(id), { attributes: Object.keys(attributes) }, { snapshot }));
      await db.outbox.insert([job], clock.now(), tx);
      return job;
    });
  };

  it('a lookup reads changes still in the outbox, and the worker records them once', async () => {
    tick(60_000);
    const { id } = (await call('/entity.create', { type_name: 'user', attributes: '{"displayName":"v1"}' })).body;
    await idle();
    // a change committed by a pod that died before enqueuing its job: the row stays pending
    tick();
    const pending = await changeWithoutEnqueue(id, { displayName: 'v2' });
    const after = formatTimestamp(clock.now());
    const before = formatTimestamp(new Date(clock.now().getTime() - 1));
    expect((await snapshotsOf(id)).map((s) => s.version)).toEqual([1]);
    expect((await at({ id: String(id), timestamp: after })).body.result.displayName).toBe('v2');
    expect((await at({ id: String(id), timestamp: before })).body.result.displayName).toBe('v1');

    expect(await runJob(pending.id)).toEqual({ recorded: 1 });
    expect(await runJob(pending.id)).toEqual({ skipped: 'recorded already' }); // a job that runs twice
    expect((await snapshotsOf(id)).map((s) => s.version)).toEqual([1, 2]);
    expect((await at({ id: String(id), timestamp: after })).body.result.displayName).toBe('v2');
    expect((await t.runtime.db.outbox.find(pending.id))).toMatchObject({ status: 'done', payload: {} });
  });

  it('one job records a backlog in batches; a row recorded twice is kept once', async () => {
    tick(60_000);
    const { id } = (await call('/entity.create', { type_name: 'user', attributes: '{}' })).body;
    await idle();
    const jobs = [];
    for (let n = 0; n < 7; n++) {
      tick(10);
      jobs.push(await changeWithoutEnqueue(id, { n }));
    }
    // a snapshot recorded before its row was marked (the worker died between the two): recorded again, kept once
    await stored(t.runtime.db).change(
      "INSERT INTO entity_versions (application_id, entity_id, valid_from, version, deleted, snapshot) VALUES (?, ?, ?, ?, 0, '{}')",
      [appId, id, dbTime(clock.now()), 8],
    );
    const small = createVersionsProcessor({ services: { ...t.runtime.services, logger }, settings: { batchSize: 3, drainMs: 60_000 } });
    expect(await small({ id: jobs[6].id, queue: 'versions', name: 'snapshot', data: { outboxId: jobs[6].id } }, { attempt: 1, finalAttempt: false }))
      .toEqual({ recorded: 7 });
    expect((await snapshotsOf(id)).map((s) => s.version)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    for (const j of jobs.slice(0, 6)) expect(await runJob(j.id)).toEqual({ skipped: 'recorded already' });
  });

  it('a job for another queue\'s name fails loudly', async () => {
    await expect(processor()({ id: 'x', queue: 'versions', name: 'nope', data: {} }, { attempt: 1, finalAttempt: true })).rejects.toThrow(/no job named "nope"/);
  });
});

describe('retention (VERSIONS_RETENTION_DAYS)', () => {
  it('prunes old snapshots in batches, keeping the newest one before the cutoff; a record deleted before it leaves nothing', async () => {
    tick(400 * 86_400_000);
    const start = clock.now();
    const keep = (await call('/entity.create', { type_name: 'user', attributes: '{"n":0}' })).body;
    const gone = (await call('/entity.create', { type_name: 'user', attributes: '{"n":0}' })).body;
    for (let n = 1; n <= 5; n++) {
      tick(86_400_000);
      await call('/entity.update', { type_name: 'user', id: String(keep.id), attributes: JSON.stringify({ n }) });
      if (n <= 2) await call('/entity.update', { type_name: 'user', id: String(gone.id), attributes: JSON.stringify({ n }) });
      if (n === 2) await call('/entity.delete', { type_name: 'user', id: String(gone.id) });
    }
    await idle();
    // now = start + 5 days; keep 2 days: the cutoff is start + 3 days
    const sweep = createMaintenanceProcessor({
      services: { ...t.runtime.services, clock }, outbox: t.runtime.outbox, logger,
      settings: { ...DEFAULT_MAINTENANCE, versionsRetentionMs: 2 * 86_400_000, batchSize: 2 },
    });
    const count = async () => Number((await rows('SELECT COUNT(*) AS n FROM entity_versions'))[0].n);
    const before = await count();
    const result = await sweep({ id: 'sweep', queue: 'maintenance', name: 'sweep', data: {} }, { attempt: 1, finalAttempt: false });
    expect(result.snapshots).toBeGreaterThanOrEqual(2 + 4); // and the older records' history of the tests above
    expect(await count()).toBe(before - Number(result.snapshots));
    expect((await snapshotsOf(keep.id)).map((s) => s.snapshot.n)).toEqual([2, 3, 4, 5]);
    expect(await snapshotsOf(gone.id)).toEqual([]);
    const cutoff = new Date(start.getTime() + 3 * 86_400_000);
    // every record keeps one snapshot before the cutoff at most, and no tombstone
        expect(await rows('SELECT entity_id FROM entity_versions WHERE valid_from < ? GROUP BY entity_id HAVING COUNT(*) > 1 OR MAX(deleted) = 1', [dbTime(cutoff)])).toEqual([]);
    expect((await at({ id: String(keep.id), timestamp: formatTimestamp(cutoff) })).body.result.n).toBe(3);
    expect((await at({ id: String(keep.id), timestamp: formatTimestamp(new Date(cutoff.getTime() - 1)) })).body.result.n).toBe(2);
    expect((await at({ id: String(gone.id), timestamp: formatTimestamp(cutoff) })).body.code).toBe(310);
    // a second run finds nothing more to delete
    expect((await sweep({ id: 'sweep', queue: 'maintenance', name: 'sweep', data: {} }, { attempt: 1, finalAttempt: false })).snapshots).toBe(0);
  });
});

describe('the migration that adds snapshots', () => {
  it('gives every existing record a first snapshot as of its lastUpdated, with its identities; down and up again', async () => {
    const backend = await createTestBackend();
    const db = openDatabase(backend.config.database);
    try {
      const migrator = createMigrator(db);
      await migrator.up({ to: '0003-social-providers' });
      const q = (sql: string, values: unknown[]) => stored(db).change(sql, values);
      const time = (iso: string) => stored(db).time(new Date(iso));
      const { id: appId } = await db.transaction((tx) => db.applications.create('old', new Date(), tx));
      await q(`INSERT INTO entities (application_id, type_name, uuid, email, email_key, password_hash, attributes, created, last_updated)
        VALUES (?, 'user', '11111111-2222-4333-8444-555555555555', 'old@example.com', 'old@example.com', ?, '{"displayName":"Old"}', ?, ?)`,
      [appId, '$argon2id$v=19$secret', time('2025-01-01T00:00:00Z'), time('2025-06-01T12:00:00.250Z')]);
      const [entity] = await stored(db).rows<{ id: number }>('SELECT id FROM entities');
      await q(`INSERT INTO profiles (application_id, entity_id, provider, identifier, data, created_at) VALUES (?, ?, 'idp', 'https://idp.example#old', '{}', ?)`,
        [appId, entity.id, time('2025-02-01T00:00:00Z')]);

      await migrator.up();
      const rowsAfter = await stored(db).rows('SELECT entity_id, valid_from, version, deleted, snapshot FROM entity_versions');
      expect(rowsAfter).toHaveLength(1);
      const snapshot = JSON.parse(String(rowsAfter[0].snapshot));
      expect(snapshot).toMatchObject({
        id: Number(entity.id), email: 'old@example.com', displayName: 'Old', lastUpdated: '2025-06-01 12:00:00.250000 +0000',
        profiles: [expect.objectContaining({ identifier: 'https://idp.example#old' })],
      });
      expect(String(rowsAfter[0].snapshot)).not.toContain('argon2');
      expect((await db.versions.at(appId, Number(entity.id), new Date('2025-06-01T12:00:00.250Z')))?.snapshot).toEqual(snapshot);
      expect(await db.versions.at(appId, Number(entity.id), new Date('2025-06-01T12:00:00.249Z'))).toBeUndefined();

      await migrator.down({ to: '0004-versions' });
      await migrator.up();
      expect(await stored(db).count('entity_versions')).toBe(1);
    } finally {
      await db.close();
      await backend.cleanup();
    }
  });
});
