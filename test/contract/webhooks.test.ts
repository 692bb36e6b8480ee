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
