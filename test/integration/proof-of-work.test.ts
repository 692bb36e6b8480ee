import request from 'supertest';
import { createChallenge, solveChallenge, type Challenge } from 'altcha-lib';
import { deriveKey } from 'altcha-lib/algorithms/pbkdf2';
import { challengeSecrets } from '../../src/domain/proof-of-work';
import { basic, createApp, startTestApp, type TestApp } from '../helpers/backend';

// The proof-of-work challenge (docs/proof-of-work.md) through the API, solved by ALTCHA's own
// library (altcha-lib's solveChallenge, the reference the widget follows): the endpoints it
// guards, a missing, replayed, foreign, expired or wrong solution, and `when_busy`.

let t: TestApp;
let owner: string;
let loginId: string;
const PASSWORD = 'correct horse battery';

const post = (path: string, params: Record<string, string>) => request(t.app).post(path).type('form').send(params);
const setting = async (key: string, value: string) => {
  const res = await request(t.app).post('/settings/set').set('Authorization', owner).type('form').send({ key, value, for_client_id: loginId });
  expect(res.body.stat).toBe('ok');
};
const signIn = (email: string, password: string, extra: Record<string, string> = {}) =>
  post('/oauth/auth_native_traditional', { client_id: loginId, locale: 'en-US', signInEmailAddress: email, currentPassword: password, ...extra });
/** The payload the widget sends: base64 of the challenge and its solution. */
const payloadOf = (challenge: Challenge, solution: unknown) => Buffer.from(JSON.stringify({ challenge, solution })).toString('base64');
/** A challenge from /oauth/challenge, solved. */
async function solved(clientId = loginId): Promise<string> {
  const res = await request(t.app).get('/oauth/challenge').query({ client_id: clientId });
  expect(res.body).toMatchObject({ stat: 'ok', parameters: { algorithm: 'PBKDF2/SHA-256', cost: 1000 }, signature: expect.any(String) });
  const challenge = { parameters: res.body.parameters, signature: res.body.signature } as Challenge;
  const solution = await solveChallenge({ challenge, deriveKey });
  expect(solution).not.toBeNull();
  return payloadOf(challenge, solution);
}

beforeAll(async () => {
  t = await startTestApp({ env: { LOGIN_LIMIT_ADDRESS: '10000/900', MAIL_LIMIT_ADDRESS: '10000/3600', REGISTER_LIMIT_ADDRESS: '10000/3600', TRUST_PROXY: 'true' } });
  owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
  loginId = t.local.clients.login.client_id;
  const created = await request(t.app).post('/entity.create').set('Authorization', owner).type('form')
    .send({ type_name: 'user', attributes: JSON.stringify({ email: 'pow@example.com', password: PASSWORD }) });
  expect(created.body.stat).toBe('ok');
  // a little work per challenge: the tests solve many
  await setting('challenge_difficulty', '50');
});
afterAll(() => t.close());

describe('the challenge endpoint', () => {
  it('answers a signed challenge naming the client, on GET and POST; without a login client 100 or 403', async () => {
    const res = await post('/oauth/challenge', { client_id: loginId });
    expect(res.body).toMatchObject({ stat: 'ok', parameters: { data: { client: loginId }, expiresAt: expect.any(Number), nonce: expect.any(String) }, signature: expect.any(String) });
    expect((await request(t.app).get('/oauth/challenge')).body).toMatchObject({ code: 100, argument_name: 'client_id' });
    expect((await request(t.app).get('/oauth/challenge').query({ client_id: t.local.clients.owner.client_id })).body).toMatchObject({ code: 403 });
  });

  it('refuses settings it cannot use', async () => {
    for (const [key, value] of [['challenge', 'sometimes'], ['challenge_difficulty', '5'], ['challenge_busy_address', '0']]) {
      const res = await request(t.app).post('/settings/set').set('Authorization', owner).type('form').send({ key, value, for_client_id: loginId });
      expect(res.body).toMatchObject({ stat: 'error', code: 200, argument_name: 'value' });
    }
  });
});

