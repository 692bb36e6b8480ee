import { randomUUID } from 'node:crypto';
import { sha256Hex } from '../../src/domain/secrets';
import { Refusal } from '../../src/domain/refusal';
import { registerWithPassword } from '../../src/usecases/login/register';
import { beginPasskeyRegistration } from '../../src/usecases/factors/begin-passkey-registration';
import { finishPasskeyRegistration } from '../../src/usecases/factors/finish-passkey-registration';
import { listPasskeys, removePasskey, renamePasskey } from '../../src/usecases/factors/manage-passkeys';
import { beginPasskeySignIn } from '../../src/usecases/login/begin-passkey-sign-in';
import { passkeySignIn } from '../../src/usecases/login/passkey-sign-in';
import { startTestApp, type TestApp } from '../helpers/backend';
import { loginCall, notPaused } from '../helpers/usecases';

// The passkey use cases called directly (docs/passkeys.md): typed results and refusals, the
// challenge kept as a credential, the account's own passkeys only. The ceremonies with a real
// authenticator (Chromium's virtual one) are in test/e2e/passkeys-browser.test.ts.

let t: TestApp;
const PASSWORD = 'correct horse battery';
beforeAll(async () => {
  t = await startTestApp({ env: { LOGIN_LIMIT_ADDRESS: '1000/60' } });
});
afterAll(() => t.close());

async function account() {
  const call = await loginCall(t);
  const email = `${randomUUID()}@example.com`;
  const registered = notPaused(await registerWithPassword(call, {
    form: { values: { emailAddress: email, newPassword: PASSWORD, newPasswordConfirm: PASSWORD, firstName: 'Ada', lastName: 'Lovelace', displayName: 'ada' } },
  }));
  const token = (await t.runtime.db.credentials.find(call.app.id, 'access_token', sha256Hex(registered.accessToken!)))!;
  return { call, email, token };
}

it('a registration begins with options for this relying party and this account, its challenge kept as this client\'s credential', async () => {
  const { call, email, token } = await account();
  const options = await beginPasskeyRegistration(call, { token });
  expect(options).toMatchObject({
    rp: { id: 'localhost', name: 'Gatehouse' }, user: { name: email }, excludeCredentials: [],
    authenticatorSelection: { residentKey: 'preferred', userVerification: 'preferred' }, timeout: 300_000,
  });
  const row = await t.runtime.db.credentials.find(call.app.id, 'passkey_challenge', sha256Hex(options.challenge));
  expect(row).toMatchObject({ entityId: token.entityId, clientId: token.clientId, extra: { ceremony: 'register' } });
  // a finish with a credential that is no registration: refused, naming it
  await expect(finishPasskeyRegistration(call, { token, credential: { id: 'x', type: 'public-key', response: {} } }))
    .rejects.toMatchObject({ reason: 'invalid', detail: { field: 'credential' } });
});

it('listing, renaming and removing refuse what is not the account\'s', async () => {
  const { call, token } = await account();
  expect(await listPasskeys(call, { token })).toEqual([]);
  await expect(renamePasskey(call, { token, passkeyId: 1, name: 'x' })).rejects.toMatchObject({ reason: 'invalid', detail: { field: 'passkeyId' } });
  await expect(renamePasskey(call, { token, passkeyId: 1, name: '   ' })).rejects.toMatchObject({ reason: 'invalid', detail: { field: 'name' } });
  await expect(removePasskey(call, { token, passkeyId: 1 })).rejects.toBeInstanceOf(Refusal);
});

it('a sign-in begins for any passkey, or an identifier\'s (a decoy for an unknown one); a credential for an unknown challenge is refused', async () => {
  const { call, email } = await account();
  const client = { ...call, client: call.request.client };
  const any = await beginPasskeySignIn(client, {});
  expect(any.options.allowCredentials ?? []).toEqual([]);
  expect(any.challengeToken).toBe(any.options.challenge);
  const known = await beginPasskeySignIn(client, { identifier: email });
  const unknown = await beginPasskeySignIn(client, { identifier: 'nobody@example.com' });
  // an account without passkeys and an unknown one look alike: credential ids each, unlike each other
  expect(known.options.allowCredentials!.length).toBeGreaterThan(0);
  expect(unknown.options.allowCredentials!.length).toBeGreaterThan(0);
  expect(known.options.allowCredentials).not.toEqual(unknown.options.allowCredentials);
  const clientData = (challenge: string) => Buffer.from(JSON.stringify({ type: 'webauthn.get', challenge })).toString('base64url');
  const credential = { id: 'abc', type: 'public-key', response: { clientDataJSON: clientData('nope'), authenticatorData: 'x', signature: 'y' } };
  await expect(passkeySignIn(call, { challengeToken: 'nope', credential })).rejects.toMatchObject({ reason: 'invalid', detail: { field: 'challengeToken' } });
  await expect(passkeySignIn(call, { challengeToken: any.challengeToken, credential })).rejects.toMatchObject({ reason: 'invalid', detail: { field: 'credential' } });
});

it('a sign-in\'s options for an identifier say nothing about the account: a real passkey\'s and a decoy\'s look alike in every field', async () => {
  const { call, email } = await account();
  const client = { ...call, client: call.request.client };
  const record = (await t.runtime.db.records.find(call.app.id, { email }))!;
  // a security key's passkey: its transports are what would tell it from the decoys (internal, hybrid) before
  const credentialId = Buffer.from('a real credential id of 32 bytes').toString('base64url');
  await t.runtime.services.work.run(({ tx }) => t.runtime.db.passkeys.add({
    applicationId: call.app.id, entityId: record.id, credentialId, publicKey: 'x', counter: 0, deviceType: 'singleDevice', backedUp: false,
    transports: ['usb', 'nfc'], aaguid: '', name: 'key', createdAt: new Date(),
  }, tx));
  const real = (await beginPasskeySignIn(client, { identifier: email })).options;
  const shape = (o: typeof real) => ({ ...o, challenge: typeof o.challenge, allowCredentials: o.allowCredentials!.map((c) => ({ ...c, id: typeof c.id })) });
  expect(real.allowCredentials).toEqual([{ id: credentialId, type: 'public-key' }]);
  const lengths = new Set<number>();
  for (let i = 0; i < 40; i++) {
    const decoy = (await beginPasskeySignIn(client, { identifier: `nobody-${i}@example.com` })).options;
    // the same fields, the same kinds of value, in the same order: only the values differ
    expect(JSON.stringify(Object.keys(decoy))).toBe(JSON.stringify(Object.keys(real)));
    expect(shape({ ...decoy, allowCredentials: decoy.allowCredentials!.slice(0, 1) })).toEqual(shape(real));
    for (const c of decoy.allowCredentials!) {
      expect(Object.keys(c)).toEqual(['id', 'type']);
      const id = Buffer.from(c.id, 'base64url');
      lengths.add(id.length);
      // random throughout, as a real one is: no part repeats another
      if (id.length > 32) expect(id.subarray(32)).not.toEqual(id.subarray(0, id.length - 32));
    }
    // the same identifier gets the same decoys every time
    if (i === 0) expect((await beginPasskeySignIn(client, { identifier: 'nobody-0@example.com' })).options.allowCredentials).toEqual(decoy.allowCredentials);
  }
  // ids of the lengths authenticators make, not one length that marks a decoy
  expect(lengths.size).toBeGreaterThan(2);
  for (const n of lengths) expect([16, 20, 32, 48, 64]).toContain(n);
});
