import { randomUUID } from 'node:crypto';
import type { ServiceProviderDescriptor } from '../../src/domain/saml/metadata';
import { DuplicateEntityError } from '../../src/domain/storage/saml';
import { forEveryEngine } from '../helpers/contract';

// The SAML service providers' contract (SamlStore) on every engine: one kept as written (its
// descriptor and attributes as JSON), found by public id and by entity id (up to 1,024 characters,
// unique per application by its digest), listed oldest first, changed, removed once.

forEveryEngine('saml store', (storage) => {
  const descriptor = (entityId: string): ServiceProviderDescriptor => ({
    entityId, assertionConsumers: [{ binding: 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST', location: 'https://sp.example.com/acs', index: 0, isDefault: true }],
    singleLogout: [], certificates: ['MIIB'], authnRequestsSigned: true, wantAssertionsSigned: false, nameIdFormats: [],
  });
  const add = (publicId: string, entityId: string) => storage().db.transaction((tx) => storage().db.saml.insert({
    applicationId: storage().appId, publicId, entityId, name: 'CRM', metadata: '<md:EntityDescriptor/>', descriptor: descriptor(entityId),
    nameIdFormat: 'persistent', attributes: { mail: 'email' }, persistentSalt: 'ab'.repeat(32),
  }, new Date(), tx));

  it('keeps one as written, finds it by public id and by entity id, lists oldest first; no other application sees it', async () => {
    const { db, appId } = storage();
    const a = `sp_${randomUUID().replace(/-/g, '').slice(0, 24)}`;
    const b = `sp_${randomUUID().replace(/-/g, '').slice(0, 24)}`;
    const long = `https://sp.example.com/${'x'.repeat(960)}/${a}`;
    expect(await add(a, long)).toMatchObject({ publicId: a, entityId: long, name: 'CRM', descriptor: descriptor(long), nameIdFormat: 'persistent', attributes: { mail: 'email' } });
    await add(b, `https://other.example.com/${b}`);
    expect((await db.saml.list(appId)).filter((x) => [a, b].includes(x.publicId)).map((x) => x.publicId)).toEqual([a, b]);
    expect(await db.saml.findByEntity(appId, long)).toMatchObject({ publicId: a });
    expect(await db.saml.find(appId, b)).toMatchObject({ entityId: `https://other.example.com/${b}` });
    expect(await db.saml.find(appId + 1_000_000, b)).toBeUndefined();
    expect(await db.saml.findByEntity(appId + 1_000_000, long)).toBeUndefined();
  });

  it('refuses a second one of an entity id, by insert or by update; changes and removes once', async () => {
    const { db, appId } = storage();
    const a = `sp_${randomUUID().replace(/-/g, '').slice(0, 24)}`;
    const b = `sp_${randomUUID().replace(/-/g, '').slice(0, 24)}`;
    await add(a, `https://a.example.com/${a}`);
    await add(b, `https://b.example.com/${b}`);
    await expect(add(`sp_${randomUUID().replace(/-/g, '').slice(0, 24)}`, `https://a.example.com/${a}`)).rejects.toBeInstanceOf(DuplicateEntityError);
    await expect(db.transaction((tx) => db.saml.update(appId, b, { entityId: `https://a.example.com/${a}` }, new Date(), tx))).rejects.toBeInstanceOf(DuplicateEntityError);
    expect(await db.transaction((tx) => db.saml.update(appId, b, { name: 'Wiki', nameIdFormat: null, attributes: null }, new Date(), tx))).toBe(true);
    expect(await db.saml.find(appId, b)).toMatchObject({ name: 'Wiki', nameIdFormat: null, attributes: null, entityId: `https://b.example.com/${b}` });
    expect(await db.transaction((tx) => db.saml.remove(appId, b, tx))).toBe(true);
    expect(await db.transaction((tx) => db.saml.remove(appId, b, tx))).toBe(false);
    expect(await db.transaction((tx) => db.saml.update(appId, b, { name: 'x' }, new Date(), tx))).toBe(false);
  });
});
