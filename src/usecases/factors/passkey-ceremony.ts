import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import { brandOf } from '../../domain/brand';
import type { Client } from '../../domain/clients';
import { isoBase64URL } from '@simplewebauthn/server/helpers';
import { PASSKEY_CHALLENGE_SECONDS, challengeOf, relyingPartyOf, userHandleOf, verifiedAssertion, type RelyingParty } from '../../domain/passkeys';
import { Refusal, invalidField } from '../../domain/refusal';
import type { UserRecord } from '../../domain/storage/records';
import { textsOf } from '../../texts';
import { sha256Hex } from '../../domain/secrets';
import type { StoredCredential } from '../../domain/storage/credentials';
import type { CallContext } from '../services';

/**
 * What the passkey use cases share (docs/passkeys.md): the relying party of the application, and
 * the challenge of a ceremony (kind `passkey_challenge`, 5 minutes, one use) with what it is for.
 */

/** What a challenge was issued for: adding a passkey to its account, a sign-in, or the second factor of a paused one. */
export type Ceremony = 'register' | 'sign_in' | 'second_factor';

/** The relying party of the call's application: its pages' origin and its login clients' `allowed_origins`. */
export async function relyingParty(ctx: CallContext<'baseUrls' | 'db'>): Promise<RelyingParty> {
  const clients = await ctx.services.db.clients.list(ctx.app.id);
  const settings = [ctx.app.settings['allowed_origins'], ...clients.filter((c) => c.features.includes('login_client')).map((c) => c.settings['allowed_origins'])];
  return relyingPartyOf(ctx.app, new URL(ctx.services.baseUrls.of(ctx.app.name)).origin, brandOf(ctx.app).name, settings);
}

/** Stores the challenge of a ceremony for `client` (and the account it is limited to). */
export async function storeChallenge(ctx: CallContext<'tokens' | 'work'>, challenge: string, ceremony: Ceremony, client: Client, entityId: number | null): Promise<void> {
  const { work, tokens } = ctx.services;
  await work.run(({ tx }) => tokens.issueAll([{
    issue: { kind: 'passkey_challenge', app: ctx.app, entityId, client, seconds: PASSKEY_CHALLENGE_SECONDS, extra: { ceremony } },
    value: challenge,
  }], tx));
}

/**
 * Spends the challenge `challenge` of `ceremony` for `client`: its row, or a refusal naming `field`.
 * Spent before the signature is checked: a credential is checked once, whatever it is.
 */
export async function spendChallenge(
  ctx: CallContext<'clock' | 'db' | 'work'>, challenge: string | undefined, ceremony: Ceremony, client: Client, field: string,
): Promise<StoredCredential> {
  const { db, clock, work } = ctx.services;
  const spent = () => invalidField(field, 'names no live challenge of this client: it is unknown, expired (5 minutes), already used or for another step; begin again');
  if (challenge === undefined || challenge.length > 512) throw spent();
  const hash = sha256Hex(challenge);
  const row = await db.credentials.findActive(ctx.app.id, 'passkey_challenge', hash, clock.now());
  if (!row || row.clientId !== client.id || row.extra?.ceremony !== ceremony) throw spent();
  if (!(await work.run(({ tx }) => db.credentials.consume(ctx.app.id, 'passkey_challenge', hash, clock.now(), tx, client.id)))) throw spent();
  return row;
}

/**
 * Spends `challengeToken`, the challenge of a sign-in's assertion (`sign_in` or `second_factor`):
 * the credential must have signed that very challenge (200 naming `credential` otherwise).
 */
export function spendAssertionChallenge(
  ctx: CallContext<'clock' | 'db' | 'work'>, credential: { challenge: string }, challengeToken: string, ceremony: 'sign_in' | 'second_factor', client: Client,
): Promise<StoredCredential> {
  if (credential.challenge !== challengeToken) throw invalidField('credential', 'answers another challenge than challenge_token; sign the options of that challenge');
  return spendChallenge(ctx, challengeToken, ceremony, client, 'challengeToken');
}

