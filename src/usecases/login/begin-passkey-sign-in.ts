import { BUDGET_KEYS } from '../../domain/budget-keys';
import type { PublicKeyCredentialRequestOptionsJSON } from '@simplewebauthn/server';
import type { Client } from '../../domain/clients';
import { authenticationOptions } from '../../domain/passkeys';
import { Refusal, invalidField } from '../../domain/refusal';
import { sha256Hex } from '../../domain/secrets';
import type { StoredPasskey } from '../../domain/storage/factors';
import type { CallContext } from '../services';
import { relyingParty, storeChallenge } from '../factors/passkey-ceremony';
import { pausedMethods } from './second-factor-step';

/** The lengths of credential ids that authenticators make (platform authenticators, password managers, security keys), in bytes. */
const CREDENTIAL_ID_BYTES = [16, 20, 32, 32, 48, 64];

/**
 * The passkeys an account that has none, or no account, seems to have: one or two credential ids
 * no authenticator holds, of the lengths authenticators make, derived from `identifier` with the
 * service's key, so the same identifier gets the same ones every time.
 */
function decoyPasskeys(ctx: CallContext<'box'>, identifier: string): StoredPasskey[] {
  const seed = Buffer.from(ctx.services.box.tag(identifier.toLowerCase(), 'passkey decoy'), 'base64url');
  const count = seed[0] % 4 === 0 ? 2 : 1;
  return Array.from({ length: count }, (_, i) => {
    // 64 bytes from two keyed digests (a real id is random throughout: no half repeats the other), cut to its length
    const bytes = Buffer.concat([0, 1].map((half) => Buffer.from(ctx.services.box.tag(`${identifier.toLowerCase()}\n${i}\n${half}`, 'passkey decoy id'), 'base64url')));
    const id = bytes.subarray(0, CREDENTIAL_ID_BYTES[seed[1 + i] % CREDENTIAL_ID_BYTES.length]).toString('base64url');
    return {
      id: 0, applicationId: ctx.app.id, entityId: 0, credentialId: id, publicKey: '', counter: 0, deviceType: 'multiDevice', backedUp: true,
      transports: [], aaguid: '', name: '', createdAt: new Date(0), lastUsedAt: null,
    };
  });
}

/** What a passkey sign-in starts from: nothing (any passkey of the service), the identifier typed, or the mfa_token of a sign-in paused for its second factor. */
export interface BeginPasskeySignIn { identifier?: string; mfaToken?: string }

/**
 * Starts a sign-in with a passkey (docs/passkeys.md): the options navigator.credentials.get()
 * takes and their challenge, kept 5 minutes for this client (`challengeToken`). Without an
 * identifier any passkey of the service answers (a discoverable credential, or the browser's
 * autofill); with one, that account's passkeys are listed; with an mfa_token, the passkeys of the
 * paused sign-in's account, as its second factor. Each begin takes one attempt from the client
 * address's sign-in budget (LOGIN_LIMIT_ADDRESS's size, a budget of its own).
 */
export async function beginPasskeySignIn(
  ctx: CallContext<'baseUrls' | 'box' | 'clock' | 'db' | 'loginLimits' | 'rateLimiter' | 'tokens' | 'work'> & { client: Client }, command: BeginPasskeySignIn,
): Promise<{ options: PublicKeyCredentialRequestOptionsJSON; challengeToken: string }> {
  const { db, clock, rateLimiter, loginLimits } = ctx.services;
  // each begin stores a challenge: a client address gets as many as it gets password attempts
  await rateLimiter.take([[BUDGET_KEYS.passkeyAddress(ctx.app.id, ctx.clientAddress), loginLimits.address]]);
  let allowed: StoredPasskey[] | undefined;
  let entityId: number | null = null;
  if (command.mfaToken !== undefined) {
    const row = await db.credentials.findActive(ctx.app.id, 'mfa_token', sha256Hex(command.mfaToken), clock.now());
    if (!row || row.clientId !== ctx.client.id || row.entityId === null) {
      throw invalidField('mfaToken', 'is invalid, expired or already used (a sign-in waits 5 minutes for its second factor); sign in again');
    }
    entityId = row.entityId;
    allowed = await db.passkeys.list(ctx.app.id, entityId);
    if (allowed.length === 0 || !pausedMethods(row).includes('passkey')) {
      throw new Refusal('nothing_to_do', 'a passkey does not finish this sign-in: finish it with a code (code or recovery_code)');
    }
  } else if (command.identifier !== undefined && command.identifier.trim() !== '') {
    const identifier = command.identifier.trim();
    if (identifier.length > 254) throw invalidField('identifier', 'is longer than 254 characters');
    const record = await db.records.find(ctx.app.id, identifier.includes('@') ? { email: identifier } : { username: identifier });
    // the same lookups whoever it is (no account reads an empty list), so the time taken does not tell either
    const own = await db.passkeys.list(ctx.app.id, record?.id ?? 0);
    // an unknown account, or one without passkeys, gets passkeys that exist nowhere, the same for
    // the same identifier every time, listed as real ones are (ids only, no transports): the answer does not tell who has an account
    allowed = own.length > 0 ? own : decoyPasskeys(ctx, identifier);
  }
  // the transports of an account's passkeys only for the second factor of a sign-in whose password was right
  const options = await authenticationOptions(await relyingParty(ctx), allowed, entityId !== null);
  await storeChallenge(ctx, options.challenge, entityId === null ? 'sign_in' : 'second_factor', ctx.client, entityId);
  return { options, challengeToken: options.challenge };
}