describe('challenge = on', () => {
  beforeAll(() => setting('challenge', 'on'));
  afterAll(() => setting('challenge', 'off'));

  it('sign-in, registration, password reset and email codes refuse a request without a solution: 100 naming altcha, with a message for the person', async () => {
    const calls = [
      () => signIn('pow@example.com', PASSWORD),
      () => post('/oauth/register_native_traditional', { client_id: loginId, locale: 'en-US', emailAddress: 'new-pow@example.com', newPassword: PASSWORD, newPasswordConfirm: PASSWORD, firstName: 'A', lastName: 'B', displayName: 'ab' }),
      () => post('/oauth/forgot_password_native', { client_id: loginId, locale: 'en-US', redirect_uri: 'https://app.example.com/reset', forgotPasswordEmailAddress: 'pow@example.com' }),
    ];
    for (const call of calls) {
      const res = await call();
      expect(res.body).toMatchObject({ stat: 'error', code: 100, error: 'missing_argument', argument_name: 'altcha' });
    }
    // the email code's begin too, once the client offers it
    await setting('email_code_sign_in', 'on');
    expect((await post('/oauth/email_code_begin', { client_id: loginId, locale: 'en-US', email: 'pow@example.com' })).body).toMatchObject({ code: 100, argument_name: 'altcha' });
    expect((await post('/oauth/email_code_begin', { client_id: loginId, locale: 'en-US', email: 'pow@example.com', altcha: await solved() })).body).toMatchObject({ stat: 'ok' });
  });

  it('a solved challenge lets the request through once; replayed, it is refused', async () => {
    const altcha = await solved();
    expect((await signIn('pow@example.com', PASSWORD, { altcha })).body).toMatchObject({ stat: 'ok', access_token: expect.any(String) });
    const again = await signIn('pow@example.com', PASSWORD, { altcha });
    expect(again.body).toMatchObject({ stat: 'error', code: 200, error: 'invalid_argument', argument_name: 'altcha', message: expect.any(String) });
    expect(again.body.error_description).toMatch(/used already/);
  });

  it('20 parallel requests with one solution: one goes through', async () => {
    const altcha = await solved();
    const answers = await Promise.all(Array.from({ length: 20 }, () => signIn('pow@example.com', PASSWORD, { altcha })));
    expect(answers.filter((r) => r.body.stat === 'ok')).toHaveLength(1);
    for (const r of answers.filter((a) => a.body.stat !== 'ok')) expect(r.body).toMatchObject({ code: 200, argument_name: 'altcha' });
  });

  it('refuses a challenge of another application, of another client, expired, unsolved, or not a payload', async () => {
    // another application's login client, its challenge solved
    const other = await createApp(t.runtime, 'other');
    const otherOwner = basic(other.clients.owner.client_id, other.clients.owner.client_secret);
    const otherLogin = other.clients.login.client_id;
    const set = await request(t.app).post('/settings/set').set('Host', 'other.localhost').set('Authorization', otherOwner).type('form')
      .send({ key: 'challenge_difficulty', value: '50', for_client_id: otherLogin });
    expect(set.body.stat).toBe('ok');
    const foreign = await request(t.app).get('/oauth/challenge').set('Host', 'other.localhost').query({ client_id: otherLogin });
    let challenge = { parameters: foreign.body.parameters, signature: foreign.body.signature } as Challenge;
    // made for another client (its data names it): refused before anything is checked
    const res = await signIn('pow@example.com', PASSWORD, { altcha: payloadOf(challenge, await solveChallenge({ challenge, deriveKey })) });
    expect(res.body).toMatchObject({ code: 200, argument_name: 'altcha' });
    expect(res.body.error_description).toMatch(/another client/);
    // another application's secret, naming this client
    const otherApp = (await t.runtime.db.applications.findByName('other'))!;
    const theirs = challengeSecrets(t.runtime.services.box, otherApp.id);
    challenge = await createChallenge({
      algorithm: 'PBKDF2/SHA-256', cost: 1000, counter: 20, deriveKey, hmacSignatureSecret: theirs.signature, hmacKeySignatureSecret: theirs.key,
      expiresAt: new Date(Date.now() + 60_000), data: { client: loginId },
    });
    const signedElsewhere = await signIn('pow@example.com', PASSWORD, { altcha: payloadOf(challenge, await solveChallenge({ challenge, deriveKey })) });
    expect(signedElsewhere.body.error_description).toMatch(/did not make/);
    // expired: this application's secret, an hour ago
    const local = (await t.runtime.db.applications.findByName('local'))!;
    const ours = challengeSecrets(t.runtime.services.box, local.id);
    challenge = await createChallenge({
      algorithm: 'PBKDF2/SHA-256', cost: 1000, counter: 20, deriveKey, hmacSignatureSecret: ours.signature, hmacKeySignatureSecret: ours.key,
      expiresAt: new Date(Date.now() - 3_600_000), data: { client: loginId },
    });
    const expired = await signIn('pow@example.com', PASSWORD, { altcha: payloadOf(challenge, await solveChallenge({ challenge, deriveKey })) });
    expect(expired.body.error_description).toMatch(/expired/);
    // a solution that is not the challenge's
    const live = await request(t.app).get('/oauth/challenge').query({ client_id: loginId });
    const wrong = await signIn('pow@example.com', PASSWORD, { altcha: payloadOf({ parameters: live.body.parameters, signature: live.body.signature }, { counter: 1, derivedKey: '00'.repeat(32) }) });
    expect(wrong.body).toMatchObject({ code: 200, argument_name: 'altcha' });
    expect(wrong.body.error_description).toMatch(/not a solution/);
    for (const junk of ['not base64 at all!', Buffer.from('{"x":1}').toString('base64'), 'x'.repeat(5000)]) {
      expect((await signIn('pow@example.com', PASSWORD, { altcha: junk })).body).toMatchObject({ code: 200, argument_name: 'altcha' });
    }
  });
});

describe('challenge = when_busy', () => {
  beforeAll(async () => {
    await setting('challenge', 'when_busy');
    await setting('challenge_busy_address', '3');
  });
  afterAll(() => setting('challenge', 'off'));

  it('asks for nothing until the address\'s failed sign-ins pass the threshold, then for a solution', async () => {
    // a fresh address for this test: the failures of the tests before it are counted too
    const from = (r: request.Test) => r.set('X-Forwarded-For', '203.0.113.77');
    const signInFrom = (password: string, extra: Record<string, string> = {}) =>
      from(request(t.app).post('/oauth/auth_native_traditional').type('form')).send({ client_id: loginId, locale: 'en-US', signInEmailAddress: 'pow@example.com', currentPassword: password, ...extra });
    for (let i = 0; i < 3; i++) expect((await signInFrom('wrong password')).body).toMatchObject({ code: 210 });
    const asked = await signInFrom(PASSWORD);
    expect(asked.body).toMatchObject({ code: 100, argument_name: 'altcha' });
    expect((await signInFrom(PASSWORD, { altcha: await solved() })).body).toMatchObject({ stat: 'ok' });
  });
});
