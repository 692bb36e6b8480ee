import { randomUUID } from 'node:crypto';
import type { Acting } from '../../src/domain/events';
import type { Application } from '../../src/domain/storage/applications';
import { addApi, apiOfResource, grantApiToClient, listApis, removeApi, updateApi } from '../../src/usecases/apis/apis';
import { accountRoles, apiPermissionsOf, changeAccountRoles, defineAppRole, listAppRoles, removeAppRole } from '../../src/usecases/apis/roles';
import { startTestApp, type TestApp } from '../helpers/backend';
import { asOwner } from '../helpers/usecases';

// The APIs' use cases called directly: each change one unit of work with its event; what the
// provider reads of one; parallel adds never pass the limit's count twice for one identifier.

let t: TestApp;
let app: Application;
let acting: Acting;
beforeAll(async () => {
  t = await startTestApp();
  app = (await t.runtime.db.applications.findByName('local'))!;
  acting = asOwner(t);
});
afterAll(() => t.close());

const lastTypes = async (n: number) => (await t.runtime.db.events.latest(app.id, n)).map((e) => e.type);

it('adds, changes, grants, removes an API, each an event; the provider finds it by its exact identifier only while it exists', async () => {
  const services = t.runtime.services;
  const identifier = `https://billing.example.com/${Date.now()}`;
  const added = await addApi(services, { app, acting, identifier, scopes: 'read, write read', tokenLifetime: '900' });
  expect(added).toMatchObject({ identifier, name: identifier, scopes: ['read', 'write'], tokenSeconds: 900, clientScopes: {} });
  expect(await apiOfResource(services, { app, identifier })).toMatchObject({ id: added.id });
  expect(await apiOfResource(services, { app, identifier: `${identifier}/` })).toBeUndefined();
  expect(await apiOfResource(services, { app, identifier: 'not a uri' })).toBeUndefined();

  const changed = await updateApi(services, { app, acting, id: added.id, tokenLifetime: '' });
  expect(changed).toMatchObject({ tokenSeconds: 600 });
  // (kept as the default, not as 600: a later default applies to it)
  expect((await t.runtime.db.apis.find(app.id, added.id))?.tokenSeconds).toBeNull();
  const granted = await grantApiToClient(services, { app, acting, id: added.id, forClientId: t.local.clients.login.client_id, scopes: 'read' });
  expect(granted.clientScopes).toEqual({ [t.local.clients.login.client_id]: ['read'] });
  await removeApi(services, { app, acting, id: added.id });
  expect(await apiOfResource(services, { app, identifier })).toBeUndefined();
  expect(await lastTypes(4)).toEqual(['api.removed', 'api.client_scopes_granted', 'api.updated', 'api.added']);
  await expect(removeApi(services, { app, acting, id: added.id })).rejects.toMatchObject({ reason: 'invalid', detail: { field: 'id' } });
});

it('of two parallel adds of one identifier, one is refused as taken', async () => {
  const identifier = `https://race.example.com/${Date.now()}`;
  const results = await Promise.allSettled([0, 1].map(() => addApi(t.runtime.services, { app, acting, identifier })));
  expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
  expect(results.find((r) => r.status === 'rejected')).toMatchObject({ reason: { detail: { field: 'identifier' } } });
  expect((await listApis(t.runtime.services, { app })).filter((x) => x.identifier === identifier)).toHaveLength(1);
});

it('roles: defined with an API\'s scopes, given to an account and taken, each an event; the permissions an account holds on an API', async () => {
  const services = t.runtime.services;
  const identifier = `https://roles.example.com/${Date.now()}`;
  const api = await addApi(services, { app, acting, identifier, scopes: 'read write refund', rbac: 'true' });
  const name = `support_${Date.now().toString(36)}`;
  expect(await defineAppRole(services, { app, acting, name, permissions: JSON.stringify({ [identifier]: ['write', 'read', 'read'] }) }))
    .toEqual({ name, description: '', permissions: { [identifier]: ['read', 'write'] } });
  const record = await t.runtime.db.transaction((tx) => t.runtime.db.records.insert({
    applicationId: app.id, typeName: 'user', uuid: randomUUID(), email: `${randomUUID()}@example.com`, username: null, passwordHash: null, emailVerified: null, attributes: {},
  }, new Date(), tx));
  expect(await changeAccountRoles(services, { app, acting, entityId: record.id, add: [name] })).toEqual([expect.objectContaining({ name })]);
  // given again: nothing changes, no event
  await changeAccountRoles(services, { app, acting, entityId: record.id, add: [name] });
  expect(await apiPermissionsOf(services, { app, entityId: record.id, apiId: api.id, scopes: ['read', 'refund'] })).toEqual(['read']);
  expect((await accountRoles(services, { app, entityId: record.id })).map((r) => r.name)).toEqual([name]);
  expect(await changeAccountRoles(services, { app, acting, entityId: record.id, take: [name] })).toEqual([]);
  expect(await lastTypes(3)).toEqual(['account.roles_changed', 'account.roles_changed', 'role.defined']);
  expect((await t.runtime.db.events.latest(app.id, 1))[0].data).toEqual({ added: [], removed: [name] });
  await expect(changeAccountRoles(services, { app, acting, entityId: record.id, add: ['nobody_here'] })).rejects.toMatchObject({ detail: { field: 'roles' } });
  expect(await removeAppRole(services, { app, acting, name })).toBe(0);
  expect((await listAppRoles(services, { app })).some((r) => r.name === name)).toBe(false);
});
