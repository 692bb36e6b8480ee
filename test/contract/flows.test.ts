import { forEveryEngine } from '../helpers/contract';

// The flows store's contract (FlowStore): versions are immutable and numbered in order; a
// definition the newest version holds keeps that version; concurrent imports get distinct versions.

forEveryEngine('flows store', (storage) => {
  const insert = (name: string, checksum: string, i = 0) => storage().on(i).transaction((tx) =>
    storage().on(i).flows.insertNextVersion(storage().appId, name, { name, checksum }, checksum, new Date(), tx));

  it('numbers versions from 1; the same checksum as the newest keeps it; another is the next version', async () => {
    const { db, appId } = storage();
    expect(await insert('signin', 'a')).toMatchObject({ name: 'signin', version: 1 });
    expect(await insert('signin', 'a')).toMatchObject({ version: 1, unchanged: true });
    expect(await insert('signin', 'b')).toMatchObject({ version: 2 });
    expect(await db.flows.latestVersion(appId, 'signin')).toBe(2);
    expect(await db.flows.find(appId, 'signin', 1)).toMatchObject({ version: 1, checksum: 'a', definition: { name: 'signin', checksum: 'a' } });
    expect(await db.flows.find(appId, 'signin', 3)).toBeUndefined();
    expect(await db.flows.latestVersion(appId, 'nothing')).toBeUndefined();
  });

  it('lists every flow by name with its newest version', async () => {
    const { db, appId } = storage();
    await insert('zeta', 'z1');
    await insert('alpha', 'a1');
    await insert('alpha', 'a2');
    const names = await db.flows.listNames(appId);
    expect(names.filter((f) => f.name === 'alpha' || f.name === 'zeta')).toEqual([{ name: 'alpha', latest: 2 }, { name: 'zeta', latest: 1 }]);
    expect(names.map((f) => f.name)).toEqual([...names.map((f) => f.name)].sort());
  });

  it('10 concurrent imports of different definitions get 10 distinct versions', async () => {
    const imported = await Promise.all(Array.from({ length: 10 }, (_, i) => insert('raced', `c${i}`, i)));
    expect(imported.map((f) => f.version).sort((a, b) => a - b)).toEqual(Array.from({ length: 10 }, (_, i) => i + 1));
  });
});
