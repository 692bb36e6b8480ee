import request from 'supertest';
import { basic, startTestApp, type TestApp } from '../helpers/backend';

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

describe('/clients/*', () => {
  it('adds a client with the original response shape, and the new client can authenticate', async () => {
    const res = await call('/clients/add', { description: 'mobile app', features: '["access_issuer","login_client"]' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      stat: 'ok',
      description: 'mobile app',
      client_id: expect.stringMatching(/^[0-9a-f]{32}$/),
      client_secret: expect.stringMatching(/^[0-9a-f]{32}$/),
      features: ['access_issuer', 'login_client'],
    });
    // an access_issuer is not an owner: the admin API refuses it
    const denied = await call('/clients/list', {}, basic(res.body.client_id, res.body.client_secret));
    expect(denied.body).toMatchObject({ stat: 'error', code: 403, error: 'permission_error' });
  });

  it('a login client made by the API gets the application\'s flow, so every hosted sign-in works for it at once; other clients get none', async () => {
    const login = await call('/clients/add', { description: 'web app', features: '["login_client"]' });
    const settings = await call('/settings/items', { for_client_id: login.body.client_id });
    expect(settings.body.result).toMatchObject({ default_flow_name: 'standard', default_flow_version: '1' });
    expect((await call('/settings/set', { for_client_id: login.body.client_id, key: 'redirect_uris', value: 'https://app.example.com/' })).body.stat).toBe('ok');
    const signInPage = () => request(t.app).get('/signin').query({ client_id: login.body.client_id, redirect_uri: 'https://app.example.com/', response_type: 'code' });
    const page = await signInPage();
    expect(page.status).toBe(200);
    expect(page.text).toContain('name="currentPassword"');
    // its flow can be removed (both settings at once): its pages then say it has none
    expect((await call('/settings/set_multi', { for_client_id: login.body.client_id, items: JSON.stringify({ default_flow_name: '', default_flow_version: '' }) })).body).toMatchObject({ stat: 'ok' });
    expect((await signInPage()).text).toContain('this login client has no default flow to show');
    const owner2 = await call('/clients/add', { description: 'backend', features: '["owner"]' });
    expect((await call('/settings/items', { for_client_id: owner2.body.client_id })).body.result.default_flow_name).toBeUndefined();
  });

  it('lists clients, filtered by has_features, via GET with query parameters too', async () => {
    const all = await request(t.app).get('/clients/list').set('Authorization', owner);
    expect(all.body.stat).toBe('ok');
    const ids = all.body.results.map((c: { client_id: string }) => c.client_id);
    expect(ids).toEqual(expect.arrayContaining([ownerId, t.local.clients.login.client_id]));
    const login = await request(t.app).get('/clients/list').query({ has_features: '["login_client"]' }).set('Authorization', owner);
    expect(login.body.results.every((c: { features: string[] }) => c.features.includes('login_client'))).toBe(true);
    expect(login.body.results.map((c: { client_id: string }) => c.client_id)).not.toContain(ownerId);
  });

  it('sets features, refusing unknown ones and the owner dropping its own owner feature', async () => {
    const added = await call('/clients/add', { description: 'x' });
    expect(added.body.features).toEqual([]);
    const set = await call('/clients/set_features', { for_client_id: added.body.client_id, features: '["direct_access"]' });
    expect(set.body).toEqual({ stat: 'ok' });
    const listed = await call('/clients/list', { has_features: '["direct_access"]' });
    expect(listed.body.results.map((c: { client_id: string }) => c.client_id)).toContain(added.body.client_id);

    const unknown = await call('/clients/set_features', { for_client_id: added.body.client_id, features: '["superuser"]' });
    expect(unknown.body).toMatchObject({ code: 200, error: 'invalid_argument', argument_name: 'features' });
    expect(unknown.body.error_description).toContain('superuser');

    const self = await call('/clients/set_features', { for_client_id: ownerId, features: '["login_client"]' });
    expect(self.body).toMatchObject({ stat: 'error', code: 200, argument_name: 'features' });
    const still = await call('/clients/list', { has_features: '["owner"]' });
    expect(still.body.results.map((c: { client_id: string }) => c.client_id)).toContain(ownerId);

    const missing = await call('/clients/set_features', { for_client_id: added.body.client_id });
    expect(missing.body).toMatchObject({ stat: 'error', code: 100, error: 'missing_argument', argument_name: 'features' });
    const nobody = await call('/clients/set_features', { for_client_id: 'nope', features: '[]' });
    expect(nobody.body).toMatchObject({ code: 200, argument_name: 'for_client_id' });
  });

  it('resets a secret: the old one stops working, the new one works', async () => {
    const added = await call('/clients/add', { description: 'rotating', features: '["owner"]' });
    const reset = await call('/clients/reset_secret', { for_client_id: added.body.client_id });
    expect(reset.body).toEqual({ stat: 'ok', new_secret: expect.stringMatching(/^[0-9a-f]{32}$/) });
    const old = await call('/clients/list', {}, basic(added.body.client_id, added.body.client_secret));
    expect(old.body).toMatchObject({ code: 402 });
    const fresh = await call('/clients/list', {}, basic(added.body.client_id, reset.body.new_secret));
    expect(fresh.body.stat).toBe('ok');
  });

  it('deletes a client by client_id_for_deletion, but never the caller itself', async () => {
    const added = await call('/clients/add', { description: 'doomed', features: '["owner"]' });
    expect((await call('/clients/delete', { client_id_for_deletion: added.body.client_id })).body).toEqual({ stat: 'ok' });
    expect((await call('/clients/list', {}, basic(added.body.client_id, added.body.client_secret))).body.code).toBe(402);
    const again = await call('/clients/delete', { client_id_for_deletion: added.body.client_id });
    expect(again.body).toMatchObject({ code: 200, argument_name: 'client_id_for_deletion' });
    const self = await call('/clients/delete', { client_id_for_deletion: ownerId });
    expect(self.body).toMatchObject({ code: 200, argument_name: 'client_id_for_deletion' });
    expect((await call('/clients/delete')).body).toMatchObject({ code: 100, argument_name: 'client_id_for_deletion' });
  });
});

