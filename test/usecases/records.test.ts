import { randomUUID } from 'node:crypto';
import { parseFilter, FilterUseError } from '../../src/domain/filter';
import { DuplicateAttributeError } from '../../src/domain/storage/records';
import { USER_TYPE } from '../../src/domain/users';
import { AttributeRefusedError, changeRecord, removeRecord, RecordGoneError } from '../../src/usecases/records/change-record';
import { BulkItemError, createRecord, createRecords } from '../../src/usecases/records/create-records';
import { countRecords, findRecords } from '../../src/usecases/records/find-records';
import { recordHistory } from '../../src/usecases/records/record-history';
import { listAudit } from '../../src/usecases/audit/list-audit';
import { issueCreationToken } from '../../src/usecases/access/issue';
import type { Application } from '../../src/domain/storage/applications';
import { startTestApp, type TestApp } from '../helpers/backend';
import { asOwner } from '../helpers/usecases';
import { refusalOf, writeRecord } from '../../src/usecases/records/write-record';
import { sha256Hex } from '../../src/domain/secrets';

// The record API's use cases called directly: what the handlers of /entity.* adapt.

let t: TestApp;
let app: Application;
beforeAll(async () => {
  t = await startTestApp();
  app = (await t.runtime.db.applications.findByName('local'))!;
});
afterAll(() => t.close());

const entity = (email: string, attributes: Record<string, unknown> = {}) => ({
  entity: { applicationId: app.id, typeName: USER_TYPE, uuid: randomUUID(), email, username: null, emailVerified: null, attributes },
});
const origin = { requestId: 'use-case-test' };
const owner = () => ({ id: 0, clientId: t.local.clients.owner.client_id });

