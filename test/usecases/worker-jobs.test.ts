import { randomUUID } from 'node:crypto';
import { createLogger } from '../../src/logger';
import { jobOf, PayloadError } from '../../src/domain/payloads';
import type { Application } from '../../src/domain/storage/applications';
import { webhookTransport } from '../../src/jobs/webhook-sender';
import { finishErasure } from '../../src/usecases/operators/erase-user';
import { recordSnapshots } from '../../src/usecases/records/record-snapshots';
import { sweepExpired } from '../../src/usecases/upkeep/sweep-expired';
import { createWebhookDeliverer } from '../../src/usecases/webhooks/delivery';
import { catchUp, deliverQueued, fanOut } from '../../src/usecases/webhooks/fan-out';
import { startTestApp, type TestApp } from '../helpers/backend';
import { stored } from '../helpers/stored';

// The workers' use cases, called directly (docs/architecture.md): each takes its outbox row's id
// and gives a typed result; a row that is none of its queue's, or that another worker finished,
// is said so, never half done.

let t: TestApp;
let app: Application;
const logger = createLogger('silent');
beforeAll(async () => {
  t = await startTestApp({ env: { WEBHOOKS_ALLOW_PRIVATE: 'true' } });
  app = (await t.runtime.db.applications.findByName('local'))!;
});
afterAll(() => t.close());

const deps = () => ({
  ...t.runtime.services, logger,
  deliverer: createWebhookDeliverer({ services: { ...t.runtime.services, logger }, transport: webhookTransport({ allowPrivate: true }) }),
});
/** A pending outbox row as stored, whatever its payload (a row written by hand or by another release). */
const rawRow = async (queue: string, name: string, payload: string) => {
  const id = randomUUID();
  const now = stored(t.runtime.db).time(new Date(Date.now() - 60_000));
  await stored(t.runtime.db).change(
    "INSERT INTO outbox (id, application_id, queue, name, payload, status, attempts, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, ?)",
    [id, app.id, queue, name, payload, now, now],
  );
  return id;
};
const statusOf = async (id: string) => (await t.runtime.db.outbox.find(id))?.status;

it('reads a stored job as its queue\'s, member by member: a payload that is not one names what is wrong; another queue is none of ours', () => {
  const base = { id: randomUUID(), applicationId: 1, name: 'x' };
  expect(jobOf({ ...base, queue: 'webhooks', payload: { type: 'user.updated', uuid: 'u' } })).toEqual({ ...base, queue: 'webhooks', payload: { type: 'user.updated', uuid: 'u' } });
  expect(() => jobOf({ ...base, queue: 'webhooks', payload: { endpoint: 7 } })).toThrow(PayloadError);
  expect(() => jobOf({ ...base, queue: 'webhooks', payload: { notBefore: 'soon' } })).toThrow('notBefore that is not a time');
  expect(() => jobOf({ ...base, queue: 'mail', payload: { template: 'welcome' } })).toThrow('has no locale');
  expect(() => jobOf({ ...base, queue: 'maintenance', payload: '[1]' })).toThrow('is not a JSON object');
  expect(jobOf({ ...base, queue: 'later-release', payload: {} })).toBeUndefined();
});

it('a record\'s snapshot is recorded once: the second run of its job finds it done', async () => {
  const record = await t.runtime.db.transaction((tx) => t.runtime.db.records.insert({
    applicationId: app.id, typeName: 'user', uuid: randomUUID(), email: `${randomUUID()}@example.com`, username: null, passwordHash: null, emailVerified: null, attributes: {},
  }, new Date(), tx));
  const id = randomUUID();
  await t.runtime.db.transaction((tx) => t.runtime.db.outbox.insert([{
    id, applicationId: app.id, queue: 'versions', name: 'snapshot', entityId: record.id,
    payload: { entityId: record.id, uuid: record.uuid, version: 1, validFrom: new Date().toISOString(), snapshot: { n: 1 } },
  }], new Date(), tx));
  const first = await recordSnapshots(t.runtime.services, { outboxId: id, finalAttempt: false });
  expect(first).toMatchObject({ kind: 'recorded' });
  expect(await statusOf(id)).toBe('done');
  expect(await recordSnapshots(t.runtime.services, { outboxId: id, finalAttempt: false })).toEqual({ kind: 'skipped', why: 'recorded already' });
});