/** `credential` as the browser's PublicKeyCredential.toJSON() makes it, of the ceremony's kind; 200 naming `credential` otherwise. */
export function credentialOf<T extends RegistrationResponseJSON | AuthenticationResponseJSON>(raw: unknown, kind: 'register' | 'sign_in'): T & { challenge: string } {
  const bad = (what: string) => invalidField('credential', `${what}: send the JSON of the PublicKeyCredential the browser answered (credential.toJSON())`);
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw bad('is not a JSON object');
  const c = raw as { id?: unknown; rawId?: unknown; type?: unknown; response?: Record<string, unknown> };
  if (typeof c.id !== 'string' || c.id.length === 0 || !/^[A-Za-z0-9_-]+$/.test(c.id)) throw bad('has no id (base64url)');
  // WebAuthn allows ids of up to 1023 bytes; authenticators make 16 to 64, and the store keeps 255 characters
  if (c.id.length > 255) throw invalidField('credential', 'has an id longer than 255 characters, which this service does not keep: use another authenticator');
  if (c.type !== 'public-key') throw bad('is not of type public-key');
  if (typeof c.response !== 'object' || c.response === null) throw bad('has no response');
  const needs = kind === 'register' ? ['clientDataJSON', 'attestationObject'] : ['clientDataJSON', 'authenticatorData', 'signature'];
  const missing = needs.find((n) => typeof c.response![n] !== 'string');
  if (missing) throw bad(kind === 'register' ? `is not a registration (no response.${missing})` : `is not a sign-in's assertion (no response.${missing})`);
  const challenge = challengeOf(c as { response: { clientDataJSON: unknown } });
  if (challenge === undefined) throw bad('has client data without a challenge');
  return { ...(c as unknown as T), rawId: typeof c.rawId === 'string' ? c.rawId : c.id, clientExtensionResults: {}, challenge } as unknown as T & { challenge: string };
}

/**
 * A sign-in's assertion proven (docs/passkeys.md): the passkey of its credential id, of account
 * `entityId` when the ceremony is limited to one; the user handle, when the authenticator sent
 * one, that account's; the signature and the counter checked by @simplewebauthn/server against
 * `challenge` and the relying party; then the counter moved from the value checked (one use of a
 * counter value, however many race). 210 naming `credential` otherwise, in `locale`.
 */
export async function provePasskey(
  ctx: CallContext<'baseUrls' | 'clock' | 'db'>, challenge: string, credential: AuthenticationResponseJSON, locale: string, entityId?: number,
): Promise<{ record: UserRecord; factor: 'passkey' | 'verified_passkey' }> {
  const { db, clock } = ctx.services;
  const wrong = (why: string) => new Refusal('wrong_credentials', `the passkey does not sign in here: ${why}`, {
    field: 'credential', message: textsOf('api', locale).wrongPasskey,
  });
  const passkey = await db.passkeys.byCredential(ctx.app.id, credential.id);
  if (!passkey) throw wrong('no account of this application has registered this credential');
  if (entityId !== undefined && passkey.entityId !== entityId) throw wrong('it is another account\'s');
  const record = await db.records.find(ctx.app.id, { id: passkey.entityId });
  if (!record) throw wrong('its account is gone');
  const handle = credential.response.userHandle;
  if (handle !== undefined && handle !== isoBase64URL.fromBuffer(userHandleOf(record.uuid))) throw wrong('its user handle is not its account\'s');
  const assertion = await verifiedAssertion(await relyingParty(ctx), challenge, credential, passkey);
  if ('error' in assertion) throw wrong(assertion.error);
  if (!(await db.passkeys.useAlone(ctx.app.id, passkey.id, passkey.counter, assertion.counter, assertion.backedUp, clock.now()))) {
    throw wrong('another sign-in used this signature counter first');
  }
  return { record, factor: assertion.userVerified ? 'verified_passkey' : 'passkey' };
}
