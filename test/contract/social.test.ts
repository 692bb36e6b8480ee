import { randomUUID } from 'node:crypto';
import { IdentityTakenError } from '../../src/domain/storage/social';
import { forEveryEngine } from '../helpers/contract';

// The social store's contract (SocialStore): providers one per name; an identity linked to one
// record of the application at most (one winner among 20 concurrent links), read per record in
// linking order, unlinked once.

forEveryEngine('social store', (storage) => {
  const newUser = () => storage().db.transaction((tx) => storage().db.records.insert({
    applicationId: storage().appId, typeName: 'user', uuid: randomUUID(), email: `${randomUUID()}@example.com`, username: null,
    passwordHash: null, emailVerified: null, attributes: {},
  }, new Date(), tx));
  const link = (entityId: number, identifier: string, i = 0) => storage().on(i).transaction((tx) => storage().on(i).social.profiles.insert({
    applicationId: storage().appId, entityId, provider: 'acme', identifier, data: { identifier },
  }, new Date(), tx));

  it('a provider per name: listed by name, found, removed once', async () => {
    const { db, appId } = storage();
    const provider = (name: string) => ({ applicationId: appId, name, kind: 'oidc' as const, issuer: 'https://id.example', clientId: 'c', secretSealed: 's', scopes: ['openid'] });
    expect(await db.transaction((tx) => db.social.providers.insert(provider('zeta'), new Date(), tx))).toBe(true);
    expect(await db.transaction((tx) => db.social.providers.insert(provider('alpha'), new Date(), tx))).toBe(true);
    expect(await db.transaction((tx) => db.social.providers.insert(provider('alpha'), new Date(), tx))).toBe(false);
    expect((await db.social.providers.list(appId)).map((p) => p.name)).toEqual(['alpha', 'zeta']);
    expect(await db.social.providers.find(appId, 'zeta')).toMatchObject({ name: 'zeta', scopes: ['openid'], secretSealed: 's' });
    expect(await db.transaction((tx) => db.social.providers.remove(appId, 'zeta', tx))).toBe(true);
    expect(await db.transaction((tx) => db.social.providers.remove(appId, 'zeta', tx))).toBe(false);
  });

  it('links identities in order, finds them by record and by identifier, and unlinks once', async () => {
    const { db, appId } = storage();
    const user = await newUser();
    const [first, second] = [`https://id.example/${randomUUID()}`, `https://id.example/${randomUUID()}`];
    await link(user.id, first);
    await link(user.id, second);
    expect((await db.social.profiles.forEntity(appId, user.id)).map((p) => p.identifier)).toEqual([first, second]);
    expect((await db.social.profiles.forEntities(appId, [user.id])).get(user.id)).toHaveLength(2);
    expect(await db.social.profiles.byIdentifier(appId, first)).toMatchObject({ entityId: user.id, provider: 'acme', data: { identifier: first } });
    expect(await db.social.profiles.byIdentifier(appId + 1000, first)).toBeUndefined();
    expect(await db.transaction((tx) => db.social.profiles.remove(appId, user.id, first, tx))).toBe(true);
    expect(await db.transaction((tx) => db.social.profiles.remove(appId, user.id, first, tx))).toBe(false);
  });

  it('of 20 concurrent links of one identity to 20 records, one wins; the others are IdentityTakenError', async () => {
    const users = await Promise.all(Array.from({ length: 20 }, () => newUser()));
    const identifier = `https://id.example/${randomUUID()}`;
    const outcomes = await Promise.allSettled(users.map((u, i) => link(u.id, identifier, i)));
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
    for (const o of outcomes.filter((x): x is PromiseRejectedResult => x.status === 'rejected')) expect(o.reason).toBeInstanceOf(IdentityTakenError);
  });
});
