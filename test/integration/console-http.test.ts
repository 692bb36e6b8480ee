import fs from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import { buildConsole } from '../../src/console/console';
import { findFlowDirectories, loadFlowDirectory } from '../../src/domain/flow-definition';
import { OPERATOR_ROLE_ATTRIBUTE, operatorRoleOf } from '../../src/domain/operators';
import { flowSource } from '../../src/domain/flow-definition';
import { changesFrom } from '../../src/domain/profile-fields';
import { startBrowserSession } from '../../src/usecases/account/browser-sessions';
import { changeRecord } from '../../src/usecases/records/change-record';
import { sessionOf } from '../../src/domain/session';
import type { Application } from '../../src/domain/storage/applications';
import { parseNewUser } from '../../src/domain/users';
import { createLogger } from '../../src/logger';
import { consoleLoginClient, openConsoleSession } from '../../src/usecases/operators/console';
import { ensureOperatorsApplication } from '../../src/usecases/operators/operators';
import { createRecord } from '../../src/usecases/records/create-records';
import { basic, FLOWS, startTestApp, type TestApp } from '../helpers/backend';
import { oathtool } from '../helpers/totp';

// The console's HTTP discipline (docs/console.md#safety), request by request: what a browser
// without a session, another site, a viewer, a form with a control character or too large a body
// get; always a page, never a stack trace or JSON.

const acting = { actor: { kind: 'operator' as const, name: 'test' }, origin: {} };
const URL_ = 'http://console.test';
let t: TestApp;
let ops: Application;
let consoleApp: ReturnType<typeof buildConsole>;
const cookies: Record<string, string> = {};

beforeAll(async () => {
  t = await startTestApp({ env: { CONSOLE_PORT: '3999', CONSOLE_PUBLIC_URL: URL_ } });
  ({ app: ops } = await ensureOperatorsApplication(t.runtime.services, { name: 'operators', flows: () => findFlowDirectories(FLOWS).map(loadFlowDirectory), acting }));
  consoleApp = buildConsole({ services: t.runtime.services, operatorsApp: 'operators', publicUrl: URL_, logger: createLogger('silent') });
  const client = (await consoleLoginClient(t.runtime.services, ops))!;
  for (const role of ['viewer', 'support', 'admin'] as const) {
    const made = await createRecord(t.runtime.services, { app: ops, origin: {}, operator: acting, record: parseNewUser(ops.id, { email: `${role}@ops.example`, [OPERATOR_ROLE_ATTRIBUTE]: role }) });
    const code = await t.runtime.services.work.run((uow) => t.runtime.services.tokens.issue({
      kind: 'authorization_code', app: ops, entityId: made.id, client, redirectUri: `${URL_}/callback`, family: `f-${role}`, seconds: 60,
      extra: { session: sessionOf(['password', 'totp'], new Date()) },
    }, uow.tx));
    const opened = await openConsoleSession({ origin: {}, app: ops, clientAddress: '127.0.0.1', services: t.runtime.services }, { client, code, redirectUri: `${URL_}/callback`, device: '' });
    cookies[role] = `gh_console=${opened.value}`;
  }
});
afterAll(() => t?.close());

/** The form token of a signed-in page (the sign-out form carries it). */
async function tokenOf(cookie: string): Promise<string> {
  const page = await request(consoleApp).get('/apps').set('Cookie', cookie);
  expect(page.status).toBe(200);
  return page.text.match(/name="csrf" value="([^"]+)"/)![1];
}

it('without a session: a page goes to the sign-in, a POST changes nothing and says the session ended', async () => {
  const page = await request(consoleApp).get('/audit?app=local');
  expect([page.status, page.headers.location]).toEqual([303, '/signin?locale=en-US&next=%2Faudit%3Fapp%3Dlocal']);
  const post = await request(consoleApp).post('/apps/local/accounts/1/enable').type('form').send({ confirm: 'yes' });
  expect(post.status).toBe(401);
  expect(post.headers['content-type']).toMatch(/^text\/html/);
  expect(post.text).toContain('Your console session has ended');
});

it('the sign-in goes back only to a path of the console', async () => {
  for (const [next, kept] of [['/audit?app=local', '/audit?app=local'], ['//evil.example', '/'], ['/\\evil.example', '/'], ['https://evil.example', '/']]) {
    const started = await request(consoleApp).get('/signin').query({ next });
    expect(started.status).toBe(303);
    expect(started.headers.location).toMatch(/^http:\/\/operators\.localhost:\d+\/signin\?/);
    const state = String(started.headers['set-cookie']).match(/gh_console_state=([0-9a-f]+)_([A-Za-z0-9_-]*)/)!;
    expect(Buffer.from(state[2], 'base64url').toString()).toBe(kept);
  }
  // a callback with a state this browser did not start opens nothing
  const stray = await request(consoleApp).get('/callback').query({ code: 'x'.repeat(40), state: 'a'.repeat(32) });
  expect(stray.status).toBe(400);
  expect(String(stray.headers['set-cookie'] ?? '')).not.toMatch(/gh_console=[0-9a-f]/);
});

