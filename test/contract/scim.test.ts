import { randomBytes, randomUUID } from 'node:crypto';
import { forEveryEngine, newAccount } from '../helpers/contract';

// SCIM provisioning's rows (ScimStore) on every engine: a token found by its digest until revoked;
// users unique by userName regardless of case, found by each indexed lookup, changed with a new
// version; groups unique by name, with members added and removed once; the group mapping kept;
// an account's deletion takes its provisioned user and memberships with it.

forEveryEngine('SCIM store', (storage) => {
  const hex = () => randomBytes(12).toString('hex');
  const organization = () => storage().db.transaction(async (tx) => (await storage().db.organizations.insert({
    applicationId: storage().appId, organizationId: `org_${hex()}`, name: 'Acme', slug: `acme-${hex().slice(0, 8)}`, logoUrl: null, metadata: {}, joinByDomain: false, defaultRoles: ['member'],
  }, new Date(), tx))!);
  const provision = async (organizationKey: number, userName: string, extra: { externalId?: string; email?: string } = {}) => {
    const account = await newAccount(storage());
    return storage().db.transaction((tx) => storage().db.scim.insertUser({
      applicationId: storage().appId, organizationKey, entityId: account.id, resourceId: randomUUID(), userName, externalId: extra.externalId ?? null,
      emailKey: extra.email ?? null, active: true, data: { userName, name: { givenName: 'Ada' } }, owned: true, suspendedRoles: null,
    }, extra.email ? [extra.email, `other-${extra.email}`] : [], new Date(), tx));
  };

  it('finds a token by its digest until it is revoked, with its organization', async () => {
    const { db, appId } = storage();
    const org = await organization();
    const hash = hex() + hex();
    const token = await db.transaction((tx) => db.scim.insertToken({ applicationId: appId, organizationKey: org.id, publicId: `scim_${hex()}`, description: 'Okta', tokenHash: hash, createdBy: 'client:x' }, new Date(), tx));
    expect(await db.scim.findToken(hash)).toMatchObject({ token: { publicId: token.publicId, lastUsedAt: null, revokedAt: null }, organizationId: org.organizationId });
    await db.scim.touchTokenAlone(token.id, new Date());
    expect((await db.scim.listTokens(org.id))[0].lastUsedAt).toBeInstanceOf(Date);
    expect(await db.scim.countLiveTokens(org.id)).toBe(1);
    expect(await db.transaction((tx) => db.scim.revokeToken(token, new Date(), tx))).toBe(true);
    expect(await db.scim.countLiveTokens(org.id)).toBe(0);
    expect(await db.transaction((tx) => db.scim.revokeToken(token, new Date(), tx))).toBe(false);
    expect(await db.scim.findToken(hash)).toBeUndefined();
  });

  it('keeps users unique by userName regardless of case; finds them by each lookup; a change is a new version', async () => {
    const { db } = storage();
    const org = await organization();
    const ada = (await provision(org.id, 'Ada.Lovelace', { externalId: 'ext-1', email: 'ada@acme.example' }))!;
    expect(ada).toMatchObject({ userName: 'Ada.Lovelace', version: 1, active: true, owned: true, data: { userName: 'Ada.Lovelace', name: { givenName: 'Ada' } } });
    expect(await provision(org.id, 'ada.lovelace')).toBeUndefined();
    // another organization has its own names
    expect(await provision((await organization()).id, 'ada.lovelace')).toBeDefined();
    for (const lookup of [{ userName: 'ADA.lovelace' }, { externalId: 'ext-1' }, { email: 'ADA@acme.example' }, { email: 'Other-ada@acme.example' }, { resourceId: ada.resourceId }]) {
      expect((await db.scim.findUser(org.id, lookup)).map((u) => u.id)).toEqual([ada.id]);
    }
    expect(await db.scim.findUser(org.id, { externalId: 'EXT-1' })).toEqual([]);
    const grace = (await provision(org.id, 'grace'))!;
    expect(await db.transaction((tx) => db.scim.updateUser(grace, { userName: 'ADA.LOVELACE' }, new Date(), tx))).toBe(false);
    expect(await db.transaction((tx) => db.scim.updateUser(grace, { active: false, suspendedRoles: ['admin'], data: { userName: 'grace', title: 'RADM' } }, new Date(), tx, ['grace@navy.example']))).toBe(true);
    expect((await db.scim.findUser(org.id, { email: 'GRACE@navy.example' })).map((u) => u.id)).toEqual([grace.id]);
    expect((await db.scim.findUsersByResourceIds(org.id, [grace.resourceId, ada.resourceId, randomUUID()])).map((u) => u.id)).toEqual([ada.id, grace.id]);
    expect((await db.scim.findUsersByKeys([grace.id])).map((u) => u.resourceId)).toEqual([grace.resourceId]);
    expect((await db.scim.findUserOfAccount(org.id, grace.entityId))).toMatchObject({ active: false, suspendedRoles: ['admin'], version: 2, data: { title: 'RADM' } });
    expect((await db.scim.listUsers(org.id, 0, 10)).map((u) => u.id)).toEqual([ada.id, grace.id]);
    expect((await db.scim.listUsers(org.id, ada.id, 10)).map((u) => u.id)).toEqual([grace.id]);
    expect(await db.scim.countUsers(org.id)).toBe(2);
  });

  it('keeps groups unique by name; adds and removes members once; lists each user\'s groups; maps groups to roles', async () => {
    const { db, appId } = storage();
    const org = await organization();
    const a = (await provision(org.id, 'a'))!;
    const b = (await provision(org.id, 'b'))!;
    const group = (await db.transaction((tx) => db.scim.insertGroup({ applicationId: appId, organizationKey: org.id, resourceId: randomUUID(), displayName: 'Admins', externalId: null }, new Date(), tx)))!;
    expect(await db.transaction((tx) => db.scim.insertGroup({ applicationId: appId, organizationKey: org.id, resourceId: randomUUID(), displayName: 'ADMINS', externalId: null }, new Date(), tx))).toBeUndefined();
    expect(await db.transaction((tx) => db.scim.addMembers(group.id, [a.id, b.id, a.id], tx))).toEqual([a.id, b.id]);
    expect(await db.transaction((tx) => db.scim.addMembers(group.id, [a.id], tx))).toEqual([]);
    expect((await db.scim.listMembersOf(group.id, 10)).map((m) => m.userName)).toEqual(['a', 'b']);
    expect((await db.scim.countMembersOf([group.id])).get(group.id)).toBe(2);
    expect((await db.scim.listGroupsOfUsers([a.id])).get(a.id)).toEqual([{ groupKey: group.id, resourceId: group.resourceId, displayName: 'Admins' }]);
    expect(await db.transaction((tx) => db.scim.removeMembers(group.id, [b.id, b.id], tx))).toEqual([b.id]);
    expect(await db.transaction((tx) => db.scim.updateGroup(group, { displayName: 'Engineers' }, new Date(), tx))).toBe(true);
    expect((await db.scim.findGroup(org.id, { displayName: 'engineers' }))[0]).toMatchObject({ version: 2 });
    await db.transaction((tx) => db.scim.setGroupRoles(org.id, appId, { Engineers: ['admin'] }, new Date(), tx));
    await db.transaction((tx) => db.scim.setGroupRoles(org.id, appId, { Engineers: ['admin', 'member'] }, new Date(), tx));
    expect(await db.scim.findGroupRoles(org.id)).toEqual({ Engineers: ['admin', 'member'] });
    await db.transaction((tx) => db.scim.removeGroup(group, tx));
    expect(await db.scim.findGroup(org.id, { resourceId: group.resourceId })).toEqual([]);
    expect((await db.scim.listGroupsOfUsers([a.id])).get(a.id)).toBeUndefined();
  });

  it('an account deleted takes its provisioned user and its group memberships with it', async () => {
    const { db, appId } = storage();
    const org = await organization();
    const a = (await provision(org.id, 'gone'))!;
    const group = (await db.transaction((tx) => db.scim.insertGroup({ applicationId: appId, organizationKey: org.id, resourceId: randomUUID(), displayName: 'G', externalId: null }, new Date(), tx)))!;
    await db.transaction((tx) => db.scim.addMembers(group.id, [a.id], tx));
    const record = (await db.records.find(appId, { id: a.entityId }))!;
    await db.transaction((tx) => db.records.remove(record, tx));
    expect(await db.scim.findUser(org.id, { resourceId: a.resourceId })).toEqual([]);
    expect(await db.scim.listMembersOf(group.id, 10)).toEqual([]);
  });
});
