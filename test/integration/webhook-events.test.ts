import http from 'node:http';
import request from 'supertest';
import { Webhook } from 'standardwebhooks';
import { basic, manualClock, startTestApp, type TestApp } from '../helpers/backend';
import { oathtool } from '../helpers/totp';
import { until } from '../helpers/processes';
import { stored } from '../helpers/stored';

// docs/webhooks.md#events, through the API of the embedded default (its in-process job runner):
// the account events an app's backend and its users cause arrive at a real receiver, each verified
// by the standardwebhooks package (the specification's reference implementation, not Gatehouse's
// code), once per webhook-id, an account's in the order they happened; a payload holds names,
// never a value, a password, a hash, a token, a code or a secret; a record only for an endpoint
// that asked for it; a second endpoint subscribed to some types gets those only.

const clock = manualClock(new Date(Math.floor(Date.now() / 30_000) * 30_000 + 5_000));
let t: TestApp;
let owner: string;
let login: string;
let receiver: http.Server;
let port: number;
const PASSWORD = 'correct horse battery';
const NEW_PASSWORD = 'another horse, stapled';
interface Got { id: string; endpoint: string; type: string; data: Record<string, any>; raw: string }
const got: Got[] = [];
const secrets = new Map<string, string>();

const post = (path: string, params: Record<string, string>, auth?: string) => {
  const r = request(t.app).post(path).type('form');
  return (auth ? r.set('Authorization', auth) : r).send(params);
};
const asOwner = (path: string, params: Record<string, string>) => post(path, params, owner);

beforeAll(async () => {
  t = await startTestApp({ clock, env: { WEBHOOKS_ALLOW_PRIVATE: 'true', LOGIN_LIMIT_ADDRESS: '10000/900' } });
  owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
  login = t.local.clients.login.client_id;
  receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const endpoint = (req.url ?? '').slice(1);
      const headers = { 'webhook-id': String(req.headers['webhook-id']), 'webhook-timestamp': String(req.headers['webhook-timestamp']), 'webhook-signature': String(req.headers['webhook-signature']) };
      try {
        // the reference implementation checks the signature and that the timestamp is recent
        const verified = new Webhook(secrets.get(endpoint)!).verify(body, headers) as { type: string; data: Record<string, any> };
        got.push({ id: headers['webhook-id'], endpoint, type: verified.type, data: verified.data, raw: body });
        res.writeHead(204).end();
      } catch {
        res.writeHead(400).end('not verified');
      }
    });
  });
  port = await new Promise<number>((resolve) => receiver.listen(0, '127.0.0.1', () => resolve((receiver.address() as { port: number }).port)));
});
afterAll(async () => {
  receiver?.closeAllConnections();
  await new Promise<void>((resolve) => receiver.close(() => resolve()));
  await t?.close();
});

async function addEndpoint(name: string, events: string, includeRecord = false): Promise<string> {
  const added = await asOwner('/webhooks/add', { url: `http://127.0.0.1:${port}/${name}`, events, include_record: String(includeRecord) });
  expect(added.body.stat).toBe('ok');
  secrets.set(name, added.body.result.secret);
  return added.body.result.id as string;
}

