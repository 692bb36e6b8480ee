import { randomUUID } from 'node:crypto';
import type { Acting } from '../../src/domain/events';
import { Refusal } from '../../src/domain/refusal';
import type { Application } from '../../src/domain/storage/applications';
import { addConnection, listConnections, removeConnection } from '../../src/usecases/organizations/connections';
import { addMember } from '../../src/usecases/organizations/members';
import { createOrganization } from '../../src/usecases/organizations/organizations';
import { addServiceProvider, removeServiceProvider, updateServiceProvider } from '../../src/usecases/saml/service-providers';
import { receiveAuthnRequest, SamlRefusal } from '../../src/usecases/saml/single-sign-on';
import { refuseWhereConnectionRequired } from '../../src/usecases/sso/discovery';
import { startTestApp, type TestApp } from '../helpers/backend';
import { asOwner } from '../helpers/usecases';

// Enterprise sign-in's use cases called directly: service providers and connections, each change
// one unit of work with its event; who may change a connection; what a request refused says; a
// required connection refusing other sign-ins.

let t: TestApp;
let app: Application;
beforeAll(async () => {
  t = await startTestApp();
  app = (await t.runtime.db.applications.findByName('local'))!;
});
afterAll(() => t.close());

const SP = (entityId: string) => '<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="' + entityId + '">'
  + '<md:SPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">'
  + '<md:AssertionConsumerService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="https://sp.example.com/acs" index="0"/>'
  + '</md:SPSSODescriptor></md:EntityDescriptor>';
const lastTypes = async (n: number) => (await t.runtime.db.events.latest(app.id, n)).map((e) => e.type);
const ctx = () => ({ origin: {}, app, clientAddress: '127.0.0.1', services: t.runtime.services });

describe('service providers', () => {
  it('added, changed and removed, each an event; a request of an entity not registered is refused as SamlRefusal', async () => {
    const acting = asOwner(t);
    const entityId = `https://sp.example.com/${randomUUID()}`;
    const added = await addServiceProvider(t.runtime.services, { app, acting, metadata: SP(entityId), nameIdFormat: 'email' });
    expect(added).toMatchObject({ entityId, nameIdFormat: 'email', assertionConsumers: ['https://sp.example.com/acs'] });
    expect((await updateServiceProvider(t.runtime.services, { app, acting, id: added.id, attributes: '{"mail":"email"}' })).attributes).toEqual({ mail: 'email' });
    await removeServiceProvider(t.runtime.services, { app, acting, id: added.id });
    expect(await lastTypes(3)).toEqual(['saml.service_provider_removed', 'saml.service_provider_updated', 'saml.service_provider_added']);
    const unsigned = Buffer.from(`<samlp:AuthnRequest xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="_a1" Version="2.0" IssueInstant="${new Date().toISOString().slice(0, 19)}Z"><saml:Issuer>${entityId}</saml:Issuer></samlp:AuthnRequest>`).toString('base64');
    await expect(receiveAuthnRequest(ctx(), { binding: 'post', message: unsigned })).rejects.toBeInstanceOf(SamlRefusal);
  });
});

describe('connections', () => {
  it('an owner or the application changes them, a member who is not an owner is refused; a required one refuses its members\' other sign-ins', async () => {
    const ownerActing = asOwner(t);
    const org = await createOrganization(t.runtime.services, { app, acting: ownerActing, fields: { name: 'Use case org', slug: `uc-${randomUUID().slice(0, 8)}` } });
    const member = await t.runtime.db.transaction((tx) => t.runtime.db.records.insert({
      applicationId: app.id, typeName: 'user', uuid: randomUUID(), email: `${randomUUID()}@example.com`, username: null, passwordHash: null, emailVerified: null, attributes: {},
    }, new Date(), tx));
    await addMember(t.runtime.services, { app, acting: ownerActing, organizationId: org.organizationId, entityId: member.id, roles: ['member'] });
    const asMember: Acting = { actor: { kind: 'account', accountId: member.id }, origin: {} };
    const oidc = { type: 'oidc', issuer: 'https://login.example.com', clientId: 'c', clientSecret: 's', required: true };
    await expect(addConnection(t.runtime.services, { app, acting: asMember, organizationId: org.organizationId, ...oidc })).rejects.toMatchObject({ reason: 'forbidden' });
    const added = await addConnection(t.runtime.services, { app, acting: ownerActing, organizationId: org.organizationId, ...oidc });
    expect(added).toMatchObject({ type: 'oidc', required: true, redirectUri: expect.stringMatching(/\/sso\/con_[0-9a-f]{24}\/callback$/) });
    expect(JSON.stringify(await listConnections(t.runtime.services, { app, acting: asMember, organizationId: org.organizationId }))).not.toContain('"s"');
    await expect(refuseWhereConnectionRequired(t.runtime.services, app, member.id)).rejects.toBeInstanceOf(Refusal);
    await removeConnection(t.runtime.services, { app, acting: ownerActing, organizationId: org.organizationId, connectionId: added.id });
    await expect(refuseWhereConnectionRequired(t.runtime.services, app, member.id)).resolves.toBeUndefined();
    expect((await lastTypes(2))).toEqual(['organization.connection_removed', 'organization.connection_added']);
  });
});
