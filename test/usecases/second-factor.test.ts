import { randomUUID } from 'node:crypto';
import { sha256Hex } from '../../src/domain/secrets';
import { totpCode } from '../../src/domain/second-factor';
import { registerWithPassword } from '../../src/usecases/login/register';
import { signIn } from '../../src/usecases/login/sign-in';
import { verifySecondFactor } from '../../src/usecases/login/verify-second-factor';
import type { Paused, SignedIn } from '../../src/usecases/login/call';
import { enrollTotp } from '../../src/usecases/factors/enroll-totp';
import { confirmTotp } from '../../src/usecases/factors/confirm-totp';
import { removeTotp } from '../../src/usecases/factors/remove-totp';
import { startTestApp, type TestApp } from '../helpers/backend';
import { failingWork, loginCall, notPaused } from '../helpers/usecases';
import { stored } from '../helpers/stored';

// The second factor's use cases called directly (docs/second-factor.md): the sign-in pauses at its
// seam, a paused sign-in finishes with the session's facts saying both factors, and every change
// of a factor is an event (the HTTP adapter and oathtool's codes: test/integration/second-factor.test.ts).

let t: TestApp;
const PASSWORD = 'correct horse battery';
beforeAll(async () => {
  t = await startTestApp({ env: { LOGIN_LIMIT_ACCOUNT: '1000/60' } });
});
afterAll(() => t.close());

const credentialOf = async (kind: 'access_token' | 'mfa_token', value: string) =>
  (await t.runtime.db.credentials.find((await t.runtime.db.applications.findByName('local'))!.id, kind, sha256Hex(value)))!;
/** A new account signed in by its registration: its address, the login call, and its access token's row. */
async function registered() {
  const email = `${randomUUID()}@example.com`;
  const call = await loginCall(t);
  const done = notPaused(await registerWithPassword(call, {
    form: { values: { emailAddress: email, newPassword: PASSWORD, newPasswordConfirm: PASSWORD, firstName: 'Ada', lastName: 'Lovelace', displayName: 'ada' } },
  }));
  return { email, call, token: await credentialOf('access_token', done.accessToken!) };
}
const form = (email: string) => ({ form: { values: { signInEmailAddress: email, currentPassword: PASSWORD } } });

it('enroll, confirm, a paused sign-in finished by a code, and removal: each a typed result or refusal, each change an event', async () => {
  const { email, call, token } = await registered();
  const { secret, uri } = await enrollTotp(call, { token });
  expect(uri).toContain(`secret=${secret}`);
  await expect(confirmTotp(call, { token, code: '000000' === totpCode(secret, new Date()) ? '111111' : '000000' }))
    .rejects.toMatchObject({ reason: 'wrong_credentials', detail: { field: 'code' } });
  const { recoveryCodes } = await confirmTotp(call, { token, code: totpCode(secret, new Date()) });
  expect(recoveryCodes).toHaveLength(10);

  // the pause is the sign-in's result, not a refusal: the API answers it as 214, a page with the code step
  const paused = await signIn(call, form(email));
  expect(paused).toMatchObject({ pause: { kind: 'second_factor', methods: ['totp', 'recovery_code'], expiresIn: 300, proven: 'the password is right' } });
  const mfaToken = (paused as Paused).pause.token;
  // the paused sign-in's row keeps no secret in clear
  expect(JSON.stringify((await credentialOf('mfa_token', mfaToken)).extra)).not.toContain(PASSWORD);

  const verified = await verifySecondFactor({ ...call, client: call.request.client }, { mfaToken, recoveryCode: recoveryCodes[0] });
  expect(verified).toMatchObject({ signedIn: { record: { email }, accessToken: expect.any(String) }, social: false });
  const signed = (verified as { signedIn: SignedIn }).signedIn;
  expect((await credentialOf('access_token', signed.accessToken!)).extra).toMatchObject({ session: { amr: ['pwd', 'otp'] } });
  await expect(verifySecondFactor({ ...call, client: call.request.client }, { mfaToken, recoveryCode: recoveryCodes[1] }))
    .rejects.toMatchObject({ reason: 'invalid', detail: { field: 'mfaToken' } });

  await removeTotp(call, { token: await credentialOf('access_token', signed.accessToken!), currentPassword: PASSWORD });
  await expect(signIn(call, form(email))).resolves.toMatchObject({ accessToken: expect.any(String) });

  // each change of a factor emailed the person, through the outbox
  const mails = (await stored(t.runtime.db).rows<{ payload: string }>("SELECT payload FROM outbox WHERE queue = 'mail'")).map((r) => JSON.parse(r.payload));
  const mine = mails.filter((m) => m.to === email).map((m) => m.template);
  expect(mine).toEqual(expect.arrayContaining(['second-factor-on', 'second-factor-off']));
});

it('a paused sign-in finishes in one transaction: a write failing at its end spends neither the mfa_token nor the code', async () => {
  const { email, call, token } = await registered();
  const { secret } = await enrollTotp(call, { token });
  // confirmed with the previous step's code, so that the current one is still to take
  await confirmTotp(call, { token, code: totpCode(secret, new Date(Date.now() - 30_000)) });
  const mfaToken = (await signIn(call, form(email)) as Paused).pause.token;
  const code = totpCode(secret, new Date());
  const lastStep = async () => (await t.runtime.db.factors.totp(call.app.id, token.entityId!))!.lastStep;
  const before = await lastStep();

  await expect(verifySecondFactor({ ...call, services: failingWork(t, 'events'), client: call.request.client }, { mfaToken, code })).rejects.toThrow('injected');
  expect((await credentialOf('mfa_token', mfaToken)).usedAt).toBeNull();
  expect(await lastStep()).toBe(before);

  // nothing of it was spent: the same token and code finish it, once
  await expect(verifySecondFactor({ ...call, client: call.request.client }, { mfaToken, code })).resolves.toMatchObject({ signedIn: { accessToken: expect.any(String) } });
  expect(await lastStep()).toBeGreaterThan(before!);
  await expect(verifySecondFactor({ ...call, client: call.request.client }, { mfaToken, code })).rejects.toMatchObject({ detail: { field: 'mfaToken' } });
});