it('a fan-out whose row is none of a webhooks job\'s is tried again and leaves its row pending; a catch-up of one fails with why', async () => {
  const bad = await rawRow('webhooks', 'fan-out', '{"endpoint": 7}');
  await expect(fanOut(deps(), { outboxId: bad })).rejects.toThrow('could not be fanned out');
  expect(await statusOf(bad)).toBe('pending');
  const badCatchUp = await rawRow('webhooks', 'catch-up', '"not an object"');
  await expect(catchUp(deps(), { outboxId: badCatchUp })).rejects.toThrow(PayloadError);
  expect(await statusOf(badCatchUp)).toBe('pending');
  // (the rows are not left for the other tests' fan-outs to trip on)
  await stored(t.runtime.db).change('DELETE FROM outbox WHERE id IN (?, ?)', [bad, badCatchUp]);
});

it('a fan-out or catch-up another worker finished is skipped; deliveries queued for no endpoint run the recurring delivery', async () => {
  const gone = randomUUID();
  expect(await fanOut(deps(), { outboxId: gone })).toEqual({ kind: 'skipped', why: 'fanned out already' });
  expect(await catchUp(deps(), { outboxId: gone })).toEqual({ kind: 'skipped', why: 'caught up already' });
  const forNobody = await rawRow('webhooks', 'catch-up', JSON.stringify({ endpoint: 'ep_nobody' }));
  expect(await catchUp(deps(), { outboxId: forNobody })).toEqual({ kind: 'skipped', why: 'no such endpoint' });
  expect(await statusOf(forNobody)).toBe('done');
  const queued = await rawRow('webhooks', 'deliver', JSON.stringify({ endpoint: 'ep_nobody' }));
  expect(await deliverQueued(deps(), { outboxId: queued })).toEqual({ kind: 'sent', delivered: 0, failed: 0 });
  expect(await statusOf(queued)).toBe('done');
  expect(await deliverQueued(deps(), {})).toEqual({ kind: 'sent', delivered: 0, failed: 0 });
});

it('an erasure\'s last steps: a row finished already is skipped; one that cannot be opened counts a failed attempt, failed for good on the last', async () => {
  expect(await finishErasure(t.runtime.services, { outboxId: randomUUID(), finalAttempt: false })).toEqual({ kind: 'skipped', why: 'finished already' });
  const sealedForAnother = await rawRow('maintenance', 'erase', JSON.stringify({ entityId: 1, sealedNeedles: t.runtime.services.box.seal('{}', 'another row') }));
  await expect(finishErasure(t.runtime.services, { outboxId: sealedForAnother, finalAttempt: false })).rejects.toThrow();
  expect(await t.runtime.db.outbox.find(sealedForAnother)).toMatchObject({ status: 'pending', attempts: 1 });
  await expect(finishErasure(t.runtime.services, { outboxId: sealedForAnother, finalAttempt: true })).rejects.toThrow();
  expect(await t.runtime.db.outbox.find(sealedForAnother)).toMatchObject({ status: 'failed', attempts: 2 });
});

it('the sweep removes what is past its time and says how many of each', async () => {
  const done = await rawRow('webhooks', 'fan-out', '{}');
  await t.runtime.db.outbox.completeAlone(done, new Date(Date.now() - 8 * 86_400_000));
  const swept = await sweepExpired(t.runtime.services, { settings: {
    credentialRetentionMs: 86_400_000, outboxRetentionMs: 7 * 86_400_000, versionsRetentionMs: null, eventsRetentionMs: 400 * 86_400_000,
    webhookDeliveriesRetentionMs: 30 * 86_400_000, batchSize: 500, maxBatches: 10,
  } });
  expect(swept).toEqual({ credentials: expect.any(Number), outbox: expect.any(Number), snapshots: 0, compacted: 0, oidcState: expect.any(Number), signingKeys: expect.any(Number), events: expect.any(Number), webhookDeliveries: expect.any(Number), logoutDeliveries: expect.any(Number) });
  expect(swept.outbox).toBeGreaterThanOrEqual(1);
  expect(await statusOf(done)).toBeUndefined();
});
