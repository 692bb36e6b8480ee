import { randomUUID } from 'node:crypto';
import { sha256Hex } from '../../src/domain/secrets';
import { registerWithPassword } from '../../src/usecases/login/register';
import { signIn } from '../../src/usecases/login/sign-in';
import { browserSessionOf, endSessions, finishOffer, listSessions, startBrowserSession } from '../../src/usecases/account/browser-sessions';
import { accountOverview } from '../../src/usecases/account/overview';
import { exchangeCode } from '../../src/usecases/tokens/exchange-code';
import { manualClock, startTestApp, type TestApp } from '../helpers/backend';
import { loginCall, notPaused } from '../helpers/usecases';
import { stored } from '../helpers/stored';

// The account page's browser sessions as use cases (docs/account-page.md), without HTTP: a code
// of the hosted sign-in becomes a session once, which lives while used, lists beside the
// account's apps, and ends alone or with the others (the page: test/integration/account-page.test.ts).

const clock = manualClock();
let t: TestApp;
const PASSWORD = 'correct horse battery';
const CALLBACK = 'http://localhost/account/callback';
beforeAll(async () => {
  t = await startTestApp({ clock, env: { LOGIN_LIMIT_ACCOUNT: '1000/60' } });
});
afterAll(() => t.close());

/** A new account, and an authorization code of a password sign-in for the account page's callback. */
async function signedInCode() {
  const email = `${randomUUID()}@example.com`;
  const call = await loginCall(t, { responseType: 'code', redirectUri: CALLBACK });
  await registerWithPassword(await loginCall(t), {
    form: { values: { emailAddress: email, newPassword: PASSWORD, newPasswordConfirm: PASSWORD, firstName: 'Ada', lastName: 'Lovelace', displayName: 'ada' } },
  });
  const signed = notPaused(await signIn(call, { form: { values: { signInEmailAddress: email, currentPassword: PASSWORD } } }));
  return { call, email, code: String(signed.authorizationCode) };
}

it('a code becomes one session, once, even when 20 callbacks race with it; a replay revokes the session it made', async () => {
  const { call, code } = await signedInCode();
  const client = call.request.client;
  const tries = await Promise.allSettled(Array.from({ length: 20 }, () => startBrowserSession(call, { client, code, redirectUri: CALLBACK, device: 'Firefox / Linux' })));
  const won = tries.filter((r): r is PromiseFulfilledResult<{ value: string; expiresAt: Date }> => r.status === 'fulfilled');
  expect(won).toHaveLength(1);
  for (const lost of tries.filter((r) => r.status === 'rejected')) expect((lost as PromiseRejectedResult).reason).toMatchObject({ reason: 'no_grant' });
  // the value is the cookie's only: the row holds its hash, the sign-in's proof and the device
  const [row] = await stored(t.runtime.db).rows<{ extra: string; value_hash: string }>("SELECT extra, value_hash FROM credentials WHERE kind = 'browser_session' AND value_hash = ?", [sha256Hex(won[0].value.value)]);
  expect(JSON.parse(row.extra)).toMatchObject({ device: 'Firefox / Linux', session: { amr: ['pwd'], factors: ['password'] }, authenticated_at: expect.any(String) });
  expect(JSON.stringify(row)).not.toContain(won[0].value.value);
  // the code once more, after it was spent: refused, and the session it made ends (as the tokens of a replayed code do)
  await expect(startBrowserSession(call, { client, code, redirectUri: CALLBACK, device: '' })).rejects.toMatchObject({ reason: 'no_grant' });
  expect(await browserSessionOf(call, won[0].value.value)).toBeUndefined();
  // a redirect URI other than the code's, or another client's code, starts nothing
  const other = await signedInCode();
  await expect(startBrowserSession(other.call, { client, code: other.code, redirectUri: 'http://localhost/elsewhere', device: '' })).rejects.toMatchObject({ reason: 'redirect_mismatch' });
});

