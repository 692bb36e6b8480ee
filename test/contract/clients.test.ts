import { randomUUID } from 'node:crypto';
import type { StoredClient } from '../../src/domain/storage/clients';
import { forEveryEngine } from '../helpers/contract';

// The clients store's contract (ClientStore): scoped to the application, listed in creation order,
// read-modify-write under the row lock (concurrent settings changes never lose one), removed once.

forEveryEngine('clients store', (storage) => {
  const row = (applicationId: number, over: Partial<StoredClient> = {}): Omit<StoredClient, 'id'> => ({
    applicationId, clientId: randomUUID().replace(/-/g, ''), secretSealed: 'sealed', description: 'd', features: ['login_client'], settings: {}, ...over,
  });

  it('a client is found by client_id and row id within its application only, and listed in creation order', async () => {
    const { db, appId } = storage();
    const [a, b] = await db.transaction(async (tx) => [
      await db.clients.insert(row(appId, { description: 'first' }), new Date(), tx), await db.clients.insert(row(appId, { description: 'second' }), new Date(), tx),
    ]);
    expect(await db.clients.find(appId, a.clientId)).toEqual(a);
    expect(await db.clients.findById(appId, b.id)).toEqual(b);
    expect(await db.clients.find(appId + 1000, a.clientId)).toBeUndefined();
    expect(await db.clients.findById(appId + 1000, b.id)).toBeUndefined();
    const listed = (await db.clients.list(appId)).map((c) => c.id);
    expect(listed.indexOf(a.id)).toBeLessThan(listed.indexOf(b.id));
    expect(await db.clients.first()).toBeDefined();
  });

  it('20 concurrent changes of one client\'s settings are all kept; an unknown client changes nothing', async () => {
    const { db, on, appId } = storage();
    const c = await db.transaction((tx) => db.clients.insert(row(appId), new Date(), tx));
    await Promise.all(Array.from({ length: 20 }, (_, i) => on(i).transaction((tx) =>
      on(i).clients.mutate(appId, c.clientId, (current) => ({ settings: { ...current.settings, [`k${i}`]: 'v' } }), new Date(), tx))));
    expect(Object.keys((await db.clients.find(appId, c.clientId))!.settings)).toHaveLength(20);
    expect(await db.transaction((tx) => db.clients.mutate(appId, 'nobody', () => ({ features: [] }), new Date(), tx))).toBeUndefined();
  });

  it('a client is removed once, and only in its application', async () => {
    const { db, appId } = storage();
    const c = await db.transaction((tx) => db.clients.insert(row(appId), new Date(), tx));
    expect(await db.transaction((tx) => db.clients.remove(appId + 1000, c.clientId, tx))).toBe(false);
    expect(await db.transaction((tx) => db.clients.remove(appId, c.clientId, tx))).toBe(true);
    expect(await db.transaction((tx) => db.clients.remove(appId, c.clientId, tx))).toBe(false);
    expect(await db.clients.find(appId, c.clientId)).toBeUndefined();
  });
});
