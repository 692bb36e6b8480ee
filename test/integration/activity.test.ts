import request from 'supertest';
import { basic, manualClock, startTestApp, type TestApp } from '../helpers/backend';
import { stored } from '../helpers/stored';
import { EVENT_TYPES } from '../../src/domain/events';
import { disableUser } from '../../src/usecases/operators/disable-user';
import { operatorActing } from '../../src/usecases/operators/deps';
import { oathtool } from '../helpers/totp';

// docs/activity.md: an account's activity through /entity.activity — sign-ins with their facts,
// failed sign-ins counted per reason and minute, a refresh token's reused family ended — and the
// spec's error body for each argument at fault. The codes of the second factor come from oathtool.

const clock = manualClock(new Date(Math.floor(Date.now() / 30_000) * 30_000 + 5_000));
let t: TestApp;
let owner: string;
let login: string;
const PASSWORD = 'correct horse battery';
const UA = 'Mozilla/5.0 (X11; Linux x86_64; rv:140.0) Gecko/20100101 Firefox/140.0';

const post = (path: string, params: Record<string, string>, agent = UA) => request(t.app).post(path).set('User-Agent', agent).type('form').send(params);
const asOwner = (path: string, params: Record<string, string>) => request(t.app).post(path).set('Authorization', owner).type('form').send(params);
const signIn = (email: string, password = PASSWORD, extra: Record<string, string> = {}) => post('/oauth/auth_native_traditional', {
  client_id: login, locale: 'en-US', signInEmailAddress: email, currentPassword: password, ...extra,
});
interface Entry { type: string; at: string; client_id: string | null; address: string | null; user_agent: string | null; [fact: string]: unknown }
const activity = async (params: Record<string, string>) => {
  const res = await asOwner('/entity.activity', { type_name: 'user', ...params });
  expect(res.body).toMatchObject({ stat: 'ok' });
  return res.body as { id: number; uuid: string; results: Entry[]; next_cursor: string | null };
};

beforeAll(async () => {
  t = await startTestApp({ clock, env: { LOGIN_LIMIT_ADDRESS: '10000/900' } });
  owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
  login = t.local.clients.login.client_id;
});
afterAll(() => t.close());

/** A new account with a password. */
async function account() {
  const email = `act-${Math.random().toString(36).slice(2)}@example.com`;
  const created = await asOwner('/entity.create', { type_name: 'user', attributes: JSON.stringify({ email, password: PASSWORD }) });
  expect(created.body.stat).toBe('ok');
  return { email, id: created.body.id as number, uuid: created.body.uuid as string };
}

it('shows sign-ins with their method, factor, client, address and user agent; three wrong passwords as one counted minute; a reused refresh token that ended its family', async () => {
  const a = await account();
  const first = await signIn(a.email);
  expect(first.body.stat).toBe('ok');
  // an authenticator app on, then a sign-in that finishes with its code
  const enrolled = await post('/oauth/totp_enroll_native', { access_token: first.body.access_token });
  const confirmed = await post('/oauth/totp_confirm_native', { access_token: first.body.access_token, code: oathtool(enrolled.body.secret, clock.now()) });
  expect(confirmed.body.stat).toBe('ok');
  clock.advance(30_000);
  for (let i = 0; i < 3; i++) expect((await signIn(a.email, 'not the password')).body.code).toBe(210);
  const paused = await signIn(a.email, PASSWORD, { response_type: 'code', redirect_uri: 'https://app.example/back' });
  expect(paused.body).toMatchObject({ stat: 'error', mfa_token: expect.any(String) });
  expect((await post('/oauth/mfa_verify_native', { client_id: login, mfa_token: paused.body.mfa_token, code: '000000' })).body.code).not.toBeUndefined();
  const finished = await post('/oauth/mfa_verify_native', { client_id: login, mfa_token: paused.body.mfa_token, code: oathtool(enrolled.body.secret, clock.now()) });
  expect(finished.body.stat).toBe('ok');
  // the code exchanged, rotated once, then the spent refresh token again: the family ends
  const loginAuth = basic(login, t.local.clients.login.client_secret);
  const token = (params: Record<string, string>) => request(t.app).post('/oauth/token').set('Authorization', loginAuth).set('User-Agent', 'okhttp/4.12').type('form').send(params);
  const pair = await token({ grant_type: 'authorization_code', code: finished.body.authorization_code, redirect_uri: 'https://app.example/back' });
  expect(pair.body.stat).toBe('ok');
  expect((await token({ grant_type: 'refresh_token', refresh_token: pair.body.refresh_token })).body.stat).toBe('ok');
  expect((await token({ grant_type: 'refresh_token', refresh_token: pair.body.refresh_token })).body.stat).toBe('error');

  const { results, id, uuid } = await activity({ uuid: a.uuid });
  expect({ id, uuid }).toEqual({ id: a.id, uuid: a.uuid });
  expect(results.map((e) => e.type)).toEqual([
    'token.reuse_detected', 'account.signed_in', 'account.sign_in_failed', 'account.sign_in_failed',
    'account.recovery_codes_renewed', 'account.second_factor_added', 'account.signed_in', 'account.registered',
  ]);
  const [reuse, totp, wrongCode, wrong, , , password] = results;
  // the first pair's access token and the rotated pair: the family's live tokens
  expect(reuse).toMatchObject({ actor: 'system', revoked: 3, client_id: login, user_agent: 'okhttp/4.12' });
  expect(totp).toMatchObject({ method: 'password', factor: 'totp', client_id: login, address: '127.0.0.1', user_agent: UA });
  expect(wrongCode).toMatchObject({ reason: 'wrong_code', count: 1 });
  expect(wrong).toMatchObject({ reason: 'wrong_password', count: 3, client_id: login, address: '127.0.0.1', user_agent: UA, last_at: expect.any(String) });
  expect(password).toMatchObject({ method: 'password', actor: 'account' });
  expect(password).not.toHaveProperty('factor');
  // narrowed by type and time; paged by a cursor
  expect((await activity({ id: String(a.id), types: 'account.sign_in_failed' })).results.map((e) => e.reason)).toEqual(['wrong_code', 'wrong_password']);
  expect((await activity({ id: String(a.id), until: '2001-01-01T00:00:00Z' })).results).toEqual([]);
  const page = await activity({ id: String(a.id), max_results: '4' });
  expect(page.next_cursor).toEqual(expect.any(String));
  const rest = await activity({ id: String(a.id), max_results: '4', cursor: page.next_cursor! });
  expect([...page.results, ...rest.results]).toEqual(results);
  expect(rest.next_cursor).toBeNull();
});

