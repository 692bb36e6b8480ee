import type { StoredCredential } from '../../domain/storage/credentials';
import { FRESH_SIGN_IN_SECONDS, mayResetPassword } from '../../domain/tokens';
import { Refusal, invalidField } from '../../domain/refusal';
import { newTotpSecret, sealTotpSecret, secondFactorPolicy, totpUri } from '../../domain/second-factor';
import { brandOf } from '../../domain/brand';
import type { CallContext } from '../services';
import { accountOfToken } from './account';

/**
 * Starts adding an authenticator app to the account of `token` (docs/second-factor.md): a new
 * secret, sealed and stored unconfirmed, answered once with its `otpauth://` URI. Nothing changes
 * how the account signs in until a first code confirms it (confirmTotp). A change of how someone
 * signs in needs a recent proof: a token from a sign-in within the last minutes, or from a
 * password reset link.
 */
export async function enrollTotp(ctx: CallContext<'box' | 'clock' | 'db' | 'work'>, command: { token: StoredCredential }): Promise<{ secret: string; uri: string }> {
  const { db, clock, work, box } = ctx.services;
  if (secondFactorPolicy(ctx.app) === 'off') throw new Refusal('not_offered', 'this application does not offer a second factor (its setting second_factor is off)');
  const { record } = await accountOfToken(ctx, command.token);
  if (!mayResetPassword(command.token, clock.now())) {
    throw invalidField('accessToken', `adding an authenticator needs an access token from a sign-in within the last ${FRESH_SIGN_IN_SECONDS / 60} minutes `
      + 'or from a password reset link; sign in again, then enroll with the new access token');
  }
  const secret = newTotpSecret();
  const started = await work.run(({ tx }) => db.factors.startTotp(ctx.app.id, record.id, sealTotpSecret(box, ctx.app.id, record.id, secret), clock.now(), tx));
  if (!started) throw new Refusal('nothing_to_do', 'this account has an authenticator app already; remove it (totp_remove_native) before adding another');
  // the name the person knows the application by: its pages' and emails' (the app_name setting)
  const issuer = brandOf(ctx.app).name;
  const account = record.email ?? record.username ?? record.uuid;
  return { secret, uri: totpUri(secret, issuer, account) };
}
