import { randomUUID } from 'node:crypto';
import { sha256Hex } from '../../src/domain/secrets';
import { refreshSessionKey } from '../../src/domain/tokens';
import { sign } from '../../src/domain/signature';
import { registerWithPassword } from '../../src/usecases/login/register';
import { signIn } from '../../src/usecases/login/sign-in';
import { updateProfile } from '../../src/usecases/login/update-profile';
import { Refusal } from '../../src/domain/refusal';
import { exchangeCode } from '../../src/usecases/tokens/exchange-code';
import { rotateRefreshToken } from '../../src/usecases/tokens/rotate-refresh-token';
import { refreshWithSecret } from '../../src/usecases/tokens/refresh-with-secret';
import { startTestApp, type TestApp } from '../helpers/backend';
import { loginCall, notPaused } from '../helpers/usecases';

// The login use cases called directly, as the API's and the pages' adapters call them: typed
// commands in, typed results out, on a real database (SQLite, and MariaDB when the run has one).

let t: TestApp;
const PASSWORD = 'correct horse battery';
const REDIRECT = 'https://app.example.com/done';
beforeAll(async () => {
  t = await startTestApp({ env: { LOGIN_LIMIT_ACCOUNT: '1000/60' } });
  await t.runtime.db.transaction(async (tx) => {
    const app = (await t.runtime.db.applications.findByName('local'))!;
    // the code response type needs an allowed redirect_uri
    await t.runtime.db.applications.mutateSettings(app.id, (s) => ({ ...s, redirect_uris: REDIRECT }), new Date(), tx);
  });
});
afterAll(() => t.close());

const register = async (email: string) => notPaused(await registerWithPassword(await loginCall(t), {
  form: { values: { emailAddress: email, newPassword: PASSWORD, newPasswordConfirm: PASSWORD, firstName: 'Ada', lastName: 'Lovelace', displayName: 'ada' } },
}));
const credential = async (kind: 'access_token' | 'refresh_token' | 'authorization_code' | 'refresh_secret', value: string) =>
  t.runtime.db.credentials.find((await t.runtime.db.applications.findByName('local'))!.id, kind, sha256Hex(value));

describe('sign-in: a typed command, a typed result, and the session facts on every token of the session', () => {
  it('registers and signs in with the form values; the result is the record and the tokens response_type asked for', async () => {
    const email = `${randomUUID()}@example.com`;
    const registered = await register(email);
    expect(registered.record).toMatchObject({ email, displayName: 'ada' });
    expect(registered.accessToken).toMatch(/^[0-9a-f]{40}$/);
    expect(registered.authorizationCode).toBeUndefined();

    const call = await loginCall(t, { responseType: 'code_and_token', redirectUri: REDIRECT });
    const signed = notPaused(await signIn(call, { form: { values: { signInEmailAddress: email, currentPassword: PASSWORD } } }));
    expect(signed).toEqual({ record: expect.objectContaining({ email }), accessToken: expect.any(String), authorizationCode: expect.any(String) });
  });

  it('a wrong password is refused without tokens; a refused command names the form', async () => {
    const email = `${randomUUID()}@example.com`;
    await register(email);
    const call = await loginCall(t);
    await expect(signIn(call, { form: { values: { signInEmailAddress: email, currentPassword: 'wrong password!' } } }))
      .rejects.toMatchObject({ reason: 'wrong_credentials', detail: { fields: { signInForm: [expect.any(String)] } } });
    const unknownForm = await signIn(call, { form: { name: 'noSuchForm', values: {} } }).catch((e: unknown) => e);
    expect(unknownForm).toBeInstanceOf(Refusal);
    expect(unknownForm).toMatchObject({ reason: 'invalid', detail: { field: 'form' } });
  });

  it('how and when the person signed in survive the code exchange, refresh rotation and a mobile SDK refresh', async () => {
    const email = `${randomUUID()}@example.com`;
    await register(email);
    const { services } = t.runtime;
    const call = await loginCall(t, { responseType: 'code_and_token', redirectUri: REDIRECT });
    const refreshSecret = 'a'.repeat(40);
    const signed = notPaused(await signIn(call, { form: { values: { signInEmailAddress: email, currentPassword: PASSWORD } }, refreshSecret }));
    const session = { amr: ['pwd'], auth_time: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/) };
    const code = await credential('authorization_code', signed.authorizationCode!);
    expect(code?.extra).toMatchObject({ session, authenticated_at: expect.any(String) });
    const facts = (code!.extra as { session: unknown }).session;

    // the code exchanged: both tokens carry the facts; only the access token proves a fresh sign-in
    const pair = notPaused(await exchangeCode(services, { app: call.app, client: call.request.client, code: signed.authorizationCode!, redirectUri: REDIRECT }));
    expect((await credential('access_token', pair.accessToken))?.extra).toEqual({ session: facts, authenticated_at: expect.any(String) });
    expect((await credential('refresh_token', pair.refreshToken))?.extra).toEqual({ session: facts });

    // rotated (the stored procedure on MariaDB, statements on SQLite): the same facts, no proof
    const rotated = await rotateRefreshToken(services, { app: call.app, client: call.request.client, refreshToken: pair.refreshToken, origin: {} });
    expect((await credential('access_token', rotated.accessToken))?.extra).toEqual({ session: facts });
    const again = await rotateRefreshToken(services, { app: call.app, client: call.request.client, refreshToken: rotated.refreshToken, origin: {} });
    expect((await credential('refresh_token', again.refreshToken))?.extra).toEqual({ session: facts });

    // the mobile SDK's session: the new access token and its session row carry the facts
    const date = new Date().toISOString().slice(0, 19).replace('T', ' ');
    const renewed = await refreshWithSecret(services, {
      app: call.app, client: call.request.client, accessToken: signed.accessToken!, date,
      signature: sign(refreshSecret, `refresh_access_token\n${date}\n${signed.accessToken!}\n`), origin: {},
    });
    expect((await credential('access_token', renewed.accessToken))?.extra).toEqual({ session: facts });
    expect((await credential('refresh_secret', refreshSessionKey(renewed.accessToken)))?.extra).toMatchObject({ session: facts });
  });

  it('a token that proves no recent sign-in cannot set a password without the current one', async () => {
    const email = `${randomUUID()}@example.com`;
    await register(email);
    const call = await loginCall(t, { responseType: 'code', redirectUri: REDIRECT });
    const signed = notPaused(await signIn(call, { form: { values: { signInEmailAddress: email, currentPassword: PASSWORD } } }));
    const pair = notPaused(await exchangeCode(t.runtime.services, { app: call.app, client: call.request.client, code: signed.authorizationCode!, redirectUri: REDIRECT }));
    const rotated = await rotateRefreshToken(t.runtime.services, { app: call.app, client: call.request.client, refreshToken: pair.refreshToken, origin: {} });
    await expect(updateProfile(await loginCall(t), {
      accessToken: rotated.accessToken, form: { name: 'newPasswordForm', values: { newPassword: 'another long password', newPasswordConfirm: 'another long password' } },
    })).rejects.toMatchObject({ reason: 'invalid', detail: { field: 'form' } });
    // the fresh one from the exchange may
    await expect(updateProfile(await loginCall(t), {
      accessToken: pair.accessToken, form: { name: 'newPasswordForm', values: { newPassword: 'another long password', newPasswordConfirm: 'another long password' } },
    })).resolves.toEqual({ ignoredFields: [] });
  });
});
