import { randomUUID } from 'node:crypto';
import { event, kept, recordSubject } from '../../src/domain/events';
import { webhookPayloadOf } from '../../src/domain/payloads';
import type { OutboxJob } from '../../src/domain/storage/outbox';
import type { AttemptRecord, NewDelivery, StoredDelivery } from '../../src/domain/storage/webhooks';
import { RETRY_FOR_MS } from '../../src/domain/webhooks';
import { forEveryEngine, newAccount } from '../helpers/contract';

// The webhook endpoints' contract (WebhookStore) on every engine: an endpoint kept as written, its
// subscription as a list or `*`, listed oldest first per application, found, its secret rotated
// with the previous one kept until a time, removed once.

forEveryEngine('webhook store', (storage) => {
  const add = (endpointId: string, types: '*' | string[], includeRecord = false) => storage().db.transaction((tx) => storage().db.webhooks.insert({
    applicationId: storage().appId, endpointId, url: `https://hooks.example.com/${endpointId}`, types, description: 'billing', includeRecord, secretSealed: `sealed-${endpointId}`,
    eventsFrom: 41,
  }, new Date(), tx));

  it('keeps an endpoint as written, lists them oldest first, finds one, and no other application sees it', async () => {
    const { db, appId } = storage();
    const a = `ep_${randomUUID().slice(0, 8)}`;
    const b = `ep_${randomUUID().slice(0, 8)}`;
    expect(await add(a, ['user.created', 'user.deleted'], true)).toMatchObject({
      endpointId: a, url: `https://hooks.example.com/${a}`, types: ['user.created', 'user.deleted'], description: 'billing', includeRecord: true,
      secretSealed: `sealed-${a}`, previousSecretSealed: null, previousUntil: null, disabledAt: null, failingSince: null, eventsFrom: 41,
    });
    await add(b, '*');
    const listed = (await db.webhooks.list(appId)).filter((e) => e.endpointId === a || e.endpointId === b);
    expect(listed.map((e) => [e.endpointId, e.types, e.includeRecord])).toEqual([[a, ['user.created', 'user.deleted'], true], [b, '*', false]]);
    expect(await db.webhooks.find(appId, b)).toMatchObject({ endpointId: b, types: '*' });
    expect(await db.webhooks.find(appId + 1_000_000, b)).toBeUndefined();
  });

  it('rotates a secret keeping the previous one until a time, and removes an endpoint once', async () => {
    const { db, appId } = storage();
    const id = `ep_${randomUUID().slice(0, 8)}`;
    await add(id, ['ping']);
    const until = new Date(Date.UTC(2030, 0, 2, 3, 4, 5, 678));
    expect(await db.transaction((tx) => db.webhooks.rotateSecret(appId, id, 'sealed-new', until, new Date(), tx))).toBe(true);
    expect(await db.webhooks.find(appId, id)).toMatchObject({ secretSealed: 'sealed-new', previousSecretSealed: `sealed-${id}`, previousUntil: until });
    expect(await db.transaction((tx) => db.webhooks.rotateSecret(appId, 'ep_none', 'x', until, new Date(), tx))).toBe(false);
    expect(await db.transaction((tx) => db.webhooks.remove(appId, id, tx))).toBe(true);
    expect(await db.transaction((tx) => db.webhooks.remove(appId, id, tx))).toBe(false);
    expect(await db.webhooks.find(appId, id)).toBeUndefined();
  });
});

