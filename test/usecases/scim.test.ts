import { randomUUID } from 'node:crypto';
import type { Acting } from '../../src/domain/events';
import type { StoredOrganization } from '../../src/domain/storage/organizations';
import { addDomain } from '../../src/usecases/organizations/domains';
import { createOrganization } from '../../src/usecases/organizations/organizations';
import { ScimError, type ScimCall } from '../../src/usecases/scim/common';
import { createGroup, patchGroup } from '../../src/usecases/scim/groups';
import { configureScim, createScimToken, scimCaller } from '../../src/usecases/scim/tokens';
import { createUser, deleteUser, listUsers, patchUser } from '../../src/usecases/scim/users';
import { asOwner, failingWork, localApp } from '../helpers/usecases';

// SCIM's use cases called directly: each write one unit of work with its events (the token the
// actor), nothing written when its events cannot be; a token reaches its organization only.

const local = localApp();

const PATCH = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

async function organization(): Promise<{ org: StoredOrganization; domain: string; call: ScimCall; token: string }> {
  const acting = asOwner(local.t);
  const domain = `uc-${randomUUID().slice(0, 8)}.example`;
  const made = await createOrganization(local.t.runtime.services, { app: local.app, acting, fields: { name: 'SCIM org', slug: domain.replace(/\./g, '-') } });
  await addDomain(local.t.runtime.services, { app: local.app, acting, organizationId: made.organizationId, domain, verified: true });
  const { token } = await createScimToken(local.t.runtime.services, { app: local.app, acting, organizationId: made.organizationId });
  const caller = await scimCaller(local.t.runtime.services, { app: local.app, token });
  const scimActing: Acting = { actor: { kind: 'scim', tokenId: caller.tokenId }, origin: { requestId: 'use-case-test' } };
  return { org: caller.organization, domain, token, call: { app: local.app, organization: caller.organization, acting: scimActing, base: 'https://local.example/scim/v2' } };
}

const user = (email: string) => ({ schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName: email, emails: [{ value: email, primary: true }] });

it('provisioning is one unit of work: the account, its membership and its events with the token as actor', async () => {
  const { call, domain } = await organization();
  const made = await createUser(local.t.runtime.services, call, user(`ada@${domain}`));
  const events = await local.t.runtime.db.events.latest(local.app.id, 5);
  expect(events.map((e) => e.type)).toEqual(['organization.member_added', 'scim.user_provisioned', 'account.registered', 'record.created', 'scim.token_created']);
  expect(events.slice(0, 4).every((e) => e.actor.kind === 'scim' && e.actor.tokenId === (call.acting.actor as { tokenId: string }).tokenId)).toBe(true);
  expect(events[1].data).toEqual({ organization: call.organization.organizationId, resource: made.id, linked: false, active: true });
  const listed = await listUsers(local.t.runtime.services, call, { projection: {} });
  expect(listed.totalResults).toBe(1);
});

it('nothing is written when the events cannot be', async () => {
  const { call, domain } = await organization();
  const broken = failingWork(local.t, 'events');
  await expect(createUser(broken, call, user(`grace@${domain}`))).rejects.toThrow();
  expect((await listUsers(local.t.runtime.services, call, { projection: {} })).totalResults).toBe(0);
  expect(await local.t.runtime.db.records.find(local.app.id, { email: `grace@${domain}` })).toBeUndefined();
});

it('a token reaches its own organization, never another\'s, nor another application\'s', async () => {
  const a = await organization();
  const b = await organization();
  const made = await createUser(local.t.runtime.services, a.call, user(`linus@${a.domain}`));
  await expect(patchUser(local.t.runtime.services, b.call, String(made.id), { schemas: [PATCH], Operations: [{ op: 'replace', path: 'active', value: false }] }))
    .rejects.toMatchObject({ status: 404 });
  await expect(deleteUser(local.t.runtime.services, b.call, String(made.id))).rejects.toBeInstanceOf(ScimError);
  // an address at the other organization's domain is not this directory's to vouch for
  await expect(createUser(local.t.runtime.services, b.call, user(`someone@${a.domain}`))).rejects.toMatchObject({ status: 400, scimType: 'invalidValue' });
  const other = { ...local.app, id: local.app.id + 100_000 };
  await expect(scimCaller(local.t.runtime.services, { app: other, token: a.token })).rejects.toMatchObject({ status: 401 });
});

it('a group mapped to a role gives it to its members, and takes it back when they leave', async () => {
  const { call, domain, org } = await organization();
  await configureScim(local.t.runtime.services, { app: local.app, acting: asOwner(local.t), organizationId: org.organizationId, groupRoles: '{"admins":["admin"]}' });
  const ada = await createUser(local.t.runtime.services, call, user(`ada@${domain}`));
  const group = await createGroup(local.t.runtime.services, call, { displayName: 'Admins', members: [{ value: ada.id }] });
  const adaKey = (await local.t.runtime.db.records.find(local.app.id, { uuid: String(ada.id) }))!.id;
  expect((await local.t.runtime.db.organizations.findMember(org.id, adaKey))!.roles).toEqual(['admin']);
  await patchGroup(local.t.runtime.services, call, String(group.id), { schemas: [PATCH], Operations: [{ op: 'remove', path: `members[value eq "${String(ada.id)}"]` }] });
  expect((await local.t.runtime.db.organizations.findMember(org.id, adaKey))!.roles).toEqual(['member']);
  expect((await local.t.runtime.db.events.latest(local.app.id, 2)).map((e) => e.type)).toEqual(['scim.group_updated', 'organization.member_roles_changed']);
});
