import { randomUUID } from 'node:crypto';
import { USER_TYPE } from '../../src/domain/users';
import type { Application } from '../../src/domain/storage/applications';
import { changeRecord } from '../../src/usecases/records/change-record';
import { createRecord } from '../../src/usecases/records/create-records';
import { disableUser } from '../../src/usecases/operators/disable-user';
import { enableUser } from '../../src/usecases/operators/enable-user';
import { startTestApp, type TestApp } from '../helpers/backend';
import { asOwner, failingWork } from '../helpers/usecases';
import { operatorActing } from '../../src/usecases/operators/deps';

// Every change keeps exactly its events, in its own transaction (docs/architecture.md#events): a
// failure after the change and its events (here, the outbox's insert, the unit of work's last
// write) leaves neither; an event that cannot be written fails its change.

let t: TestApp;
let app: Application;
beforeAll(async () => {
  t = await startTestApp();
  app = (await t.runtime.db.applications.findByName('local'))!;
});
afterAll(() => t.close());

const origin = { requestId: 'use-case-test' };
const owner = () => ({ id: 0, clientId: t.local.clients.owner.client_id });
const entity = (email: string) => ({ entity: { applicationId: app.id, typeName: USER_TYPE, uuid: randomUUID(), email, username: null, emailVerified: null, attributes: {} } });
const eventsOf = async (accountId: number) => (await t.runtime.db.events.latest(app.id, 100, accountId)).map((e) => e.type);

const failing = (breaks: 'outbox' | 'events') => failingWork(t, breaks);

it.each(['outbox', 'events'] as const)('a record created, changed, disabled: the %s write failing leaves neither the change nor its events', async (breaks) => {
  const { services } = t.runtime;
  const email = `${randomUUID()}@example.com`;
  await expect(createRecord(failing(breaks), { app, origin, client: owner(), record: entity(email) })).rejects.toThrow('injected');
  expect(await t.runtime.db.records.find(app.id, { email })).toBeUndefined();

  const record = await createRecord(services, { app, origin, client: owner(), record: entity(email) });
  expect(await eventsOf(record.id)).toEqual(['account.registered', 'record.created']);
  const writer = { record, byUser: false, fresh: false, clientId: null };
  await expect(changeRecord(failing(breaks), { app, acting: asOwner(t), writer, kind: 'record.updated', change: (doc) => ({ ...doc, givenName: 'Never' }) }))
    .rejects.toThrow('injected');
  expect((await t.runtime.db.records.find(app.id, { id: record.id }))!.attributes.givenName).toBeUndefined();
  const command = { app, entityId: record.id, acting: operatorActing('ada') };
  await expect(disableUser(failing(breaks), command)).rejects.toThrow('injected');
  expect((await t.runtime.db.records.find(app.id, { id: record.id }))!.disabled).toBeNull();
  expect(await eventsOf(record.id)).toEqual(['account.registered', 'record.created']);

  // and with a unit of work that writes: exactly the change's events
  await changeRecord(services, { app, acting: asOwner(t), writer, kind: 'record.updated', change: (doc) => ({ ...doc, givenName: 'Ada' }) });
  await disableUser(services, command);
  await enableUser(services, command);
  expect(await eventsOf(record.id)).toEqual(['account.enabled', 'account.disabled', 'record.updated', 'account.registered', 'record.created']);
});
