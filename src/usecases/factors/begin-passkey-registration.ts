import type { PublicKeyCredentialCreationOptionsJSON } from '@simplewebauthn/server';
import type { StoredCredential } from '../../domain/storage/credentials';
import { FRESH_SIGN_IN_SECONDS, mayResetPassword } from '../../domain/tokens';
import { MAX_PASSKEYS, registrationOptions } from '../../domain/passkeys';
import { Refusal, invalidField } from '../../domain/refusal';
import { displayName } from '../../domain/mail';
import type { CallContext } from '../services';
import { accountOfToken } from './account';
import { relyingParty, storeChallenge } from './passkey-ceremony';

/**
 * Starts adding a passkey to the account of `token` (docs/passkeys.md): the options the browser's
 * navigator.credentials.create() takes (a resident key and user verification preferred, the
 * account's passkeys excluded), their challenge kept 5 minutes for this account and client. Adding
 * a way to sign in needs a recent proof: a token of a sign-in within the last minutes, or of a
 * password reset link.
 */
export async function beginPasskeyRegistration(
  ctx: CallContext<'baseUrls' | 'clock' | 'db' | 'tokens' | 'work'>, command: { token: StoredCredential },
): Promise<PublicKeyCredentialCreationOptionsJSON> {
  const { db, clock } = ctx.services;
  const { record, client } = await accountOfToken(ctx, command.token);
  if (!mayResetPassword(command.token, clock.now())) {
    throw invalidField('accessToken', `adding a passkey needs an access token from a sign-in within the last ${FRESH_SIGN_IN_SECONDS / 60} minutes `
      + 'or from a password reset link; sign in again, then add the passkey with the new access token');
  }
  const existing = await db.passkeys.list(ctx.app.id, record.id);
  if (existing.length >= MAX_PASSKEYS) throw new Refusal('nothing_to_do', `this account has ${MAX_PASSKEYS} passkeys, the most it keeps; remove one first`);
  const name = record.email ?? record.username ?? record.uuid;
  const options = await registrationOptions(await relyingParty(ctx), { uuid: record.uuid, name, displayName: displayName(record) || name }, existing);
  await storeChallenge(ctx, options.challenge, 'register', client, record.id);
  return options;
}
