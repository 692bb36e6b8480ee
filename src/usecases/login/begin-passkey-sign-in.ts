import type { PublicKeyCredentialRequestOptionsJSON } from '@simplewebauthn/server';
import type { Client } from '../../domain/clients';
import { authenticationOptions } from '../../domain/passkeys';
import { Refusal, invalidField } from '../../domain/refusal';
import { sha256Hex } from '../../domain/secrets';
import type { StoredPasskey } from '../../domain/storage/factors';
import type { CallContext } from '../services';
import { relyingParty, storeChallenge } from '../factors/passkey-ceremony';
import { pausedMethods } from './second-factor-step';

/** A credential id no authenticator holds, derived from `identifier` with the service's key. */
function decoyPasskey(ctx: CallContext, identifier: string): StoredPasskey {
  const id = ctx.services.box.tag(identifier.toLowerCase(), 'passkey decoy');
  return {
    id: 0, applicationId: ctx.app.id, entityId: 0, credentialId: id, publicKey: '', counter: 0, deviceType: 'multiDevice', backedUp: true,
    transports: ['internal', 'hybrid'], aaguid: '', name: '', createdAt: new Date(0), lastUsedAt: null,
  };
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
  ctx: CallContext & { client: Client }, command: BeginPasskeySignIn,
): Promise<{ options: PublicKeyCredentialRequestOptionsJSON; challengeToken: string }> {
  const { db, clock, rateLimiter, loginLimits } = ctx.services;
  // each begin stores a challenge: a client address gets as many as it gets password attempts
  await rateLimiter.take([[`passkey:address:${ctx.app.id}:${ctx.clientAddress}`, loginLimits.address]]);
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
    const own = record ? await db.passkeys.list(ctx.app.id, record.id) : [];
    // an unknown account, or one without passkeys, gets a passkey that exists nowhere, the same for
    // the same identifier every time: the answer does not tell who has an account
    allowed = own.length > 0 ? own : [decoyPasskey(ctx, identifier)];
  }
  const options = await authenticationOptions(await relyingParty(ctx), allowed);
  await storeChallenge(ctx, options.challenge, entityId === null ? 'sign_in' : 'second_factor', ctx.client, entityId);
  return { options, challengeToken: options.challenge };
}