it('keeps a user agent of 8 KB with control characters cut and escaped', async () => {
  const a = await account();
  // a TAB is the one control character HTTP lets a header carry
  expect((await signIn(a.email, PASSWORD, {}).set('User-Agent', `x\ty${'z'.repeat(8192)}`)).body.stat).toBe('ok');
  const [entry] = (await activity({ id: String(a.id), types: 'account.signed_in' })).results;
  expect(entry.user_agent).toHaveLength(512);
  expect(entry.user_agent!.startsWith('x\\u0009yzzz')).toBe(true);
});

it('a disabled account\'s right password is counted as a failed sign-in', async () => {
  const a = await account();
  const app = (await t.runtime.db.applications.findByName('local'))!;
  await disableUser(t.runtime.services, { app, entityId: a.id, acting: operatorActing('ada') });
  clock.advance(1000);
  expect((await signIn(a.email)).body.code).toBe(210);
  expect((await activity({ id: String(a.id), types: 'account.sign_in_failed,account.disabled' })).results).toEqual([
    expect.objectContaining({ type: 'account.sign_in_failed', reason: 'account_disabled', count: 1 }),
    expect.objectContaining({ type: 'account.disabled', actor: 'operator', client_id: null }),
  ]);
});

it('refuses what is not an argument it knows, naming it', async () => {
  const a = await account();
  for (const [params, argument, says] of [
    [{ types: 'account.signed_in,account.exploded' }, 'types', 'account.exploded'], [{ types: ',' }, 'types', 'one or more'],
    [{ cursor: 'abc' }, 'cursor', 'next_cursor'], [{ cursor: '1.x5' }, 'cursor', 'next_cursor'],
    [{ since: 'yesterday' }, 'since', 'ISO 8601'], [{ since: '2026-11-02T00:00:00Z', until: '2026-11-01T00:00:00Z' }, 'until', 'later than since'],
    [{ max_results: '0' }, 'max_results', '1 to 200'], [{ max_results: '201' }, 'max_results', '1 to 200'],
  ] as const) {
    const res = await asOwner('/entity.activity', { type_name: 'user', id: String(a.id), ...params });
    expect(res.body).toMatchObject({ stat: 'error', code: 200, error: 'invalid_argument', argument_name: argument, request_id: expect.any(String) });
    expect(res.body.error_description).toContain(says);
  }
  expect((await asOwner('/entity.activity', { type_name: 'user', id: '999999999' })).body).toMatchObject({ code: 310, argument_name: 'id' });
  // a login client reads no one's activity
  const asLogin = await request(t.app).post('/entity.activity').set('Authorization', basic(login, t.local.clients.login.client_secret)).type('form').send({ type_name: 'user', id: String(a.id) });
  expect(asLogin.body).toMatchObject({ stat: 'error', error: 'permission_error' });
});

it('no event holds a password, code, token or secret the tests used', async () => {
  // every event this file's accounts made, and those of the app's setup
  const rows = await stored(t.runtime.db).rows<{ type: string; data: string; user_agent: string | null; subject_id: string }>('SELECT type, data, user_agent, subject_id FROM events', []);
  expect(rows.length).toBeGreaterThan(10);
  const text = JSON.stringify(rows);
  for (const secret of [PASSWORD, 'not the password', t.local.clients.login.client_secret, t.local.clients.owner.client_secret]) expect(text).not.toContain(secret);
  for (const row of rows) expect(EVENT_TYPES).toContain(row.type);
});
