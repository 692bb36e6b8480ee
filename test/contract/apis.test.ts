import { randomUUID } from 'node:crypto';
import { DuplicateApiError } from '../../src/domain/storage/apis';
import { forEveryEngine } from '../helpers/contract';

// The APIs' contract (ApiStore) on every engine: one kept as written (its scopes and clients'
// scopes as JSON), found by public id and by identifier (unique per application by its digest,
// found only when exactly equal), listed oldest first, changed, removed once.

forEveryEngine('api store', (storage) => {
  const id = () => `api_${randomUUID().replace(/-/g, '').slice(0, 24)}`;
  const add = (publicId: string, identifier: string, applicationId = storage().appId) => storage().db.transaction((tx) => storage().db.apis.insert({
    applicationId, publicId, identifier, name: 'Orders', scopes: ['read:orders', 'write:orders'], clientScopes: { backend: ['read:orders'] }, tokenSeconds: null,
  }, new Date(), tx));

  it('keeps one as written, finds it by public id and by identifier, lists oldest first; no other application sees it', async () => {
    const { db, appId } = storage();
    const a = id();
    const b = id();
    const identifier = `https://orders.example.com/${a}`;
    expect(await add(a, identifier)).toMatchObject({ publicId: a, identifier, name: 'Orders', scopes: ['read:orders', 'write:orders'], clientScopes: { backend: ['read:orders'] }, tokenSeconds: null });
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
