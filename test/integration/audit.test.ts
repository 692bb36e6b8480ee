import request from 'supertest';
import { basic, startTestApp, type TestApp } from '../helpers/backend';
import { listAudit } from '../../src/usecases/audit/list-audit';
import { disableUser } from '../../src/usecases/operators/disable-user';
import { deleteUser } from '../../src/usecases/operators/delete-user';
import { operatorActing } from '../../src/usecases/operators/deps';

// docs/audit.md: every change a client or an operator makes is kept, in the change's own
// transaction, and read back through /audit/list (owner only) and `gatehouse audit`.

let t: TestApp;
let owner: string;
let ownerId: string;

beforeAll(async () => {
  t = await startTestApp();
  ownerId = t.local.clients.owner.client_id;
  owner = basic(ownerId, t.local.clients.owner.client_secret);
});
afterAll(() => t.close());

const call = (path: string, params: Record<string, string> = {}, auth = owner) =>
  request(t.app).post(path).set('Authorization', auth).type('form').send(params);

interface Entry { id: string; type: string; actor: Record<string, unknown>; subject: { kind: string; id: string }; data: Record<string, unknown>; request_id: string | null; address: string | null; occurred_at: string }
const audit = async (params: Record<string, string> = {}) => {
  const res = await call('/audit/list', params);
  expect(res.body.stat).toBe('ok');
  return res.body as { results: Entry[]; next: string | null };
};