it('a session lives while used (30 minutes idle), lists with the account\'s apps, and ends alone or with the others', async () => {
  const { call, code, email } = await signedInCode();
  const client = call.request.client;
  const { value } = await startBrowserSession(call, { client, code, redirectUri: CALLBACK, device: 'Chrome / Android' });
  const session = (await browserSessionOf(call, value))!;
  expect(session.entityId).not.toBeNull();
  expect(await browserSessionOf(call, 'not-a-session')).toBeUndefined();
  // an app's session of the same account, and a second browser
  const appCode = notPaused(await signIn(await loginCall(t, { responseType: 'code', redirectUri: 'http://localhost/app' }), { form: { values: { signInEmailAddress: email, currentPassword: PASSWORD } } }));
  const pair = notPaused(await exchangeCode(t.runtime.services, { app: call.app, client, code: String(appCode.authorizationCode), redirectUri: 'http://localhost/app' }));
  const second = notPaused(await signIn(call, { form: { values: { signInEmailAddress: email, currentPassword: PASSWORD } } }));
  const other = await startBrowserSession(call, { client, code: String(second.authorizationCode), redirectUri: CALLBACK, device: 'Safari / iOS' });
  const listed = await listSessions(call, { token: session });
  expect(listed.map((s) => [s.kind, s.current, s.device ?? null])).toEqual(expect.arrayContaining([
    ['browser', true, 'Chrome / Android'], ['browser', false, 'Safari / iOS'], ['app', false, null],
  ]));
  expect(listed).toHaveLength(3);
  expect(pair.refreshToken).toBeDefined();

  // one ended alone: that browser only
  const safari = listed.find((s) => s.device === 'Safari / iOS')!;
  await expect(endSessions(call, { token: session, session: safari.id })).resolves.toEqual({ spent: 1 });
  expect(await browserSessionOf(call, other.value)).toBeUndefined();
  await expect(endSessions(call, { token: session, session: safari.id })).rejects.toMatchObject({ reason: 'invalid', detail: { field: 'session' } });
  // the others: the app's tokens; this one stays
  const { spent } = await endSessions(call, { token: session, others: true });
  expect(spent).toBeGreaterThanOrEqual(2);
  expect((await listSessions(call, { token: session })).map((s) => s.current)).toEqual([true]);

  // idle: used within 30 minutes it lives on, past them it is gone
  clock.advance(20 * 60_000);
  expect(await browserSessionOf(call, value)).toBeDefined();
  clock.advance(29 * 60_000);
  expect(await browserSessionOf(call, value)).toBeDefined();
  clock.advance(31 * 60_000);
  expect(await browserSessionOf(call, value)).toBeUndefined();
});

it('the overview shows how the account signs in and whether the session may change it, without a secret', async () => {
  const { call, code } = await signedInCode();
  const { value } = await startBrowserSession(call, { client: call.request.client, code, redirectUri: CALLBACK, device: '' });
  const session = (await browserSessionOf(call, value))!;
  const overview = await accountOverview(call, { token: session });
  expect(overview).toMatchObject({ hasPassword: true, totp: 'off', passkeys: [], identities: [], recoveryCodesLeft: 0, policy: 'optional', fresh: true });
  expect(overview.record.passwordHash).toBeNull();
  clock.advance(6 * 60_000);
  expect((await accountOverview(call, { token: (await browserSessionOf(call, value))! })).fresh).toBe(false);
});

it('a registration\'s offer: its session gives its app one code, with the sign-in\'s proof, and ends; another client gets nothing', async () => {
  const { call, code } = await signedInCode();
  const client = call.request.client;
  const offer = { clientId: client.clientId, redirectUri: 'https://app.example.com/cb', state: 's-1' };
  const { value } = await startBrowserSession(call, { client, code, redirectUri: CALLBACK, device: '', offer });
  const session = (await browserSessionOf(call, value))!;
  const owner = (await t.runtime.services.clients.find(call.app.id, t.local.clients.owner.client_id))!;
  await expect(finishOffer(call, { session, client: owner })).rejects.toMatchObject({ reason: 'invalid', detail: { field: 'session' } });
  const done = await finishOffer(call, { session, client });
  expect(done.offer).toEqual(offer);
  const pair = notPaused(await exchangeCode(t.runtime.services, { app: call.app, client, code: done.code, redirectUri: offer.redirectUri }));
  const [row] = await stored(t.runtime.db).rows<{ extra: string }>("SELECT extra FROM credentials WHERE kind = 'access_token' AND value_hash = ?", [sha256Hex(pair.accessToken)]);
  expect(JSON.parse(row.extra)).toMatchObject({ authenticated_at: session.extra!.authenticated_at, session: { amr: ['pwd'] } });
  expect(await browserSessionOf(call, value)).toBeUndefined();
  await expect(finishOffer(call, { session, client })).rejects.toMatchObject({ reason: 'invalid', detail: { field: 'session' } });
  // a session without an offer gives no code
  const plain = await signedInCode();
  const other = await startBrowserSession(plain.call, { client, code: plain.code, redirectUri: CALLBACK, device: '' });
  await expect(finishOffer(call, { session: (await browserSessionOf(call, other.value))!, client })).rejects.toMatchObject({ detail: { field: 'session' } });
});
