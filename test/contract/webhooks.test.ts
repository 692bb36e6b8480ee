import { randomUUID } from 'node:crypto';
import { forEveryEngine } from '../helpers/contract';

// The webhook endpoints' contract (WebhookStore) on every engine: an endpoint kept as written, its
// subscription as a list or `*`, listed oldest first per application, found, its secret rotated
// with the previous one kept until a time, removed once.

forEveryEngine('webhook store', (storage) => {
  const add = (endpointId: string, types: '*' | string[], includeRecord = false) => storage().db.transaction((tx) => storage().db.webhooks.insert({
    applicationId: storage().appId, endpointId, url: `https://hooks.example.com/${endpointId}`, types, description: 'billing', includeRecord, secretSealed: `sealed-${endpointId}`,
  }, new Date(), tx));

  it('keeps an endpoint as written, lists them oldest first, finds one, and no other application sees it', async () => {
    const { db, appId } = storage();
    const a = `ep_${randomUUID().slice(0, 8)}`;
    const b = `ep_${randomUUID().slice(0, 8)}`;
    expect(await add(a, ['user.created', 'user.deleted'], true)).toMatchObject({
      endpointId: a, url: `https://hooks.example.com/${a}`, types: ['user.created', 'user.deleted'], description: 'billing', includeRecord: true,
      secretSealed: `sealed-${a}`, previousSecretSealed: null, previousUntil: null, disabledAt: null,
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
  const endpoint = async () => {
    const { db, appId } = storage();
    const endpointId = `ep_${randomUUID().slice(0, 8)}`;
    return db.transaction((tx) => db.webhooks.insert({
      applicationId: appId, endpointId, url: 'https://hooks.example.com/', types: '*', description: '', includeRecord: false, secretSealed: 's',
    }, new Date(), tx));
  };
  const T0 = new Date(Date.UTC(2030, 0, 1));
  const at = (s: number) => new Date(T0.getTime() + s * 1000);

  it('keeps one delivery per endpoint and message; an account\'s go one after another, other accounts\' beside them', async () => {
    const { db, appId } = storage();
    const e = await endpoint();
    const d = (messageId: string, accountKey: string) => ({ applicationId: appId, endpointId: e.id, messageId, type: 'user.updated', accountKey, payload: `{"m":"${messageId}"}` });
    expect(await db.transaction((tx) => db.webhooks.insertDeliveries([d('m1', '7'), d('m2', '7'), d('m3', '8'), d('m4', '')], at(0), tx))).toBe(4);
    // a fan-out run again adds nothing
    expect(await db.transaction((tx) => db.webhooks.insertDeliveries([d('m1', '7'), d('m5', '8')], at(0), tx))).toBe(1);
    expect((await db.webhooks.listDueDeliveries(e.id, at(1), 10)).map((x) => x.messageId)).toEqual(['m1', 'm3', 'm4']);
    expect(await db.webhooks.listDueEndpoints(at(1), 1000)).toContain(e.id);
    expect(await db.webhooks.listDueDeliveries(e.id, at(-1), 10)).toEqual([]);

    // m1 fails and waits a minute: m2 of the same account waits for it; m3 is delivered, and m5 after it
    const [m1] = await db.webhooks.listDueDeliveries(e.id, at(1), 1);
    expect(await db.webhooks.recordAttemptAlone(m1.id, { status: 503, ms: 12, answer: 'down', state: 'pending', nextAttemptAt: at(60) }, at(1))).toBe(true);
    const m3 = (await db.webhooks.listDueDeliveries(e.id, at(2), 10)).find((x) => x.messageId === 'm3')!;
    expect(await db.webhooks.recordAttemptAlone(m3.id, { status: 204, ms: 8, answer: '', state: 'delivered', nextAttemptAt: at(2) }, at(2))).toBe(true);
    expect(await db.webhooks.recordAttemptAlone(m3.id, { status: 204, ms: 8, answer: '', state: 'delivered', nextAttemptAt: at(2) }, at(2))).toBe(false);
    expect((await db.webhooks.listDueDeliveries(e.id, at(3), 10)).map((x) => x.messageId)).toEqual(['m4', 'm5']);
    expect((await db.webhooks.listDueDeliveries(e.id, at(61), 10)).map((x) => x.messageId)).toEqual(['m1', 'm4', 'm5']);

    const listed = await db.webhooks.listDeliveries(appId, e.id, 10);
    expect(listed.map((x) => x.messageId)).toEqual(['m5', 'm4', 'm3', 'm2', 'm1']);
    expect(listed.find((x) => x.messageId === 'm1')).toMatchObject({ state: 'pending', attempts: 1, lastStatus: 503, lastMs: 12, lastAnswer: 'down', nextAttemptAt: at(60) });
    expect(listed.find((x) => x.messageId === 'm3')).toMatchObject({ state: 'delivered', attempts: 1, lastStatus: 204 });
  });
});
