import { randomUUID } from 'node:crypto';
import { DuplicateApiError } from '../../src/domain/storage/apis';
import { forEveryEngine } from '../helpers/contract';

// The APIs' contract (ApiStore) on every engine: one kept as written (its scopes and clients'
// scopes as JSON), found by public id and by identifier (unique per application by its digest,
// found only when exactly equal), listed oldest first, changed, removed once.

forEveryEngine('api store', (storage) => {
  const id = () => `api_${randomUUID().replace(/-/g, '').slice(0, 24)}`;
  const add = (publicId: string, identifier: string, applicationId = storage().appId) => storage().db.transaction((tx) => storage().db.apis.insert({
    applicationId, publicId, identifier, name: 'Orders', scopes: ['read:orders', 'write:orders'], clientScopes: { backend: ['read:orders'] }, tokenSeconds: null, rbac: false, permissionsInToken: true,
  }, new Date(), tx));

  it('keeps one as written, finds it by public id and by identifier, lists oldest first; no other application sees it', async () => {
    const { db, appId } = storage();
    const a = id();
    const b = id();
    const identifier = `https://orders.example.com/${a}`;
    expect(await add(a, identifier)).toMatchObject({ publicId: a, identifier, name: 'Orders', scopes: ['read:orders', 'write:orders'], clientScopes: { backend: ['read:orders'] }, tokenSeconds: null, rbac: false, permissionsInToken: true });
    await add(b, `urn:example:${b}`);
    expect((await db.apis.list(appId)).filter((x) => [a, b].includes(x.publicId)).map((x) => x.publicId)).toEqual([a, b]);
    expect(await db.apis.findByIdentifier(appId, identifier)).toMatchObject({ publicId: a });
    expect(await db.apis.findByIdentifier(appId, identifier.toUpperCase())).toBeUndefined();
    expect(await db.apis.findByIdentifier(appId + 1_000_000, identifier)).toBeUndefined();
    expect(await db.apis.find(appId + 1_000_000, b)).toBeUndefined();
  });

  it('refuses a second one of an identifier; changes and removes once', async () => {
    const { db, appId } = storage();
    const a = id();
    const identifier = `https://orders.example.com/${a}`;
    await add(a, identifier);
    await expect(add(id(), identifier)).rejects.toBeInstanceOf(DuplicateApiError);
    expect(await db.transaction((tx) => db.apis.update(appId, a, { name: 'Orders v2', scopes: ['read:orders'], tokenSeconds: 120, clientScopes: {} }, new Date(), tx))).toBe(true);
    expect(await db.apis.find(appId, a)).toMatchObject({ name: 'Orders v2', scopes: ['read:orders'], tokenSeconds: 120, clientScopes: {}, identifier });
    expect(await db.transaction((tx) => db.apis.remove(appId, a, tx))).toBe(true);
    expect(await db.transaction((tx) => db.apis.remove(appId, a, tx))).toBe(false);
    expect(await db.transaction((tx) => db.apis.update(appId, a, { name: 'x' }, new Date(), tx))).toBe(false);
  });
});

forEveryEngine('role store', (storage) => {
  const account = async () => storage().db.transaction((tx) => storage().db.records.insert({
    applicationId: storage().appId, typeName: 'user', uuid: randomUUID(), email: `${randomUUID()}@example.com`, username: null, passwordHash: null, emailVerified: null, attributes: {},
  }, new Date(), tx));

  it('defines a role (again), lists by name; gives it once however often it is given, in parallel too; takes it; a removed role leaves every account', async () => {
    const { db, appId } = storage();
    const tag = randomUUID().slice(0, 8);
    const clerk = await db.transaction((tx) => db.roles.define(appId, { name: `clerk_${tag}`, description: 'takes orders', permissions: { api_1: ['read'] } }, new Date(), tx));
    expect(clerk).toMatchObject({ name: `clerk_${tag}`, description: 'takes orders', permissions: { api_1: ['read'] } });
    expect(await db.transaction((tx) => db.roles.define(appId, { name: `clerk_${tag}`, description: '', permissions: { api_1: ['read', 'write'] } }, new Date(), tx)))
      .toMatchObject({ id: clerk.id, permissions: { api_1: ['read', 'write'] } });
    const viewer = await db.transaction((tx) => db.roles.define(appId, { name: `viewer_${tag}`, description: '', permissions: {} }, new Date(), tx));
    expect((await db.roles.list(appId)).map((r) => r.name).filter((n) => n.endsWith(tag))).toEqual([`clerk_${tag}`, `viewer_${tag}`]);
    const a = await account();
    const given = await Promise.all([0, 1, 2].map(() => db.transaction((tx) => db.roles.assign(appId, a.id, [clerk, viewer], new Date(), tx))));
    expect(given.flat().sort()).toEqual([`clerk_${tag}`, `viewer_${tag}`]);
    expect((await db.roles.listOf(appId, a.id)).map((r) => r.name)).toEqual([`clerk_${tag}`, `viewer_${tag}`]);
    expect((await db.roles.listOfAccount(appId, a.uuid)).map((r) => r.name)).toEqual([`clerk_${tag}`, `viewer_${tag}`]);
    expect(await db.roles.listOfAccount(appId, randomUUID())).toEqual([]);
    expect(await db.roles.listOfAccount(appId + 1_000_000, a.uuid)).toEqual([]);
    expect(await db.transaction((tx) => db.roles.unassign(appId, a.id, [viewer, viewer], tx))).toEqual([`viewer_${tag}`]);
    expect(await db.transaction((tx) => db.roles.remove(appId, `clerk_${tag}`, tx))).toBe(1);
    expect(await db.transaction((tx) => db.roles.remove(appId, `clerk_${tag}`, tx))).toBeUndefined();
    expect(await db.roles.listOf(appId, a.id)).toEqual([]);
    expect(await db.roles.listOf(appId + 1_000_000, a.id)).toEqual([]);
  });
});