it('a POST from another site, or without the form token, is refused; so is a viewer\'s', async () => {
  const token = await tokenOf(cookies.support);
  const crossSite = await request(consoleApp).post('/apps/local/accounts/1/enable').set('Cookie', cookies.support).set('Sec-Fetch-Site', 'cross-site').type('form').send({ csrf: token, confirm: 'yes' });
  expect(crossSite.status).toBe(403);
  const noToken = await request(consoleApp).post('/apps/local/accounts/1/enable').set('Cookie', cookies.support).type('form').send({ confirm: 'yes' });
  expect(noToken.status).toBe(403);
  const viewer = await request(consoleApp).post('/apps/local/accounts/1/enable').set('Cookie', cookies.viewer).type('form').send({ csrf: await tokenOf(cookies.viewer), confirm: 'yes' });
  expect(viewer.status).toBe(403);
  expect(viewer.text).toContain('Your role does not allow this');
  // support may act on accounts, not administer applications
  const setting = await request(consoleApp).post('/apps/local/settings').set('Cookie', cookies.support).type('form').send({ csrf: token, key: 'brand_color', value: '#000000' });
  expect(setting.status).toBe(403);
});

it('bad input gets a page that says what to do: a control character, too large a form, an unknown account, path or action', async () => {
  const token = await tokenOf(cookies.support);
  const control = await request(consoleApp).post('/apps/local/accounts/1/disable').set('Cookie', cookies.support).type('form').send({ csrf: token, confirm: 'yes', reason: 'a\u0000b' });
  expect([control.status, control.text.includes('characters no field takes')]).toEqual([400, true]);
  const large = await request(consoleApp).post('/apps/local/accounts/1/disable').set('Cookie', cookies.support).type('form').send({ csrf: token, confirm: 'yes', reason: 'x'.repeat(40_000) });
  expect([large.status, large.headers['content-type']]).toEqual([413, expect.stringMatching(/^text\/html/)]);
  expect(large.text).not.toMatch(/at \w+ \(/);
  for (const [path, status] of [['/apps/local/accounts/999999', 404], ['/apps/nowhere/accounts/1', 404], ['/nowhere', 404], ['/apps/local/accounts/abc', 404]] as const) {
    const res = await request(consoleApp).get(path).set('Cookie', cookies.support);
    expect([path, res.status, res.headers['content-type']]).toEqual([path, status, expect.stringMatching(/^text\/html/)]);
  }
  const action = await request(consoleApp).post('/apps/local/accounts/1/promote').set('Cookie', cookies.support).type('form').send({ csrf: token, confirm: 'yes' });
  expect(action.status).toBe(404);
  // (a search's address from before the overview: on to the accounts' page, as it was)
  const moved = await request(consoleApp).get('/').query({ app: 'local', q: "email = 'unclosed" }).set('Cookie', cookies.support);
  expect([moved.status, moved.headers.location]).toEqual([301, '/accounts?app=local&q=email%20%3D%20%27unclosed']);
  const filter = await request(consoleApp).get('/accounts').query({ app: 'local', q: "email = 'unclosed" }).set('Cookie', cookies.support);
  expect([filter.status, filter.text.includes('This filter cannot be used: a string is not closed')]).toEqual([400, true]);
  // every page: no script, no framing, never cached
  expect(filter.headers['content-security-policy']).toMatch(/default-src 'none'/);
  expect(filter.headers['content-security-policy']).not.toMatch(/script-src/);
  expect([filter.headers['x-frame-options'], filter.headers['cache-control']]).toEqual(['DENY', 'no-store']);
});

it('the callback goes back only to a path of the console, whatever the state cookie says', async () => {
  const client = (await consoleLoginClient(t.runtime.services, ops))!;
  const viewer = (await t.runtime.db.records.find(ops.id, { email: 'viewer@ops.example' }))!;
  for (const [next, to] of [['/audit', '/audit'], ['//evil.example/', '/'], ['/\\evil.example', '/']]) {
    const code = await t.runtime.services.work.run((uow) => t.runtime.services.tokens.issue({
      kind: 'authorization_code', app: ops, entityId: viewer.id, client, redirectUri: `${URL_}/callback`, family: `f-${Math.random()}`, seconds: 60,
      extra: { session: sessionOf(['password', 'totp'], new Date()) },
    }, uow.tx));
    const state = 'ab'.repeat(16);
    const back = await request(consoleApp).get('/callback').query({ code, state })
      .set('Cookie', `gh_console_state=${state}_${Buffer.from(next).toString('base64url')}`);
    expect([next, back.status, back.headers.location]).toEqual([next, 303, to]);
  }
});

it('an account page\'s session opens no console; an operator is acted on by admins only; a flow is imported by admins only', async () => {
  const client = (await consoleLoginClient(t.runtime.services, ops))!;
  const viewer = (await t.runtime.db.records.find(ops.id, { email: 'viewer@ops.example' }))!;
  const code = await t.runtime.services.work.run((uow) => t.runtime.services.tokens.issue({
    kind: 'authorization_code', app: ops, entityId: viewer.id, client, redirectUri: `${URL_}/callback`, family: 'f-account-page', seconds: 60,
    extra: { session: sessionOf(['password', 'totp'], new Date()) },
  }, uow.tx));
  const accountPage = await startBrowserSession({ origin: {}, app: ops, clientAddress: '127.0.0.1', services: t.runtime.services }, { client, code, redirectUri: `${URL_}/callback`, device: '' });
  const opened = await request(consoleApp).get('/apps').set('Cookie', `gh_console=${accountPage.value}`);
  expect([opened.status, opened.headers.location]).toEqual([303, '/signin?locale=en-US&next=%2Fapps']);

  const token = await tokenOf(cookies.support);
  const onOperator = await request(consoleApp).post(`/apps/operators/accounts/${viewer.id}/disable`).set('Cookie', cookies.support).type('form').send({ csrf: token, confirm: 'yes' });
  expect(onOperator.status).toBe(403);
  expect((await t.runtime.db.records.find(ops.id, { id: viewer.id }))!.disabled).toBeNull();
  const page = await request(consoleApp).get(`/apps/operators/accounts/${viewer.id}`).set('Cookie', cookies.support);
  expect([page.status, page.text.includes('id="h-actions"')]).toEqual([200, false]);
  const flow = await request(consoleApp).post('/apps/local/flows').set('Cookie', cookies.support).type('form').send({ csrf: token, flow: '{}', translations: '{}' });
  expect(flow.status).toBe(403);
});

it('an operator cannot give itself a role: not with its own access token, not through a form, not from a flow', async () => {
  const viewer = (await t.runtime.db.records.find(ops.id, { email: 'viewer@ops.example' }))!;
  const own = { record: viewer, byUser: true, fresh: true, clientId: null };
  await expect(changeRecord(t.runtime.services, { app: ops, acting, writer: own, kind: 'record.updated', change: (doc) => ({ ...doc, [OPERATOR_ROLE_ATTRIBUTE]: 'admin' }) }))
    .rejects.toMatchObject({ attribute: OPERATOR_ROLE_ATTRIBUTE });
  expect(operatorRoleOf((await t.runtime.db.records.find(ops.id, { id: viewer.id }))!)).toBe('viewer');
  // the application's backend (a client) may
  await changeRecord(t.runtime.services, { app: ops, acting, writer: { ...own, byUser: false, fresh: false }, kind: 'record.updated', change: (doc) => ({ ...doc, givenName: 'Vic' }) });
  const form = { fields: [{ name: 'role', field: { type: 'text', schemaAttribute: OPERATOR_ROLE_ATTRIBUTE } }] } as unknown as Parameters<typeof changesFrom>[0];
  expect(changesFrom(form, { role: 'admin' }).attributes).toEqual({});
  const flow = JSON.parse(fs.readFileSync(path.join(FLOWS, 'standard', 'flow.json'), 'utf8')) as { fields: Record<string, Record<string, unknown>> };
  const [first] = Object.keys(flow.fields);
  flow.fields[first] = { ...flow.fields[first], schemaAttribute: OPERATOR_ROLE_ATTRIBUTE };
  expect(() => flowSource(flow, JSON.parse(fs.readFileSync(path.join(FLOWS, 'standard', 'translations.json'), 'utf8')))).toThrow(/operatorRole is an operator's role/);
});

it('a refused console sign-in spends its code', async () => {
  const client = (await consoleLoginClient(t.runtime.services, ops))!;
  const viewer = (await t.runtime.db.records.find(ops.id, { email: 'viewer@ops.example' }))!;
  const code = await t.runtime.services.work.run((uow) => t.runtime.services.tokens.issue({
    kind: 'authorization_code', app: ops, entityId: viewer.id, client, redirectUri: `${URL_}/callback`, family: 'f-one-factor', seconds: 60,
    extra: { session: sessionOf(['password'], new Date()) },
  }, uow.tx));
  const call = { origin: {}, app: ops, clientAddress: '127.0.0.1', services: t.runtime.services };
  const command = { client, code, redirectUri: `${URL_}/callback`, device: '' };
  await expect(openConsoleSession(call, command)).rejects.toThrow(/two factors/);
  await expect(openConsoleSession(call, command)).rejects.not.toThrow(/two factors/);
});

it('an admin adds and removes an identity provider, its secret never shown back; a support operator may not', async () => {
  const token = await tokenOf(cookies.admin);
  const provider = { csrf: token, name: 'corp', kind: 'oidc', issuer: 'https://login.corp.example', client_id: 'gatehouse', client_secret: 'provider secret 42' };
  const refused = await request(consoleApp).post('/apps/local/providers').set('Cookie', cookies.support).type('form').send({ ...provider, csrf: await tokenOf(cookies.support) });
  expect(refused.status).toBe(403);
  const bad = await request(consoleApp).post('/apps/local/providers').set('Cookie', cookies.admin).type('form').send({ ...provider, issuer: 'not a url' });
  expect([bad.status, bad.text.includes('provider secret 42')]).toEqual([400, false]);
  const added = await request(consoleApp).post('/apps/local/providers').set('Cookie', cookies.admin).type('form').send(provider);
  expect([added.status, added.headers.location]).toEqual([303, '/apps/local?locale=en-US&done=providerAdded#h-providers']);
  const page = await request(consoleApp).get('/apps/local').set('Cookie', cookies.admin);
  expect(page.text).toContain('<code>corp</code> (oidc) <code>https://login.corp.example</code>');
  expect(page.text).not.toContain('provider secret 42');
  const again = await request(consoleApp).post('/apps/local/providers').set('Cookie', cookies.admin).type('form').send(provider);
  expect(again.status).toBe(400);
  const removed = await request(consoleApp).post('/apps/local/providers/remove').set('Cookie', cookies.admin).type('form').send({ csrf: token, name: 'corp', confirm: 'yes' });
  expect(removed.status).toBe(303);
  const local = (await t.runtime.db.applications.findByName('local'))!;
  expect((await t.runtime.db.social.providers.list(local.id)).map((p) => p.name)).not.toContain('corp');
});

it('an admin adds a webhook endpoint (its secret shown once), pings it, disables, enables, rotates, sends again and removes it; a viewer reads, changes nothing', async () => {
  const token = await tokenOf(cookies.admin);
  const post = (path: string, fields: Record<string, string>, who = 'admin') => request(consoleApp).post(path).set('Cookie', cookies[who]).type('form').send({ csrf: token, ...fields });
  const bad = await post('/apps/local/webhooks', { url: 'https://127.0.0.1/hook', events: '*' });
  expect([bad.status, bad.text]).toEqual([400, expect.stringContaining('url: names a loopback')]);
  const added = await post('/apps/local/webhooks', { url: 'https://hooks.example.com/console', events: 'user.created user.erased', description: 'crm' });
  expect(added.status).toBe(200);
  const secret = added.text.match(/<code id="secret">(whsec_[^<]+)<\/code>/)![1];
  const id = added.text.match(/<code>(ep_[0-9a-f]+)<\/code>/)![1];
  const appPage = await request(consoleApp).get('/apps/local').set('Cookie', cookies.viewer);
  expect(appPage.text).toContain('<code>https://hooks.example.com/console</code>');
  expect(appPage.text).not.toContain(secret);
  expect(appPage.text).not.toContain('Add the endpoint');
  const viewer = await request(consoleApp).post(`/apps/local/webhooks/${id}/disable`).set('Cookie', cookies.viewer).type('form').send({ csrf: await tokenOf(cookies.viewer), confirm: 'yes' });
  expect(viewer.status).toBe(403);

  expect((await post(`/apps/local/webhooks/${id}/test`, {})).headers.location).toBe(`/apps/local/webhooks/${id}?locale=en-US&done=webhookTested`);
  await t.runtime.queue.idle?.();
  const endpointPage = await request(consoleApp).get(`/apps/local/webhooks/${id}`).set('Cookie', cookies.viewer);
  expect(endpointPage.status).toBe(200);
  expect(endpointPage.text).toContain('<code>ping</code>');
  expect(endpointPage.text).not.toContain('Send a ping');
  expect((await post(`/apps/local/webhooks/${id}/disable`, {})).status).toBe(400);
  expect((await post(`/apps/local/webhooks/${id}/disable`, { confirm: 'yes' })).headers.location).toContain('done=webhookDisabled');
  expect((await request(consoleApp).get(`/apps/local/webhooks/${id}`).set('Cookie', cookies.admin)).text).toContain('disabled since');
  expect((await post(`/apps/local/webhooks/${id}/enable`, { confirm: 'yes' })).headers.location).toContain('done=webhookEnabled');
  const rotated = await post(`/apps/local/webhooks/${id}/rotate`, { confirm: 'yes' });
  expect(rotated.text).toMatch(/<code id="secret">whsec_/);
  expect(rotated.text).not.toContain(secret);
  expect((await post(`/apps/local/webhooks/${id}/replay`, { since: 'last week' })).status).toBe(400);
  expect((await post(`/apps/local/webhooks/${id}/replay`, { since: '2026-01-01 00:00:00' })).headers.location).toContain('done=webhookRedelivered&count=0');
  // a time copied from a page of the console (written in one piece: non-breaking hyphens and spaces, and its zone)
  const copied = '2026\u201101\u201101\u00a000:00:00\u00a0UTC';
  expect((await post(`/apps/local/webhooks/${id}/replay`, { since: copied })).headers.location).toContain('done=webhookRedelivered&count=0');
  const auditPage = await request(consoleApp).get(`/audit?app=local&since=${encodeURIComponent(copied)}&until=2099-01-01`).set('Cookie', cookies.admin);
  expect(auditPage.status).toBe(200);
  expect(auditPage.text).toContain('webhook.secret_rotated');
  expect((await post(`/apps/local/webhooks/${id}/resend`, { delivery: '99999999' })).status).toBe(400);
  expect((await post(`/apps/local/webhooks/${id}/explode`, {})).status).toBe(404);
  expect((await request(consoleApp).get('/apps/local/webhooks/ep_nope').set('Cookie', cookies.admin)).status).toBe(404);
  expect((await post(`/apps/local/webhooks/${id}/remove`, { confirm: 'yes' })).headers.location).toBe('/apps/local?locale=en-US#h-webhooks');
  const local = (await t.runtime.db.applications.findByName('local'))!;
  expect((await t.runtime.db.webhooks.list(local.id)).map((e) => e.endpointId)).not.toContain(id);
  const audit = (await t.runtime.db.events.latest(local.id, 9)).filter((e) => e.type.startsWith('webhook.')).map((e) => [e.type, e.actor.kind]);
  expect(audit.slice(0, 7)).toEqual([['webhook.removed', 'operator'], ['webhook.redelivered', 'operator'], ['webhook.redelivered', 'operator'], ['webhook.secret_rotated', 'operator'],
    ['webhook.enabled', 'operator'], ['webhook.disabled', 'operator'], ['webhook.tested', 'operator']]);
});

it('an admin registers a SAML service provider from its metadata and removes it; a viewer sees it with the identity provider\'s metadata URL, changes nothing', async () => {
  const token = await tokenOf(cookies.admin);
  const post = (path: string, fields: Record<string, string>, who = 'admin') => request(consoleApp).post(path).set('Cookie', cookies[who]).type('form').send({ csrf: token, ...fields });
  const metadata = '<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" entityID="https://wiki.example.com/saml">'
    + '<md:SPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">'
    + '<md:AssertionConsumerService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="https://wiki.example.com/acs" index="0"/>'
    + '</md:SPSSODescriptor></md:EntityDescriptor>';
  const bad = await post('/apps/local/saml', { metadata: '<!DOCTYPE x><x/>' });
  expect([bad.status, bad.text]).toEqual([400, expect.stringContaining('metadata: the metadata has a DOCTYPE')]);
  const added = await post('/apps/local/saml', { metadata, name: 'Wiki', name_id_format: 'email' });
  expect(added.headers.location).toBe('/apps/local?locale=en-US#h-saml');
  const appPage = await request(consoleApp).get('/apps/local').set('Cookie', cookies.viewer);
  expect(appPage.text).toContain('<code>https://wiki.example.com/acs</code>');
  expect(appPage.text).toMatch(/<code>http:\/\/[^<]+\/saml\/metadata<\/code>/);
  expect(appPage.text).not.toContain('Register the service provider');
  // the organizations' connections are listed beside (made with the API or the command line)
  expect(appPage.text).toContain('<h2 id="h-connections">Enterprise connections</h2>');
  const local = (await t.runtime.db.applications.findByName('local'))!;
  const [sp] = (await t.runtime.db.saml.list(local.id)).filter((x) => x.entityId === 'https://wiki.example.com/saml');
  expect(sp).toMatchObject({ name: 'Wiki', nameIdFormat: 'email' });
  expect((await request(consoleApp).post(`/apps/local/saml/${sp.publicId}/remove`).set('Cookie', cookies.viewer).type('form')
    .send({ csrf: await tokenOf(cookies.viewer), confirm: 'yes' })).status).toBe(403);
  expect((await post(`/apps/local/saml/${sp.publicId}/remove`, {})).status).toBe(400);
  expect((await post(`/apps/local/saml/${sp.publicId}/remove`, { confirm: 'yes' })).headers.location).toBe('/apps/local?locale=en-US#h-saml');
  expect(await t.runtime.db.saml.list(local.id)).not.toContainEqual(expect.objectContaining({ publicId: sp.publicId }));
  const audit = (await t.runtime.db.events.latest(local.id, 4)).filter((e) => e.type.startsWith('saml.')).map((e) => [e.type, e.actor.kind]);
  expect(audit).toEqual([['saml.service_provider_removed', 'operator'], ['saml.service_provider_added', 'operator']]);
});

it('an admin makes an organization\'s SCIM token (shown once) and revokes it; the page lists every token and the directories\' latest calls; a viewer changes nothing', async () => {
  const token = await tokenOf(cookies.admin);
  const post = (path: string, fields: Record<string, string>, who = 'admin') => request(consoleApp).post(path).set('Cookie', cookies[who]).type('form').send({ csrf: token, ...fields });
  const owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
  const domain = `console-${Math.random().toString(36).slice(2, 8)}.example`;
  const org = (await request(t.app).post('/organizations/create').set('Authorization', owner).type('form').send({ name: 'Console SCIM', slug: domain.replace(/\./g, '-') })).body.id as string;
  await request(t.app).post('/organizations/domains/add').set('Authorization', owner).type('form').send({ organization_id: org, domain, verified: 'true' });

  expect((await post('/apps/local/scim', { organization_id: 'org_nope' })).status).toBe(400);
  const made = await post('/apps/local/scim', { organization_id: org, description: 'Okta' });
  expect(made.status).toBe(200);
  const shown = /<code id="secret">(ghscim_[A-Za-z0-9_-]+)<\/code>/.exec(made.text)![1];
  // the directory provisions someone with it
  const provisioned = await request(t.app).post('/scim/v2/Users').set('Authorization', `Bearer ${shown}`).set('Content-Type', 'application/scim+json')
    .send(JSON.stringify({ schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName: `ada@${domain}`, emails: [{ value: `ada@${domain}` }] }));
  expect(provisioned.status).toBe(201);

  const appPage = await request(consoleApp).get('/apps/local').set('Cookie', cookies.viewer);
  expect(appPage.text).toContain('<h2 id="h-scim">SCIM provisioning</h2>');
  expect(appPage.text).toContain(`<code>${org}</code>`);
  expect(appPage.text).toContain('Okta');
  expect(appPage.text).toContain('scim.user_provisioned');
  expect(appPage.text).not.toContain(shown);
  expect(appPage.text).not.toContain('Make a SCIM token');
  const local = (await t.runtime.db.applications.findByName('local'))!;
  const [listed] = (await t.runtime.db.scim.listTokensOfApplication(local.id, 10)).filter((x) => x.organizationId === org);
  expect((await request(consoleApp).post(`/apps/local/scim/${org}/${listed.token.publicId}/revoke`).set('Cookie', cookies.viewer).type('form')
    .send({ csrf: await tokenOf(cookies.viewer), confirm: 'yes' })).status).toBe(403);
  expect((await post(`/apps/local/scim/${org}/${listed.token.publicId}/revoke`, {})).status).toBe(400);
  expect((await post(`/apps/local/scim/${org}/${listed.token.publicId}/revoke`, { confirm: 'yes' })).headers.location).toBe('/apps/local?locale=en-US#h-scim');
  expect((await request(t.app).get('/scim/v2/Users').set('Authorization', `Bearer ${shown}`)).status).toBe(401);
  const events = (await t.runtime.db.events.latest(local.id, 10)).filter((e) => e.type.startsWith('scim.token')).map((e) => [e.type, e.actor.kind]);
  expect(events).toEqual([['scim.token_revoked', 'operator'], ['scim.token_created', 'operator']]);
});

it('operators: admins list them and change or take away a role, never the last admin\'s; others get 403', async () => {
  expect((await request(consoleApp).get('/operators').set('Cookie', cookies.support)).status).toBe(403);
  const listed = await request(consoleApp).get('/operators').set('Cookie', cookies.admin);
  expect(listed.status).toBe(200);
  for (const role of ['viewer', 'support', 'admin']) expect(listed.text).toContain(`${role}@ops.example`);
  const idOf = async (email: string) => (await t.runtime.db.records.find(ops.id, { email }))!.id;
  const csrf = await tokenOf(cookies.admin);
  const post = (id: number, role: string, confirm = 'yes') => request(consoleApp).post(`/operators/${id}/role`).set('Cookie', cookies.admin).type('form').send({ csrf, role, confirm });
  // the last admin, its own role: refused, and said why
  const last = await post(await idOf('admin@ops.example'), 'viewer');
  expect([last.status, last.text.includes('this is the last admin')]).toEqual([400, true]);
  expect(operatorRoleOf((await t.runtime.db.records.find(ops.id, { email: 'admin@ops.example' }))!)).toBe('admin');
  expect((await post(await idOf('viewer@ops.example'), 'owner')).status).toBe(400);
  expect((await post(await idOf('viewer@ops.example'), 'support', 'no')).status).toBe(400);
  // a role changed, then taken away: that account's console session stops working at once
  const changed = await post(await idOf('viewer@ops.example'), 'support');
  expect([changed.status, changed.headers.location]).toEqual([303, '/operators?locale=en-US&done=roleChanged']);
  expect(operatorRoleOf((await t.runtime.db.records.find(ops.id, { email: 'viewer@ops.example' }))!)).toBe('support');
  expect((await request(consoleApp).get('/apps').set('Cookie', cookies.viewer)).status).toBe(200);
  expect((await post(await idOf('viewer@ops.example'), 'none')).status).toBe(303);
  expect((await request(consoleApp).get('/apps').set('Cookie', cookies.viewer)).status).toBe(303);
  const audit = await t.runtime.db.events.latest(ops.id, 5, await idOf('viewer@ops.example'));
  expect(audit[0]).toMatchObject({ type: 'record.updated', actor: { kind: 'operator', name: 'admin@ops.example' } });
});

it('an account\'s history shows a run of sign-ins (each moving lastLogin only) as one line, the real changes beside it; a factor added writes no version', async () => {
  const owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
  const email = `history-${Date.now()}@example.com`;
  const created = await request(t.app).post('/entity.create').set('Authorization', owner).type('form')
    .send({ type_name: 'user', attributes: JSON.stringify({ email, password: 'history horse battery', givenName: 'Ada' }) });
  expect(created.body.stat).toBe('ok');
  const signIn = () => request(t.app).post('/oauth/auth_native_traditional').type('form').send({
    client_id: t.local.clients.login.client_id, locale: 'en-US', response_type: 'token', signInEmailAddress: email, currentPassword: 'history horse battery',
  });
  for (let i = 0; i < 3; i++) expect((await signIn()).body.stat).toBe('ok');
  const token = (await signIn()).body.access_token as string;
  // an authenticator added: how the account signs in, which no version shows
  const enrolled = await request(t.app).post('/oauth/totp_enroll_native').type('form').send({ access_token: token });
  expect(enrolled.body.stat).toBe('ok');
  expect((await request(t.app).post('/oauth/totp_confirm_native').type('form').send({ access_token: token, code: oathtool(enrolled.body.secret, new Date()) })).body.stat).toBe('ok');
  expect((await request(t.app).post('/entity.update').set('Authorization', owner).type('form')
    .send({ type_name: 'user', id: created.body.id, attributes: JSON.stringify({ givenName: 'Ada Augusta' }) })).body.stat).toBe('ok');
  // the same values again: nothing a reader sees differs, so no version
  expect((await request(t.app).post('/entity.update').set('Authorization', owner).type('form')
    .send({ type_name: 'user', id: created.body.id, attributes: JSON.stringify({ givenName: 'Ada Augusta' }) })).body.stat).toBe('ok');
  const page = await request(consoleApp).get(`/apps/local/accounts/${created.body.id}`).set('Cookie', cookies.admin);
  expect(page.status).toBe(200);
  const history = page.text.slice(page.text.indexOf('id="h-history"'), page.text.indexOf('id="h-activity"'));
  // versions: 1 made, 2 to 5 the four sign-ins, 6 the name
  expect(history).toContain('Versions 2 to 5: 4 sign-ins, each changing lastLogin only');
  expect(history).toContain('Version 6');
  expect(history).toContain('<ins>Ada Augusta</ins>');
  expect(history).not.toContain('Version 7');
});

it('an admin registers an API, grants a client its scopes, defines a role from lines and gives it to an account; the client page lists its logout tokens; support changes none of it', async () => {
  const token = await tokenOf(cookies.admin);
  const post = (path: string, fields: Record<string, string | string[]>, who = 'admin') => request(consoleApp).post(path).set('Cookie', cookies[who]).type('form').send({ csrf: token, ...fields });
  const local = (await t.runtime.db.applications.findByName('local'))!;
  const bad = await post('/apps/local/apis', { identifier: 'not a uri' });
  expect([bad.status, bad.text]).toEqual([400, expect.stringContaining('identifier')]);
  const added = await post('/apps/local/apis', { identifier: 'https://orders.example.com/', name: 'Orders', scopes: 'read:orders write:orders', token_lifetime: '300', rbac: 'true' });
  expect(added.headers.location).toBe('/apps/local?locale=en-US#h-apis');
  const [api] = (await t.runtime.db.apis.list(local.id)).filter((x) => x.identifier === 'https://orders.example.com/');
  expect(api).toMatchObject({ name: 'Orders', scopes: ['read:orders', 'write:orders'], tokenSeconds: 300, rbac: true, permissionsInToken: false });
  const machine = t.local.clients.owner.client_id;
  expect((await post(`/apps/local/apis/${api.publicId}/grant`, { client: machine, scopes: 'read:orders' })).status).toBe(303);
  expect((await t.runtime.db.apis.find(local.id, api.publicId))!.clientScopes).toEqual({ [machine]: ['read:orders'] });
  const undefinedScope = await post(`/apps/local/apis/${api.publicId}/grant`, { client: machine, scopes: 'delete:everything' });
  expect(undefinedScope.status).toBe(400);
  // a role from lines: the API's identifier, then its scopes
  expect((await post('/apps/local/roles', { name: 'clerk', description: 'Reads orders', permissions: 'https://orders.example.com/ read:orders' })).headers.location).toBe('/apps/local?locale=en-US#h-roles');
  expect((await t.runtime.db.roles.list(local.id)).find((r) => r.name === 'clerk')!.permissions).toEqual({ [api.publicId]: ['read:orders'] });
  // (support reads as a viewer would: the viewer's role is taken away by a test before)
  const page = await request(consoleApp).get('/apps/local').set('Cookie', cookies.support);
  expect(page.text).toContain('<h2 id="h-apis">APIs</h2>');
  expect(page.text).toContain('<code title="' + api.publicId + '">https://orders.example.com/</code>');
  expect(page.text).toContain('<code>clerk</code>');
  expect(page.text).not.toContain('Register an API');
  // an account's roles: checked on its page by an admin; support sees them, cannot change them
  const made = await createRecord(t.runtime.services, { app: local, origin: {}, operator: acting, record: parseNewUser(local.id, { email: `clerk-${Date.now()}@example.com` }) });
  expect((await post(`/apps/local/accounts/${made.id}/roles`, { roles: ['clerk'], confirm: 'yes' })).headers.location).toBe(`/apps/local/accounts/${made.id}?locale=en-US&done=rolesChanged`);
  expect((await t.runtime.db.roles.listOf(local.id, made.id)).map((r) => r.name)).toEqual(['clerk']);
  const supportToken = await tokenOf(cookies.support);
  const bySupport = await request(consoleApp).post(`/apps/local/accounts/${made.id}/roles`).set('Cookie', cookies.support).type('form').send({ csrf: supportToken, confirm: 'yes' });
  expect(bySupport.status).toBe(403);
  expect((await request(consoleApp).get(`/apps/local/accounts/${made.id}`).set('Cookie', cookies.support)).text).toMatch(/Roles<\/span><p>clerk<\/p>/);
  // unchecked: taken back
  expect((await post(`/apps/local/accounts/${made.id}/roles`, { confirm: 'yes' })).status).toBe(303);
  expect(await t.runtime.db.roles.listOf(local.id, made.id)).toEqual([]);
  // removed, confirmed; a viewer may not
  expect((await request(consoleApp).post(`/apps/local/roles/clerk/remove`).set('Cookie', cookies.support).type('form').send({ csrf: supportToken, confirm: 'yes' })).status).toBe(403);
  expect((await post('/apps/local/roles/clerk/remove', { confirm: 'yes' })).status).toBe(303);
  expect((await post(`/apps/local/apis/${api.publicId}/remove`, {})).status).toBe(400);
  expect((await post(`/apps/local/apis/${api.publicId}/remove`, { confirm: 'yes' })).status).toBe(303);
  expect(await t.runtime.db.apis.find(local.id, api.publicId)).toBeUndefined();
  const kinds = (await t.runtime.db.events.latest(local.id, 20)).filter((e) => e.type.startsWith('api.') || e.type.startsWith('role.')).map((e) => [e.type, e.actor.kind]);
  expect(kinds).toEqual(expect.arrayContaining([['api.added', 'operator'], ['api.client_scopes_granted', 'operator'], ['role.defined', 'operator'], ['role.removed', 'operator'], ['api.removed', 'operator']]));
  // a login client with a back-channel logout address: its page says where, and lists the tokens sent (none yet)
  const login = t.local.clients.login.client_id;
  expect((await post('/apps/local/settings', { client: login, key: 'backchannel_logout_uri', value: 'https://app.example.com/backchannel-logout' })).status).toBe(303);
  const clientPage = await request(consoleApp).get(`/apps/local/clients/${login}`).set('Cookie', cookies.support);
  expect(clientPage.text).toContain('<h2 id="h-logouts">Back-channel logout</h2>');
  expect(clientPage.text).toContain('a logout token is sent to https://app.example.com/backchannel-logout');
});
