import { randomUUID } from 'node:crypto';
import { ACR_MULTI_FACTOR } from '../../src/domain/session';
import type { StoredCredential } from '../../src/domain/storage/credentials';
import { USER_TYPE } from '../../src/domain/users';
import { createRecord } from '../../src/usecases/records/create-records';
import { disableUser } from '../../src/usecases/operators/disable-user';
import { decideProviderSignIn, type ProviderSignInAsk } from '../../src/usecases/oidc/sign-in-decision';
import { localApp } from '../helpers/usecases';
import { operatorActing } from '../../src/usecases/operators/deps';

// The OpenID sign-in's login step decided by its use case, called directly: which browser session
// answers an app's sign-in, and when the person signs in again (the browser's path through the
// provider: test/integration/oidc-provider.test.ts, test/e2e/oidc-browser.test.ts).

const local = localApp();

const UID = 'interaction-1';
const AUTH_TIME = '2026-11-27T10:00:00.000Z';

async function account() {
  const record = await createRecord(local.t.runtime.services, {
    app: local.app, origin: {}, client: { id: 0, clientId: local.t.local.clients.owner.client_id },
    record: { entity: { applicationId: local.app.id, typeName: USER_TYPE, uuid: randomUUID(), email: `${randomUUID()}@example.com`, username: null, emailVerified: null, attributes: {} } },
  });
  return record;
}

/** A browser session of `entityId` signed in with `amr` (made for this interaction when `fresh`). */
const session = (entityId: number, amr: string[], fresh = false): StoredCredential => ({
  id: 1, valueHash: 'x', applicationId: local.app.id, kind: 'browser_session', entityId, clientId: null, forClientId: null, redirectUri: null,
  extra: { session: { amr, auth_time: AUTH_TIME }, ...(fresh && { interaction: UID }) }, family: null, expiresAt: new Date(Date.now() + 60_000), usedAt: null,
});
const ask = (over: Partial<ProviderSignInAsk>): ProviderSignInAsk =>
  ({ app: local.app, interactionUid: UID, reasons: ['no_session'], claims: undefined, acrValues: undefined, session: undefined, ...over });
const decide = (over: Partial<ProviderSignInAsk>) => decideProviderSignIn(local.t.runtime.services, ask(over));

it('no browser session: the person signs in; a session answers a plain sign-in with how and when it signed in', async () => {
  const record = await account();
  await expect(decide({})).resolves.toEqual({ kind: 'sign_in' });
  await expect(decide({ session: session(record.id, ['pwd']) }))
    .resolves.toEqual({ kind: 'session', accountId: record.uuid, amr: ['pwd'], authTime: Date.parse(AUTH_TIME) / 1000 });
});

it('prompt=login or max_age: a session made before this sign-in does not answer it; the one made for it does', async () => {
  const record = await account();
  await expect(decide({ reasons: ['login_prompt'], session: session(record.id, ['pwd']) })).resolves.toEqual({ kind: 'sign_in' });
  await expect(decide({ reasons: ['login_prompt'], session: session(record.id, ['pwd'], true) })).resolves.toMatchObject({ kind: 'session', accountId: record.uuid });
});

it('a stronger sign-in: met, it says its acr; essential and unmet just after signing in for it, unmet; a wish an account cannot give, the session stands', async () => {
  const record = await account();
  const essential = { id_token: { acr: { essential: true, values: [ACR_MULTI_FACTOR] } } };
  // the provider's new session of a browser whose sign-in meets it: the acr it met
  await expect(decide({ reasons: ['no_session'], claims: essential, session: session(record.id, ['pwd', 'otp']) }))
    .resolves.toMatchObject({ kind: 'session', acr: ACR_MULTI_FACTOR });
  // a session that falls short: the person signs in again, for it
  await expect(decide({ reasons: ['gatehouse_acr'], claims: essential, session: session(record.id, ['pwd'], true) })).resolves.toEqual({ kind: 'unmet' });
  await expect(decide({ reasons: ['gatehouse_acr'], claims: essential, session: session(record.id, ['pwd']) })).resolves.toEqual({ kind: 'sign_in' });
  // acr_values is a wish: an account with no second factor to step up to keeps its session, with no acr
  const wish = await decide({ reasons: ['gatehouse_acr'], acrValues: ACR_MULTI_FACTOR, session: session(record.id, ['pwd']) });
  expect(wish).toMatchObject({ kind: 'session', accountId: record.uuid });
  expect(wish).not.toHaveProperty('acr');
});

it('a disabled account\'s session answers nothing', async () => {
  const record = await account();
  await disableUser(local.t.runtime.services, { app: local.app, entityId: record.id, acting: operatorActing('test') });
  await expect(decide({ session: session(record.id, ['pwd']) })).resolves.toEqual({ kind: 'sign_in' });
});