describe('/settings/*', () => {
  const login = () => t.local.clients.login.client_id;

  it('holds the login client settings apps:create wrote', async () => {
    const items = await call('/settings/items', { for_client_id: login() });
    expect(items.body.result).toMatchObject({
      default_flow_name: 'standard',
      default_flow_version: String(t.local.flow.version),
      password_recover_url: expect.stringMatching(/^http:\/\/localhost:3000\/reset-password$/),
      verify_email_url: expect.stringMatching(/\/verify-email$/),
    });
  });

  it('sets, gets, lists keys and deletes, answering whether the key existed', async () => {
    expect((await call('/settings/set', { key: 'theme', value: 'dark' })).body).toEqual({ stat: 'ok', result: false });
    expect((await call('/settings/set', { key: 'theme', value: 'light' })).body).toEqual({ stat: 'ok', result: true });
    expect((await call('/settings/get', { key: 'theme' })).body).toEqual({ stat: 'ok', result: 'light' });
    expect((await call('/settings/get', { key: 'absent' })).body).toEqual({ stat: 'ok', result: null });
    expect((await call('/settings/keys')).body.result).toContain('theme');
    expect((await call('/settings/delete', { key: 'theme' })).body).toEqual({ stat: 'ok', result: true });
    expect((await call('/settings/get', { key: 'theme' })).body.result).toBeNull();
  });

  it('layers client settings over application defaults', async () => {
    expect((await call('/settings/set_default', { key: 'support_email', value: 'help@example.com' })).body.result).toBe(false);
    expect((await call('/settings/get', { key: 'support_email', for_client_id: login() })).body.result).toBe('help@example.com');
    await call('/settings/set', { key: 'support_email', value: 'app@example.com', for_client_id: login() });
    expect((await call('/settings/get', { key: 'support_email', for_client_id: login() })).body.result).toBe('app@example.com');
    expect((await call('/settings/get', { key: 'support_email' })).body.result).toBe('help@example.com');
  });

  it('sets several at once and loses none under concurrent writes', async () => {
    const multi = await call('/settings/set_multi', { items: JSON.stringify({ a: '1', b: '2' }) });
    expect(multi.body).toEqual({ stat: 'ok', result: { a: false, b: false } });
    await Promise.all(Array.from({ length: 10 }, (_, i) => call('/settings/set', { key: `k${i}`, value: String(i) })));
    const items = (await call('/settings/items')).body.result;
    for (let i = 0; i < 10; i++) expect(items[`k${i}`]).toBe(String(i));
  });

  it('refuses bad keys, values and items', async () => {
    expect((await call('/settings/set', { key: 'bad key', value: 'x' })).body).toMatchObject({ code: 200, argument_name: 'key' });
    expect((await call('/settings/set', { key: 'k' })).body).toMatchObject({ code: 100, argument_name: 'value' });
    expect((await call('/settings/get')).body).toMatchObject({ code: 100, argument_name: 'key' });
    expect((await call('/settings/set', { key: 'k', value: 'x'.repeat(5000) })).body).toMatchObject({ code: 200, argument_name: 'value' });
    expect((await call('/settings/set_multi', { items: '[1]' })).body).toMatchObject({ code: 200, argument_name: 'items' });
    expect((await call('/settings/set_multi', { items: '{"a":1}' })).body).toMatchObject({ code: 200, argument_name: 'items.a' });
    expect((await call('/settings/items', { for_client_id: 'nope' })).body).toMatchObject({ code: 200, argument_name: 'for_client_id' });
  });

  it('checks the settings Gatehouse reads when they are set, saying the form expected; an empty value clears', async () => {
    const loginId = t.local.clients.login.client_id;
    const refused = async (key: string, value: string, expected: string, path = '/settings/set') => {
      const res = await call(path, { for_client_id: loginId, key, value });
      expect(res.body).toMatchObject({ stat: 'error', code: 200, error: 'invalid_argument', argument_name: 'value' });
      expect(res.body.error_description).toContain(expected);
    };
    await refused('social_token_urls', '["https://app.example.com/token"]', 'not a JSON list');
    await refused('social_token_urls', 'https://app.example.com/token /relative', 'is not an absolute http(s) URL');
    await refused('redirect_uris', 'app.example.com/done', 'is not an absolute http(s) URL');
    await refused('redirect_uris', 'https://app.example.com/done#x', 'is not an absolute http(s) URL');
    await refused('password_recover_url', 'javascript:alert(1)', 'one absolute http(s) URL');
    await refused('brand_color', 'blue', '#rrggbb', '/settings/set_default');
    await refused('trusted_end_user_ip', 'yes', 'true or false');
    await refused('default_flow_version', 'HEAD', 'version number');
    await refused('default_flow_version', '7', 'no flow "standard" version 7');
    await refused('default_flow_name', 'nosuchflow', 'no flow "nosuchflow"');
    // a default version is a version of the default flow: without a default flow name it names nothing
    const versionAlone = await call('/settings/set', { key: 'default_flow_version', value: '1' });
    expect(versionAlone.body).toMatchObject({ stat: 'error', code: 200, error: 'invalid_argument', argument_name: 'value' });
    expect(versionAlone.body.error_description).toContain('set default_flow_name as well');
    expect((await call('/settings/set_multi', { for_client_id: loginId, items: JSON.stringify({ default_flow_name: 'standard', redirect_uris: 'x' }) })).body)
      .toMatchObject({ code: 200, argument_name: 'items.redirect_uris' });

    // usable values are stored; an application's own keys are stored as given
    for (const [key, value] of [['social_token_urls', 'https://a.example/t, https://b.example/t'], ['trusted_end_user_ip', 'true'], ['default_flow_version', '1'], ['my_own_key', '[1, 2]']]) {
      expect((await call('/settings/set', { for_client_id: loginId, key, value })).body.stat).toBe('ok');
    }
    expect((await call('/settings/get', { for_client_id: loginId, key: 'social_token_urls' })).body.result).toBe('https://a.example/t, https://b.example/t');
    // an empty value removes the setting, on a client and as an application default
    expect((await call('/settings/set', { for_client_id: loginId, key: 'my_own_key', value: '' })).body).toEqual({ stat: 'ok', result: true });
    expect((await call('/settings/get', { for_client_id: loginId, key: 'my_own_key' })).body.result).toBeNull();
    expect((await call('/settings/set_default', { key: 'app_name', value: 'Acme' })).body.stat).toBe('ok');
    expect((await call('/settings/set_default', { key: 'app_name', value: '' })).body).toEqual({ stat: 'ok', result: true });
    expect((await call('/settings/get', { key: 'app_name' })).body.result).toBeNull();
  });
});