it('delivers every account, client and settings event signed, once per webhook-id, in each account\'s order, with names and no secret', async () => {
  const all = await addEndpoint('all', '*', true);
  const some = await addEndpoint('some', 'user.created,user.deleted');
  // a new endpoint's deliveries go out once its first seconds are read back (eight seconds): its ping says when
  for (const id of [all, some]) expect((await asOwner('/webhooks/test', { id })).body.stat).toBe('ok');
  await until('both endpoints are caught up', () => ['all', 'some'].every((e) => got.some((g) => g.endpoint === e && g.type === 'ping')), 30_000);
  const warmup = got.splice(0);

  // an account: created by the backend, signed in, changed, verified, its password changed
  const email = `wh-${Date.now()}@example.com`;
  const created = await asOwner('/entity.create', { type_name: 'user', attributes: JSON.stringify({ email, password: PASSWORD, givenName: 'Ada' }) });
  expect(created.body.stat).toBe('ok');
  const uuid = created.body.uuid as string;
  const signedIn = await post('/oauth/auth_native_traditional', { client_id: login, locale: 'en-US', signInEmailAddress: email, currentPassword: PASSWORD });
  expect(signedIn.body.stat).toBe('ok');
  expect((await asOwner('/entity.update', { type_name: 'user', uuid, attributes: JSON.stringify({ familyName: 'Lovelace', emailVerified: '2026-11-27 10:00:00' }) })).body.stat).toBe('ok');
  expect((await asOwner('/entity.update', { type_name: 'user', uuid, attributes: JSON.stringify({ password: NEW_PASSWORD }) })).body.stat).toBe('ok');
  // an authenticator added by the person, removed by the backend
  const token = (await post('/oauth/auth_native_traditional', { client_id: login, locale: 'en-US', signInEmailAddress: email, currentPassword: NEW_PASSWORD })).body.access_token as string;
  const enrolled = await post('/oauth/totp_enroll_native', { access_token: token });
  expect((await post('/oauth/totp_confirm_native', { access_token: token, code: oathtool(enrolled.body.secret, clock.now()) })).body.stat).toBe('ok');
  expect((await asOwner('/entity.resetSecondFactor', { type_name: 'user', uuid })).body.stat).toBe('ok');
  // a refresh token spent twice
  const loginAuth = basic(login, t.local.clients.login.client_secret);
  const code = await post('/oauth/auth_native_traditional', {
    client_id: login, locale: 'en-US', signInEmailAddress: email, currentPassword: NEW_PASSWORD, response_type: 'code', redirect_uri: 'https://app.example/back',
  });
  const pair = await post('/oauth/token', { grant_type: 'authorization_code', code: code.body.authorization_code, redirect_uri: 'https://app.example/back' }, loginAuth);
  expect((await post('/oauth/token', { grant_type: 'refresh_token', refresh_token: pair.body.refresh_token }, loginAuth)).body.stat).toBe('ok');
  expect((await post('/oauth/token', { grant_type: 'refresh_token', refresh_token: pair.body.refresh_token }, loginAuth)).body.stat).toBe('error');
  // the lifecycle
  expect((await asOwner('/entity.disable', { type_name: 'user', uuid, reason: 'chargeback' })).body.stat).toBe('ok');
  expect((await asOwner('/entity.enable', { type_name: 'user', uuid })).body.stat).toBe('ok');
  expect((await asOwner('/entity.signOut', { type_name: 'user', uuid })).body.stat).toBe('ok');
  expect((await asOwner('/entity.delete', { type_name: 'user', uuid })).body.stat).toBe('ok');
  // a second account, erased
  const other = await asOwner('/entity.create', { type_name: 'user', attributes: JSON.stringify({ email: `wh2-${Date.now()}@example.com` }) });
  expect((await asOwner('/entity.erase', { type_name: 'user', uuid: other.body.uuid })).body.stat).toBe('ok');
  // the application's own
  const client = await asOwner('/clients/add', { description: 'reporting', features: '["direct_read_access"]' });
  expect(client.body.stat).toBe('ok');
  expect((await asOwner('/clients/reset_secret', { for_client_id: client.body.client_id })).body.stat).toBe('ok');
  expect((await asOwner('/settings/set', { key: 'app_name', value: 'Acme' })).body.stat).toBe('ok');
  expect((await asOwner('/clients/delete', { client_id_for_deletion: client.body.client_id })).body.stat).toBe('ok');
  const ping = await asOwner('/webhooks/test', { id: all });
  expect(ping.body).toMatchObject({ stat: 'ok', message_id: expect.stringMatching(/^msg_[0-9a-f]{32}$/) });

  const expected = [
    'user.created', 'user.signed_in', 'user.updated', 'user.email_verified', 'user.password_changed', 'user.factor_added', 'user.factor_removed',
    'user.refresh_reuse_detected', 'user.disabled', 'user.enabled', 'user.sessions_ended', 'user.deleted', 'user.erased',
    'client.created', 'client.secret_reset', 'client.deleted', 'settings.changed', 'ping',
  ];
  await until('every type arrived', () => expected.every((type) => got.some((g) => g.endpoint === 'all' && g.type === type)), 20_000);
  await t.runtime.queue.idle?.();
  const mine = got.filter((g) => g.endpoint === 'all');
  // once per webhook-id
  expect(new Set(mine.map((g) => g.id)).size).toBe(mine.length);
  expect(mine.find((g) => g.type === 'ping')!.id).toBe(ping.body.message_id);
  // every delivery about an account names it, a deleted one's too
  expect(mine.filter((g) => g.type.startsWith('user.') && typeof g.data.user_id !== 'string')).toEqual([]);
  // the account's in the order they happened
  const ofAda = mine.filter((g) => g.data.user_id === uuid).map((g) => g.type);
  expect(ofAda.indexOf('user.created')).toBe(0);
  expect(ofAda.indexOf('user.password_changed')).toBeGreaterThan(ofAda.indexOf('user.email_verified'));
  expect(ofAda.indexOf('user.disabled')).toBeLessThan(ofAda.indexOf('user.enabled'));
  expect(ofAda[ofAda.length - 1]).toBe('user.deleted');
  // what each says: names and facts
  const first = (type: string) => mine.find((g) => g.type === type && (g.data.user_id === uuid || !type.startsWith('user.') || type === 'user.erased'))!.data;
  expect(first('user.created')).toMatchObject({ user_id: uuid, actor: 'client', client_id: t.local.clients.owner.client_id, attributes: expect.arrayContaining(['email', 'givenName']) });
  expect(first('user.signed_in')).toMatchObject({ user_id: uuid, actor: 'account', method: 'password', client_id: login });
  expect(mine.find((g) => g.type === 'user.updated' && g.data.attributes?.includes('familyName'))!.data).toMatchObject({ user_id: uuid, record: { uuid, familyName: 'Lovelace' } });
  expect(first('user.factor_added')).toMatchObject({ method: 'totp' });
  expect(first('user.disabled')).toMatchObject({ reason: 'chargeback' });
  expect(first('user.refresh_reuse_detected')).toMatchObject({ actor: 'system', revoked: expect.any(Number) });
  expect(first('user.sessions_ended')).toMatchObject({ reason: 'signed_out' });
  expect(first('user.erased')).toMatchObject({ user_id: other.body.uuid });
  expect(first('client.created')).toMatchObject({ client_id: client.body.client_id, features: ['direct_read_access'] });
  expect(first('settings.changed')).toMatchObject({ key: 'app_name', scope: 'client' });
  // no value of what signs anyone in, anywhere
  const everything = mine.map((g) => g.raw).join('\n');
  for (const secret of [PASSWORD, NEW_PASSWORD, enrolled.body.secret, token, pair.body.refresh_token, client.body.client_secret, 'argon2', '$2b$', 'whsec_']) {
    expect(everything).not.toContain(secret);
  }
  // the deleted account's record is not sent (it is gone); the second endpoint got its two types only
  expect(first('user.deleted').record).toBeNull();
  const toSome = got.filter((g) => g.endpoint === 'some');
  expect([...new Set(toSome.map((g) => g.type))].sort()).toEqual(['user.created', 'user.deleted']);
  expect(toSome.every((g) => !('record' in g.data))).toBe(true);
  // the erased account's uuid was sent, and is kept nowhere once its erasure was delivered
  const kept = JSON.stringify(await stored(t.runtime.db).rows('SELECT payload FROM webhook_deliveries')) + JSON.stringify(await stored(t.runtime.db).rows('SELECT payload FROM outbox'));
  expect(kept).not.toContain(other.body.uuid);
  // /webhooks/deliveries lists what was sent, with the receiver's status
  const deliveries = await asOwner('/webhooks/deliveries', { id: all, limit: '100' });
  // (but the erased account's: its erasure dropped them, all but the one saying it was erased)
  const sent = [...warmup.filter((g) => g.endpoint === 'all'), ...mine].filter((g) => g.data.user_id !== other.body.uuid || g.type === 'user.erased');
  expect(deliveries.body.results.map((d: { message_id: string }) => d.message_id).sort()).toEqual([...new Set(sent.map((g) => g.id))].sort());
  expect(deliveries.body.results.every((d: { state: string; last_status: number }) => d.state === 'delivered' && d.last_status === 204)).toBe(true);
});