forEveryEngine('webhook deliveries', (storage) => {
  const endpoint = async (types: '*' | string[] = '*') => {
    const { db, appId } = storage();
    const endpointId = `ep_${randomUUID().slice(0, 8)}`;
    return db.transaction((tx) => db.webhooks.insert({
      applicationId: appId, endpointId, url: 'https://hooks.example.com/', types, description: '', includeRecord: false, secretSealed: 's', eventsFrom: null,
    }, new Date(), tx));
  };
  const T0 = new Date(Date.UTC(2030, 0, 1));
  const at = (s: number) => new Date(T0.getTime() + s * 1000);
  const dueOf = async (endpointId: number, now: Date, limit: number) => (await storage().db.webhooks.listDueDeliveries(endpointId, now, limit)).due;
  /** An attempt recorded under a claim of its own (taken at `now`, as a worker takes it). */
  const recorded = async (d: StoredDelivery, a: Omit<AttemptRecord, 'claim'>, now: Date) => {
    const { claim } = await storage().db.webhooks.claimAlone([d.id], now, new Date(now.getTime() + 1000));
    return storage().db.webhooks.recordAttemptAlone(d.id, { ...a, claim }, now);
  };
  const delivery = (endpointId: number, messageId: string, accountKey: string, eventSeq: number, accountId: number | null = null): NewDelivery => ({
    applicationId: storage().appId, endpointId, messageId, type: 'user.updated', accountKey, accountId, eventSeq, payload: `{"m":"${messageId}"}`,
  });

  it('keeps one delivery per endpoint and message; an account\'s go one after another in the store\'s order, other accounts\' beside them', async () => {
    const { db, appId } = storage();
    const e = await endpoint();
    const d = (messageId: string, accountKey: string, seq: number) => delivery(e.id, messageId, accountKey, seq);
    // m2 was fanned out first, but its event came after m1's: m1 goes first
    expect(await db.transaction((tx) => db.webhooks.insertDeliveries([d('m2', '7', 20), d('m1', '7', 10), d('m3', '8', 30), d('m4', 'app', 40)], at(0), tx))).toBe(4);
    // a fan-out run again adds nothing
    expect(await db.transaction((tx) => db.webhooks.insertDeliveries([d('m1', '7', 10), d('m5', '8', 50)], at(0), tx))).toBe(1);
    expect((await dueOf(e.id, at(1), 10)).map((x) => x.messageId)).toEqual(['m1', 'm3', 'm4']);
    expect(await db.webhooks.listDueEndpoints(at(1), 1000)).toContain(e.id);
    expect(await dueOf(e.id, at(-1), 10)).toEqual([]);

    // m1 fails and waits a minute: m2 of the same account waits for it; m3 is delivered, and m5 after it
    const [m1] = await dueOf(e.id, at(1), 1);
    expect(await recorded(m1, { status: 503, ms: 12, answer: 'down', state: 'pending', nextAttemptAt: at(60) }, at(1))).toBe(true);
    expect(await db.webhooks.markFailingAlone(e.id, at(1))).toBe(true);
    expect(await db.webhooks.markFailingAlone(e.id, at(2))).toBe(false);
    expect((await db.webhooks.find(appId, e.endpointId))!.failingSince).toEqual(at(1));
    const m3 = (await dueOf(e.id, at(2), 10)).find((x) => x.messageId === 'm3')!;
    expect(await recorded(m3, { status: 204, ms: 8, answer: '', state: 'delivered', nextAttemptAt: at(2) }, at(2))).toBe(true);
    expect(await db.webhooks.markFailingAlone(e.id, null)).toBe(true);
    expect(await db.webhooks.markFailingAlone(e.id, null)).toBe(false);
    expect((await db.webhooks.find(appId, e.endpointId))!.failingSince).toBeNull();
    expect(await recorded(m3, { status: 204, ms: 8, answer: '', state: 'delivered', nextAttemptAt: at(2) }, at(2))).toBe(false);
    expect((await dueOf(e.id, at(3), 10)).map((x) => x.messageId)).toEqual(['m4', 'm5']);
    expect((await dueOf(e.id, at(61), 10)).map((x) => x.messageId)).toEqual(['m1', 'm4', 'm5']);
    // what else is pending: m2 behind m1, and the two not asked for
    expect((await db.webhooks.listDueDeliveries(e.id, at(61), 1)).others).toBe(3);

    const listed = await db.webhooks.listDeliveries(appId, e.id, 10);
    expect(listed.map((x) => x.messageId)).toEqual(['m5', 'm4', 'm3', 'm1', 'm2']);
    expect(listed.find((x) => x.messageId === 'm1')).toMatchObject({
      state: 'pending', attempts: 1, lastStatus: 503, lastMs: 12, lastAnswer: 'down', nextAttemptAt: at(60), eventSeq: 10, giveUpAt: new Date(at(0).getTime() + RETRY_FOR_MS),
    });
    expect(listed.find((x) => x.messageId === 'm3')).toMatchObject({ state: 'delivered', attempts: 1, lastStatus: 204 });
    expect(await db.webhooks.findDelivery(appId, m3.id)).toMatchObject({ messageId: 'm3' });
    expect(await db.webhooks.findDelivery(appId + 1_000_000, m3.id)).toBeUndefined();
    expect((await db.webhooks.listBacklog()).find((b) => b.endpoint === e.endpointId)).toEqual({ endpoint: e.endpointId, pending: 4, oldest: at(0) });
  });

  it('lets one worker of many take a due delivery, and gives it back when its lease ends', async () => {
    const { db } = storage();
    const e = await endpoint();
    await db.transaction((tx) => db.webhooks.insertDeliveries([delivery(e.id, 'lease', 'a', 1)], at(0), tx));
    const [due] = await dueOf(e.id, at(1), 1);
    const takes = await Promise.all(Array.from({ length: 10 }, () => db.webhooks.claimAlone([due.id, 999_999_999], at(1), at(61))));
    expect(takes.filter((t) => t.ids.length > 0).map((t) => t.ids)).toEqual([[due.id]]);
    // an attempt is recorded by the claim that took it only
    const winner = takes.find((t) => t.ids.length > 0)!;
    const loser = takes.find((t) => t.ids.length === 0)!;
    expect(await db.webhooks.recordAttemptAlone(due.id, { claim: loser.claim, status: 204, ms: 1, answer: '', state: 'delivered', nextAttemptAt: at(2) }, at(2))).toBe(false);
    expect(await db.webhooks.recordAttemptAlone(due.id, { claim: winner.claim, status: 503, ms: 1, answer: '', state: 'pending', nextAttemptAt: at(61) }, at(2))).toBe(true);
    expect(await dueOf(e.id, at(30), 1)).toEqual([]);
    expect((await dueOf(e.id, at(61), 1)).map((x) => x.messageId)).toEqual(['lease']);
  });

  it('fans an outbox row out once; an account\'s deliveries wait behind an earlier event of its own not yet fanned out', async () => {
    const { db, appId } = storage();
    const e = await endpoint();
    const account = await newAccount(storage());
    const [early, late] = [randomUUID(), randomUUID()];
    const rows = [early, late].map((eventId): OutboxJob => ({ id: randomUUID(), applicationId: appId, queue: 'webhooks', name: 'fan-out', payload: {}, entityId: account.id, eventId }));
    await db.transaction(async (tx) => {
      await db.events.append([early, late].map((eventId, i) => ({ ...kept(event('account.enabled', appId, at(i), { actor: { kind: 'system' }, origin: {} }, recordSubject(account.id), {})), eventId })), tx);
      await db.outbox.insert(rows, at(0), tx);
    });
    const [earlySeq, lateSeq] = await Promise.all([early, late].map(async (u) => Number((await db.events.findByUid(u))!.id)));
    // the later event is fanned out first (a faster worker): it waits for the earlier one's row
    const fanned = await Promise.all(Array.from({ length: 5 }, () => db.webhooks.fanOutAlone(rows[1].id, [delivery(e.id, 'late', String(account.id), lateSeq, account.id)], at(1))));
    expect(fanned.filter(Boolean)).toHaveLength(1);
    expect((await db.outbox.find(rows[1].id))!.status).toBe('done');
    expect(await dueOf(e.id, at(2), 10)).toEqual([]);
    expect(await db.webhooks.fanOutAlone(rows[0].id, [delivery(e.id, 'early', String(account.id), earlySeq, account.id)], at(2))).toBe(true);
    expect((await dueOf(e.id, at(3), 10)).map((x) => x.messageId)).toEqual(['early']);
    expect(await db.webhooks.findAccountUuid(appId, account.id)).toBe(account.uuid);
    expect(await db.webhooks.findAccountUuid(appId, 999_999_999)).toBeUndefined();
    // a deleted record's uuid, from its tombstone still waiting in the outbox
    const gone = randomUUID();
    await db.transaction((tx) => db.outbox.insert([{ id: randomUUID(), applicationId: appId, queue: 'versions', name: 'tombstone', entityId: 999_999_998,
      payload: { entityId: 999_999_998, uuid: gone, version: 2, validFrom: new Date().toISOString(), snapshot: null } }], at(0), tx));
    expect(await db.webhooks.findAccountUuid(appId, 999_999_998)).toBe(gone);
  });

  it('fans a batch of pending rows out in one transaction: the job\'s own first, then the oldest others; a row done already is skipped', async () => {
    const { db, appId } = storage();
    const e = await endpoint();
    const rows = Array.from({ length: 4 }, (_, i): OutboxJob => ({ id: randomUUID(), applicationId: appId, queue: 'webhooks', name: 'fan-out', payload: { type: String(i) }, eventId: randomUUID() }));
    for (const [i, row] of rows.entries()) await db.transaction((tx) => db.outbox.insert([row], at(i), tx));
    const seen: string[][] = [];
    const made = await db.webhooks.fanOutBatchAlone(rows[2].id, 3, async (batch) => {
      seen.push(batch.map((r) => r.id));
      return new Map(batch.map((r) => [r.id, [delivery(e.id, `b-${r.id}`, String(webhookPayloadOf(r.payload).type), Number(webhookPayloadOf(r.payload).type) + 1)]]));
    }, at(10));
    expect(made.own).toBe(true);
    expect(seen).toEqual([[rows[2].id, rows[0].id, rows[1].id]]);
    expect((await Promise.all(rows.map(async (r) => (await db.outbox.find(r.id))!.status)))).toEqual(['done', 'done', 'done', 'pending']);
    expect(made.deliveries).toHaveLength(3);
    expect((await db.webhooks.listDeliveries(appId, e.id, 10)).map((d) => d.messageId).sort()).toEqual(made.deliveries.map((d) => d.messageId).sort());
    expect(await db.webhooks.fanOutBatchAlone(rows[0].id, 3, async () => { throw new Error('not asked'); }, at(11))).toEqual({ own: false, deliveries: [] });
  });

  it('disables and enables an endpoint, sends one delivery or every one given up since a time again, and purges finished ones', async () => {
    const { db, appId } = storage();
    const e = await endpoint(['user.updated']);
    await db.transaction((tx) => db.webhooks.insertDeliveries([delivery(e.id, 'r1', 'a', 1), delivery(e.id, 'r2', 'b', 2), delivery(e.id, 'r3', 'c', 3)], at(0), tx));
    const updatedOnly = async () => (await db.webhooks.listSubscriptions()).filter((s) => s.applicationId === appId && JSON.stringify(s.types) === '["user.updated"]').length;
    expect(await updatedOnly()).toBe(1);
    expect(await db.transaction((tx) => db.webhooks.setDisabled(appId, e.endpointId, at(1), at(1), 0, tx))).toBe(true);
    expect(await db.webhooks.listDueEndpoints(at(2), 1000)).not.toContain(e.id);
    expect(await updatedOnly()).toBe(0);
    expect(await db.transaction((tx) => db.webhooks.setDisabled(appId, 'ep_none', at(1), at(1), 0, tx))).toBe(false);
    expect(await db.transaction((tx) => db.webhooks.setDisabled(appId, e.endpointId, null, at(2), 77, tx))).toBe(true);
    expect(await db.webhooks.findByKey(e.id)).toMatchObject({ disabledAt: null, eventsFrom: 77, listeningSince: at(2) });
    expect(await db.webhooks.listDueEndpoints(at(2), 1000)).toContain(e.id);

    const [r1, r2, r3] = await dueOf(e.id, at(2), 10);
    await recorded(r1, { status: 500, ms: 1, answer: '', state: 'failed', nextAttemptAt: at(3) }, at(3));
    await recorded(r2, { status: 500, ms: 1, answer: '', state: 'failed', nextAttemptAt: at(3) }, at(3));
    await recorded(r3, { status: 200, ms: 1, answer: '', state: 'delivered', nextAttemptAt: at(3) }, at(3));
    expect(await db.transaction((tx) => db.webhooks.resend(appId, r3.id, at(4), tx))).toBe(true);
    expect(await db.transaction((tx) => db.webhooks.resend(appId, r3.id, at(4), tx))).toBe(false);
    expect(await db.transaction((tx) => db.webhooks.replayFailed(e.id, at(-1), at(4), tx))).toBe(2);
    expect((await dueOf(e.id, at(5), 10)).map((x) => x.messageId)).toEqual(['r1', 'r2', 'r3']);
    expect((await db.webhooks.findDelivery(appId, r3.id))!).toMatchObject({ state: 'pending', attempts: 1, giveUpAt: new Date(at(4).getTime() + RETRY_FOR_MS) });
    expect((await db.webhooks.findDelivery(appId, r1.id))!.giveUpAt).toEqual(new Date(at(4).getTime() + RETRY_FOR_MS));

    await recorded(r3, { status: 200, ms: 1, answer: '', state: 'delivered', nextAttemptAt: at(6) }, at(6));
    expect(await db.webhooks.purgeFinishedAlone(at(1), 1000)).toBeGreaterThanOrEqual(1);
    expect(await db.webhooks.findDelivery(appId, r3.id)).toBeUndefined();
    expect(await db.webhooks.findDelivery(appId, r1.id)).toMatchObject({ state: 'pending' });
  });
});
