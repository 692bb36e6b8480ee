import { randomBytes } from 'node:crypto';
import type { SamlConnectionSettings } from '../../src/domain/storage/connections';
import { forEveryEngine, newAccount } from '../helpers/contract';

// The organizations' connections (ConnectionStore) on every engine: kept as written, listed per
// organization and per application, found by a verified domain (never an unverified one), by the
// memberships of an account where required, summarized per application; changed and removed once.

forEveryEngine('connection store', (storage) => {
  const hex = () => randomBytes(12).toString('hex');
  const settings = (entityId: string): SamlConnectionSettings => ({
    type: 'saml', metadata: '<md:EntityDescriptor/>', idp: { entityId, singleSignOn: [], singleLogout: [], certificates: ['MIIB'], wantAuthnRequestsSigned: false }, idpInitiated: false,
  });
  const organization = () => storage().db.transaction(async (tx) => (await storage().db.organizations.insert({
    applicationId: storage().appId, organizationId: `org_${hex()}`, name: 'Acme', slug: `acme-${hex().slice(0, 8)}`, logoUrl: null, metadata: {}, joinByDomain: false, defaultRoles: ['member'],
  }, new Date(), tx))!);
  const connect = (organizationKey: number, required = false) => storage().db.transaction((tx) => storage().db.connections.insert({
    applicationId: storage().appId, organizationKey, publicId: `con_${hex()}`, name: 'Acme Okta', settings: settings(`https://idp/${hex()}`), secretSealed: null, required,
  }, new Date(), tx));

  it('keeps one as written; lists it per organization and per application; finds it by a verified domain only', async () => {
    const { db, appId } = storage();
    const org = await organization();
    const made = await connect(org.id);
    expect(made).toMatchObject({ organizationKey: org.id, name: 'Acme Okta', required: false, secretSealed: null });
    expect(made.settings).toEqual(settings((made.settings as SamlConnectionSettings).idp.entityId));
    expect((await db.connections.listOf(org.id)).map((c) => c.publicId)).toEqual([made.publicId]);
    expect((await db.connections.listOfApplication(appId, 1000)).map((c) => [c.connection.publicId, c.organizationId])).toContainEqual([made.publicId, org.organizationId]);
    const domain = `${hex().slice(0, 8)}.example`;
    await db.transaction((tx) => db.organizations.insertDomain(org, domain, null, false, new Date(), tx));
    expect(await db.connections.findByDomain(appId, domain)).toEqual([]);
    await db.transaction((tx) => db.organizations.verifyDomain(org.id, domain, 'operator', new Date(), tx));
    expect((await db.connections.findByDomain(appId, domain)).map((c) => c.connection.publicId)).toEqual([made.publicId]);
    expect(await db.connections.findByDomain(appId + 1_000_000, domain)).toEqual([]);
  });

  it('finds the required connections of an account\'s organizations; summarizes the application; changes and removes once', async () => {
    const { db, appId } = storage();
    const org = await organization();
    const account = await newAccount(storage());
    await db.transaction((tx) => db.organizations.insertMember(org, account.id, ['member'], 'api', new Date(), tx));
    const optional = await connect(org.id);
    expect(await db.connections.findRequired(appId, account.id)).toEqual([]);
    expect((await db.connections.summary(appId)).connections).toBe(true);
    expect(await db.transaction((tx) => db.connections.update(appId, optional.publicId, { required: true, name: 'Renamed' }, new Date(), tx))).toBe(true);
    expect((await db.connections.findRequired(appId, account.id)).map((c) => [c.connection.publicId, c.connection.name, c.organizationId])).toEqual([[optional.publicId, 'Renamed', org.organizationId]]);
    expect(await db.connections.summary(appId)).toEqual({ connections: true, required: true });
    expect(await db.transaction((tx) => db.connections.remove(appId, optional.publicId, tx))).toBe(true);
    expect(await db.transaction((tx) => db.connections.remove(appId, optional.publicId, tx))).toBe(false);
    expect(await db.connections.findRequired(appId, account.id)).toEqual([]);
  });
});
