import { randomUUID } from 'node:crypto';
import { forEveryEngine } from '../helpers/contract';

// The applications store's contract (ApplicationStore): found by name and id, one per name, and
// the application-wide settings changed under the row lock, so concurrent changes never lose one;
// and a count of the application's things taken under its claimed row, spread over every node of a
// Galera cluster, never passing its limit.

forEveryEngine('applications store', (storage) => {
  it('creates an application found by name and by id, with no settings; a name is taken once', async () => {
    const { db } = storage();
    const name = `app-${randomUUID().slice(0, 8)}`;
    const created = await db.transaction((tx) => db.applications.create(name, new Date(), tx));
    expect(created).toEqual({ id: expect.any(Number), name, settings: {} });
    expect(await db.applications.findByName(name)).toEqual(created);
    expect(await db.applications.findById(created.id)).toEqual(created);
    expect(await db.applications.findByName(`${name}-not`)).toBeUndefined();
    const listed = await db.applications.list();
    expect(listed).toContainEqual(created);
    await expect(db.transaction((tx) => db.applications.create(name, new Date(), tx))).rejects.toThrow();
  });

  it('20 concurrent settings changes, each in its own transaction, all kept; a change rolled back leaves nothing', async () => {
    const { db, on, appId } = storage();
    await Promise.all(Array.from({ length: 20 }, (_, i) => on(i).transaction((tx) =>
      on(i).applications.mutateSettings(appId, (s) => ({ ...s, [`k${i}`]: String(i) }), new Date(), tx))));
    const settings = (await db.applications.findById(appId))!.settings;
    expect(Object.keys(settings).sort()).toEqual(Array.from({ length: 20 }, (_, i) => `k${i}`).sort());
    await expect(db.transaction(async (tx) => {
      await db.applications.mutateSettings(appId, () => ({}), new Date(), tx);
      throw new Error('rolled back');
    })).rejects.toThrow('rolled back');
    expect(Object.keys((await db.applications.findById(appId))!.settings)).toHaveLength(20);
  });

  it('an API added to an application of at most one, by two at once, 10 times over every node, each counting under the claimed application: one is added', async () => {
    const { db, on } = storage();
    for (let round = 0; round < 10; round++) {
      const app = await db.transaction((tx) => db.applications.create(`app-${randomUUID().slice(0, 8)}`, new Date(), tx));
      const added = await Promise.all([0, 1].map((i) => on(i + round).transaction(async (tx) => {
        const node = on(i + round);
        await node.applications.claim(app.id, new Date(), tx);
        if ((await node.apis.list(app.id, tx)).length >= 1) return false;
        await node.apis.insert({
          applicationId: app.id, publicId: `api_${randomUUID().replace(/-/g, '')}`, identifier: `https://api${i}.example.com`, name: 'API', scopes: [],
          clientScopes: {}, tokenSeconds: null, rbac: false, permissionsInToken: false,
        }, new Date(), tx);
        return true;
      })));
      expect(added.filter(Boolean)).toHaveLength(1);
      expect(await db.apis.list(app.id)).toHaveLength(1);
    }
  });
});