describe('/audit/list', () => {
  it("keeps what an owner client changed, newest first, with who, from where and in which request, never a secret or a value", async () => {
    const added = await call('/clients/add', { description: 'audited app', features: '["direct_access"]' });
    const reset = await call('/clients/reset_secret', { for_client_id: added.body.client_id });
    await call('/settings/set', { for_client_id: added.body.client_id, key: 'verify_email_url', value: 'https://app.example/verify' });
    const created = await call('/entity.create', { type_name: 'user', attributes: JSON.stringify({ email: 'audited@example.com', givenName: 'Secretly', password: 'correct horse battery' }) });
    const updated = await call('/entity.update', { type_name: 'user', id: String(created.body.id), attributes: JSON.stringify({ familyName: 'Hidden-value' }) });
    expect(updated.body.stat).toBe('ok');

    const { results } = await audit({ max_results: '5' });
    expect(results.map((e) => e.type)).toEqual(['record.updated', 'account.registered', 'record.created', 'setting.changed', 'client.secret_reset']);
    const [update, , create, setting, secret] = results;
    expect(update).toMatchObject({
      actor: { kind: 'client', client_id: ownerId }, subject: { kind: 'record', id: String(created.body.id) }, data: { attributes: ['familyName'] },
      request_id: updated.headers['x-request-id'], address: expect.stringMatching(/127\.0\.0\.1|::1/),
    });
    expect(create.data.attributes).toEqual(expect.arrayContaining(['email', 'givenName', 'password']));
    expect(setting).toMatchObject({ subject: { kind: 'setting', id: 'verify_email_url' }, data: { key: 'verify_email_url', scope: 'client', client: added.body.client_id, removed: false } });
    expect(secret).toMatchObject({ subject: { kind: 'client', id: added.body.client_id }, data: {} });
    expect(update.occurred_at).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{6} \+0000$/);
    // names only: no value, no secret, no password, no address of the record
    const text = JSON.stringify(results);
    for (const hidden of [reset.body.new_secret, added.body.client_secret, 'correct horse battery', 'Hidden-value', 'Secretly', 'audited@example.com', 'https://app.example']) {
      expect(text).not.toContain(hidden);
    }
  });

  it('leaves out what people do with their own account (sign-in, profile edit): that is history, not audit', async () => {
    const before = (await audit({ max_results: '1' })).results[0].id;
    const login = t.local.clients.login.client_id;
    const registered = await request(t.app).post('/oauth/register_native_traditional').type('form').send({
      client_id: login, locale: 'en-US', emailAddress: 'self@example.com', newPassword: 'a long enough password', newPasswordConfirm: 'a long enough password',
      firstName: 'Self', lastName: 'Served', displayName: 'self',
    });
    expect(registered.body.stat).toBe('ok');
    const signedIn = await request(t.app).post('/oauth/auth_native_traditional').type('form').send({
      client_id: login, locale: 'en-US', signInEmailAddress: 'self@example.com', currentPassword: 'a long enough password',
    });
    expect(signedIn.body.stat).toBe('ok');
    expect((await audit({ max_results: '1' })).results[0].id).toBe(before);
  });

  it("keeps an operator's actions, and a deleted record's entries stay (the log is apart from records and their erasure)", async () => {
    const { runtime } = t;
    const created = await call('/entity.create', { type_name: 'user', attributes: JSON.stringify({ email: 'gone@example.com' }) });
    const deps = runtime.services;
    const command = { app: (await runtime.db.applications.findByName('local'))!, entityId: created.body.id as number, acting: operatorActing('ada') };
    await disableUser(deps, command);
    expect(await deleteUser(deps, command)).toBe(true);
    const { results } = await audit({ subject: `record:${created.body.id}` });
    expect(results.map((e) => [e.type, e.actor])).toEqual([
      ['record.deleted', { kind: 'operator', name: 'ada' }],
      ['account.disabled', { kind: 'operator', name: 'ada' }],
      ['account.registered', { kind: 'client', client_id: ownerId }],
      ['record.created', { kind: 'client', client_id: ownerId }],
    ]);
    expect(results[0]).toMatchObject({ request_id: null, address: null });
  });

  it('filters by type (or a family of types), actor, subject and time, and pages with before/next', async () => {
    for (const n of [1, 2, 3]) await call('/clients/add', { description: `paged ${n}` });
    const clients = await audit({ type: 'client.created', max_results: '2' });
    expect(clients.results).toHaveLength(2);
    expect(clients.results.every((e) => e.type === 'client.created')).toBe(true);
    expect(clients.next).toBe(clients.results[1].id);
    const second = await audit({ type: 'client.created', max_results: '2', before: clients.next! });
    expect(Number(second.results[0].id)).toBeLessThan(Number(clients.results[1].id));
    expect(second.results.map((e) => e.id)).not.toContain(clients.results[0].id);

    const family = await audit({ type: 'client.', max_results: '1000' });
    expect(new Set(family.results.map((e) => e.type))).toEqual(new Set(['client.created', 'client.secret_reset']));
    expect(family.next).toBeNull();
    const byOperator = await audit({ actor: 'operator:ada' });
    expect(byOperator.results.length).toBeGreaterThanOrEqual(2);
    expect(byOperator.results.every((e) => e.actor.name === 'ada')).toBe(true);
    expect((await audit({ actor: `client:${ownerId}`, type: 'record.deleted' })).results).toEqual([]);

    const future = new Date(Date.now() + 60_000).toISOString();
    expect((await audit({ since: future })).results).toEqual([]);
    expect((await audit({ until: '2000-01-01T00:00:00Z' })).results).toEqual([]);
    expect((await audit({ since: '2000-01-01T00:00:00Z', until: future, max_results: '1' })).results).toHaveLength(1);
  });

  it.each([
    ['type', 'record.exploded', 'is not an event type'],
    ['type', 'nothing.', 'is not an event type'],
    ['actor', 'robot:1', 'must be client, operator, account, scim or system'],
    ['actor', 'system:x', 'must be client, operator, account, scim or system'],
    ['subject', 'record', 'must be kind:id'],
    ['subject', 'planet:3', 'must be kind:id'],
    ['since', 'yesterday', 'ISO 8601'],
    ['until', '2026-11-25T10:00:00', 'ISO 8601'],
    ['max_results', '0', 'from 1 to 1000'],
    ['max_results', '1001', 'from 1 to 1000'],
    ['before', 'abc', 'the `next` of a previous page'],
  ])('%s=%s is refused naming the parameter', async (name, value, message) => {
    const res = await call('/audit/list', { [name]: value });
    expect(res.body).toMatchObject({ stat: 'error', code: 200, error: 'invalid_argument', argument_name: name, request_id: expect.any(String) });
    expect(res.body.error_description).toContain(message);
  });

  it('refuses since after until, and every client but an owner', async () => {
    const crossed = await call('/audit/list', { since: '2026-11-25T10:00:00Z', until: '2026-11-25T09:00:00Z' });
    expect(crossed.body).toMatchObject({ code: 200, argument_name: 'until' });
    const login = t.local.clients.login;
    const denied = await call('/audit/list', {}, basic(login.client_id, login.client_secret));
    expect(denied.body).toMatchObject({ stat: 'error', code: 403, error: 'permission_error' });
    const anonymous = await request(t.app).post('/audit/list').type('form').send({});
    expect(anonymous.body).toMatchObject({ stat: 'error' });
    expect(anonymous.body.results).toBeUndefined();
  });
});

describe('the audit use case', () => {
  it('pages a listing directly: at most the limit, `next` only when there is more', async () => {
    const app = (await t.runtime.db.applications.findByName('local'))!;
    const page = await listAudit({ audit: t.runtime.db.audit }, { applicationId: app.id, limit: 1 });
    expect(page.entries).toHaveLength(1);
    expect(page.next).toBe(page.entries[0].id);
    const none = await listAudit({ audit: t.runtime.db.audit }, { applicationId: app.id + 1000, limit: 10 });
    expect(none).toEqual({ entries: [] });
  });
});
