import request from 'supertest';
import { manualClock, startTestApp, type TestApp } from '../helpers/backend';

// The passkey endpoints' answers to bad input (docs/passkeys.md#errors) through the API: what a
// browser never sends, named. The ceremonies themselves, with real credentials, are in
// test/e2e/passkeys-browser.test.ts.

const clock = manualClock();
let t: TestApp;
const PASSWORD = 'correct horse battery';
const post = (path: string, params: Record<string, string>) => request(t.app).post(path).type('form').send(params);

/** A new account and the access token of its registration (a sign-in just now). */
async function account() {
  const email = `pk-api-${Math.random().toString(36).slice(2)}@example.com`;
  const res = await post('/oauth/register_native_traditional', {
    client_id: t.local.clients.login.client_id, locale: 'en-US', emailAddress: email, newPassword: PASSWORD, newPasswordConfirm: PASSWORD,
    firstName: 'Ada', lastName: 'Lovelace', displayName: 'ada',
  });
  expect(res.body.stat).toBe('ok');
  return { email, token: res.body.access_token as string, id: res.body.capture_user.id as number };
}

beforeAll(async () => {
  t = await startTestApp({ clock, env: { LOGIN_LIMIT_ADDRESS: '5/900', REGISTER_LIMIT_ADDRESS: '1000/3600' } });
});
afterAll(() => t.close());

it('adding a passkey needs a recent sign-in; a credential that is not one is named', async () => {
  const a = await account();
  const begun = await post('/oauth/passkey_register_begin', { access_token: a.token });
  expect(begun.body).toMatchObject({ stat: 'ok', options: { challenge: expect.any(String), rp: { id: 'localhost' }, excludeCredentials: [] } });
  for (const [credential, why] of [['not json', 'is not JSON'], ['[]', 'not a JSON object'], ['{"id":"abc","type":"public-key"}', 'has no response'],
    ['{"id":"abc","type":"public-key","response":{"clientDataJSON":"x"}}', 'no response.attestationObject']]) {
    const res = await post('/oauth/passkey_register_finish', { access_token: a.token, credential });
    expect(res.body).toMatchObject({ code: 200, argument_name: 'credential', error_description: expect.stringContaining(why) });
  }
  const long = JSON.stringify({ id: 'a'.repeat(256), type: 'public-key', response: { clientDataJSON: 'x', attestationObject: 'y' } });
  expect((await post('/oauth/passkey_register_finish', { access_token: a.token, credential: long })).body).toMatchObject({ code: 200, argument_name: 'credential' });
  // a challenge this account never began
  const forged = JSON.stringify({ id: 'abc', type: 'public-key', response: { clientDataJSON: Buffer.from(JSON.stringify({ challenge: 'nope' })).toString('base64url'), attestationObject: 'y' } });
  expect((await post('/oauth/passkey_register_finish', { access_token: a.token, credential: forged })).body).toMatchObject({ code: 200, argument_name: 'credential' });
  // a token of a sign-in long ago
  clock.advance(301_000);
  expect((await post('/oauth/passkey_register_begin', { access_token: a.token })).body).toMatchObject({ code: 200, argument_name: 'access_token' });
  expect((await post('/oauth/passkey_register_begin', { access_token: 'not-a-token' })).body).toMatchObject({ code: 413 });
});

it('managing passkeys: ids that are not the account\'s, names too long, a stale token for removal', async () => {
  const a = await account();
  expect((await post('/oauth/passkeys_native', { access_token: a.token })).body).toEqual({ stat: 'ok', passkeys: [] });
  expect((await post('/oauth/passkey_rename_native', { access_token: a.token, passkey_id: 'x', name: 'n' })).body).toMatchObject({ code: 200, argument_name: 'passkey_id' });
  expect((await post('/oauth/passkey_rename_native', { access_token: a.token, passkey_id: '99999', name: 'n' })).body).toMatchObject({ code: 200, argument_name: 'passkey_id' });
  expect((await post('/oauth/passkey_rename_native', { access_token: a.token, passkey_id: '1', name: 'n'.repeat(101) })).body).toMatchObject({ code: 200, argument_name: 'name' });
  expect((await post('/oauth/passkey_remove_native', { access_token: a.token, passkey_id: '99999' })).body).toMatchObject({ code: 200, argument_name: 'passkey_id' });
  clock.advance(301_000);
  expect((await post('/oauth/passkey_remove_native', { access_token: a.token, passkey_id: '1' })).body).toMatchObject({ code: 200, argument_name: 'access_token' });
});

it('a sign-in with a passkey: an unknown challenge_token, a credential for another challenge; then the address\'s budget', async () => {
  const login = t.local.clients.login.client_id;
  const begun = await post('/oauth/passkey_auth_begin', { client_id: login });
  expect(begun.body).toMatchObject({ stat: 'ok', challenge_token: begun.body.options.challenge });
  const assertion = (challenge: string) => JSON.stringify({
    id: 'abc', type: 'public-key', response: { clientDataJSON: Buffer.from(JSON.stringify({ challenge })).toString('base64url'), authenticatorData: 'x', signature: 'y' },
  });
  const signIn = (challengeToken: string, credential: string) => post('/oauth/passkey_auth_native', { client_id: login, locale: 'en-US', challenge_token: challengeToken, credential });
  expect((await signIn('unknown', assertion('unknown'))).body).toMatchObject({ code: 200, argument_name: 'challenge_token' });
  expect((await signIn(begun.body.challenge_token, assertion('another'))).body).toMatchObject({ code: 200, argument_name: 'credential' });
  // a credential no account registered: 210, its challenge spent
  expect((await signIn(begun.body.challenge_token, assertion(begun.body.challenge_token))).body).toMatchObject({ code: 210, argument_name: 'credential' });
  expect((await signIn(begun.body.challenge_token, assertion(begun.body.challenge_token))).body).toMatchObject({ code: 200, argument_name: 'challenge_token' });
  expect((await post('/oauth/passkey_auth_begin', { client_id: login, mfa_token: 'nope' })).body).toMatchObject({ code: 200, argument_name: 'mfa_token' });
  // five begins from one address in the window (LOGIN_LIMIT_ADDRESS=5/900 here): the next waits
  let last;
  for (let i = 0; i < 4; i++) last = await post('/oauth/passkey_auth_begin', { client_id: login });
  expect(last!.body).toMatchObject({ code: 510, error: 'api_limit_error' });
  expect(Number(last!.headers['retry-after'])).toBeGreaterThan(0);
});