describe('records', () => {
  it('creates one as the owner client, or with a creation token as the person registering; a taken email is a domain error', async () => {
    const { services } = t.runtime;
    const created = await createRecord(services, { app, origin, client: owner(), record: { ...entity(`${randomUUID()}@example.com`, { givenName: 'Ada' }), password: 'a long password' } });
    expect(created.passwordHash).toMatch(/^\$argon2id\$/);
    const [registered, made] = (await listAudit({ audit: t.runtime.db.audit }, { applicationId: app.id, limit: 2 })).entries;
    expect([registered.type, made.type]).toEqual(['account.registered', 'record.created']);
    expect(made.data.attributes).toEqual(expect.arrayContaining(['email', 'givenName', 'password']));
    await expect(createRecord(services, { app, origin, client: owner(), record: entity(created.email!.toUpperCase()) })).rejects.toBeInstanceOf(DuplicateAttributeError);

    const token = await issueCreationToken(services, { app, acting: asOwner(t), client: (await services.clients.find(app.id, owner().clientId))!, forClientId: null, seconds: 60 });
    const byToken = await createRecord(services, { app, origin, creationToken: token, record: entity(`${randomUUID()}@example.com`) });
    // a person registering with a token is not audited (the record itself acts)
    expect((await listAudit({ audit: t.runtime.db.audit }, { applicationId: app.id, limit: 1, subject: { kind: 'record', id: String(byToken.id) } })).entries).toEqual([]);
  });

  it('creates many in one transaction, or none, naming the item at fault', async () => {
    const email = `${randomUUID()}@example.com`;
    const before = await countRecords(t.runtime.services, { applicationId: app.id });
    await expect(createRecords(t.runtime.services, { app, acting: asOwner(t), records: [entity(email), entity(`${randomUUID()}@example.com`), entity(email)] }))
      .rejects.toMatchObject({ index: 2 });
    await expect(createRecords(t.runtime.services, { app, acting: asOwner(t), records: [entity(email), entity(email)] })).rejects.toBeInstanceOf(BulkItemError);
    expect(await countRecords(t.runtime.services, { applicationId: app.id })).toBe(before);
  });

  it('changes a record under its lock with the names of what changed; its own token may not change its address without a fresh sign-in', async () => {
    const { services } = t.runtime;
    const record = await createRecord(services, { app, origin, client: owner(), record: entity(`${randomUUID()}@example.com`, { givenName: 'Ada' }) });
    const writer = { record, byUser: false, fresh: false, clientId: null };
    const shown = await changeRecord(services, { app, acting: asOwner(t), writer, kind: 'record.updated', change: (doc) => ({ ...doc, familyName: 'Lovelace' }) });
    expect(shown).toMatchObject({ givenName: 'Ada', familyName: 'Lovelace' });
    expect((await listAudit({ audit: t.runtime.db.audit }, { applicationId: app.id, limit: 1 })).entries[0]).toMatchObject({ type: 'record.updated', data: { attributes: ['familyName'] } });
    const own = { record, byUser: true, fresh: false, clientId: null };
    const acting = { actor: { kind: 'account' as const, accountId: record.id }, origin };
    await expect(changeRecord(services, { app, acting, writer: own, kind: 'record.updated', change: (doc) => ({ ...doc, email: `${randomUUID()}@example.com` }) }))
      .rejects.toMatchObject({ attribute: 'email' });
    await expect(changeRecord(services, { app, acting, writer: own, kind: 'record.updated', change: (doc) => ({ ...doc, emailVerified: '2026-01-01 00:00:00.000000 +0000' }) }))
      .rejects.toBeInstanceOf(AttributeRefusedError);
    await removeRecord(services, { app, acting: asOwner(t), entityId: record.id });
    await expect(removeRecord(services, { app, acting: asOwner(t), entityId: record.id })).rejects.toBeInstanceOf(RecordGoneError);
    await expect(changeRecord(services, { app, acting: asOwner(t), writer, kind: 'record.updated', change: (doc) => doc })).rejects.toBeInstanceOf(RecordGoneError);
  });

  it('finds and counts by a filter tree, which storage compiles for its engine (refusing what it cannot use)', async () => {
    const { services } = t.runtime;
    const tag = randomUUID().slice(0, 8);
    for (const n of [1, 2, 3]) await createRecord(services, { app, origin, client: owner(), record: entity(`${tag}-${n}@example.com`, { batch: tag, n }) });
    const filter = parseFilter(`batch = '${tag}' and n >= 2`);
    const found = await findRecords(services, { applicationId: app.id, filter, sortOn: ['-n'], limit: 10, offset: 0, paths: [['n']], total: true });
    expect(found).toEqual({ results: [{ n: 3 }, { n: 2 }], total: 2 });
    expect(await countRecords(services, { applicationId: app.id, filter })).toBe(2);
    await expect(findRecords(services, { applicationId: app.id, filter: parseFilter("password = 'x'"), sortOn: [], limit: 1, offset: 0, total: false }))
      .rejects.toMatchObject({ part: 'filter' });
    await expect(findRecords(services, { applicationId: app.id, sortOn: ['profiles'], limit: 1, offset: 0, total: false })).rejects.toBeInstanceOf(FilterUseError);
  });
});

describe('one writer of records, one policy of who may write what', () => {
  const none = { emailMoved: false, emailRemoved: false, verifiedChanged: false, password: false };
  it.each([
    // [role, channel, what the write changes, the refusal]
    ['client', 'api', { emailMoved: true, emailRemoved: true, verifiedChanged: true, password: true }, undefined],
    ['person', 'api', { verifiedChanged: true }, 'verification'],
    ['proven', 'api', { verifiedChanged: true }, 'verification'],
    ['proven', 'form', { emailMoved: true, emailRemoved: true }, 'email_removed'],
    ['person', 'api', { emailMoved: true }, 'email_unproven'],
    ['person', 'form', { emailMoved: true }, 'email_unproven'],
    ['proven', 'api', { emailMoved: true }, undefined],
    ['proven', 'form', { emailMoved: true }, undefined],
    ['proven', 'api', { password: true }, 'password_api'],
    ['person', 'form', { password: true }, 'password_unproven'],
    ['proven', 'form', { password: true }, undefined],
    ['proven', 'reset', { password: true }, undefined],
    ['person', 'form', {}, undefined],
  ] as const)('%s through %s changing %j: %s', (role, channel, judged, refusal) => {
    expect(refusalOf(role, channel, { ...none, ...judged })).toBe(refusal);
  });

  it('a person\'s new password ends their other sessions and keeps their own; the application\'s client setting one through the record API ends none', async () => {
    const email = `${randomUUID()}@example.com`;
    const created = await createRecord(t.runtime.services, { app, origin, client: owner(), record: entity(email) });
    const { db, services } = t.runtime;
    const login = (await services.clients.find(app.id, t.local.clients.login.client_id))!;
    const token = async (family: string) => {
      const value = randomUUID();
      await services.work.run(({ tx }) => services.tokens.issueAll([{ issue: { kind: 'refresh_token', app, entityId: created.id, client: login, family, seconds: 600 }, value }], tx));
      return sha256Hex(value);
    };
    const live = async (hash: string) => (await db.credentials.find(app.id, 'refresh_token', hash))!.usedAt === null;
    const [own, other] = [await token('own'), await token('other')];
    const acting = asOwner(t);
    const [first, second] = [await services.passwords.hash('a new password 1'), await services.passwords.hash('a new password 2')];
    await services.work.run((uow) => writeRecord(services, uow, {
      app, entityId: created.id, role: 'client', channel: 'api', acting, passwordHash: first, change: () => ({ change: {} }),
    }));
    expect([await live(own), await live(other)]).toEqual([true, true]);
    await services.work.run((uow) => writeRecord(services, uow, {
      app, entityId: created.id, role: 'proven', channel: 'form', acting, keepSession: 'own', passwordHash: second, change: () => ({ change: {} }),
    }));
    expect([await live(own), await live(other)]).toEqual([true, false]);
    // judged again with the record locked: a person without proof never moves the address
    await expect(services.work.run((uow) => writeRecord(services, uow, {
      app, entityId: created.id, role: 'person', channel: 'form', acting, change: () => ({ change: { email: `moved-${email}` } }),
      notice: () => ({ app, baseUrl: 'http://localhost', locale: 'en-US', clientId: login.id }),
    }))).rejects.toMatchObject({ reason: 'email_unproven' });
    expect((await db.records.find(app.id, { id: created.id }))!.email).toBe(email);
  });
});

describe("a record's history (recordHistory)", () => {
  it('answers each version newest first as what it changed from the one before, by which change and actor; a deleted record\'s too', async () => {
    const { services } = t.runtime;
    const created = await createRecord(services, { app, origin, client: owner(), record: entity(`${randomUUID()}@example.com`, { givenName: 'Ada', city: 'London' }) });
    const writer = { record: created, byUser: false, fresh: false, clientId: null };
    await changeRecord(services, { app, acting: asOwner(t), writer, kind: 'record.updated', change: (doc) => ({ ...doc, givenName: 'Augusta', city: undefined }) });
    await removeRecord(services, { app, acting: { actor: { kind: 'operator', name: 'ada' }, origin: {} }, entityId: created.id });
    await t.runtime.queue.idle!();
    const history = await recordHistory(services, { applicationId: app.id, entityId: created.id });
    expect(history).toHaveLength(3);
    expect(history[0].version).toBeGreaterThan(history[1].version);
    const [deleted, renamed, first] = history;
    expect(deleted).toMatchObject({ record: null, by: { type: 'record.deleted', actor: { kind: 'operator', name: 'ada' } } });
    expect(renamed.by).toEqual({ type: 'record.updated', actor: { kind: 'client', clientId: t.local.clients.owner.client_id } });
    expect(renamed.changes).toEqual([{ attribute: 'givenName', from: 'Ada', to: 'Augusta' }, { attribute: 'city', from: 'London', to: undefined }]);
    expect(first.by?.type).toBe('record.created');
    expect(first.changes).toEqual(expect.arrayContaining([{ attribute: 'givenName', from: undefined, to: 'Ada' }]));
    expect(await recordHistory(services, { applicationId: app.id, entityId: created.id, limit: 1 })).toHaveLength(1);
  });
});
