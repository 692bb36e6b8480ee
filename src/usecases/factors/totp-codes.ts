import type { Tx } from '../../domain/storage/transactions';
import type { StoredTotp } from '../../domain/storage/factors';
import { Refusal } from '../../domain/refusal';
import { matchTotp, openTotpSecret } from '../../domain/second-factor';
import { textsOf } from '../../texts';
import type { CallContext } from '../services';

/** A code that does not prove the factor: 210 naming the field, with a message for the person in `locale`. */
export const wrongCode = (field: 'code' | 'recoveryCode', locale: string) => (field === 'code'
  ? new Refusal('wrong_credentials', 'the code is not the one the authenticator app shows now; type the current one', {
    field, message: textsOf('api', locale).wrongCode,
  })
  : new Refusal('wrong_credentials', 'the recovery code is not one of this account\'s, or was used already', {
    field, message: textsOf('api', locale).wrongRecoveryCode,
  }));

/** A right code of a time step used already (by a sign-in, an enrollment, this code before): 210 saying to wait for the next one. */
export const usedCode = (locale: string) => new Refusal('wrong_credentials', 'this code was used already (each code signs in once): wait for the next one the authenticator app shows', {
  field: 'code', message: textsOf('api', locale).codeUsed,
});

/**
 * The time step `code` proves on the account's confirmed authenticator, or why it proves nothing:
 * wrongCode when it is no code of the window, usedCode when its step is the last one taken or
 * older (a person who typed the code twice is told to wait, not that the code is wrong).
 */
export function unusedTotpStep(ctx: CallContext<'box' | 'clock'>, entityId: number, totp: StoredTotp, code: string, locale: string): number | Refusal {
  const step = matchTotp(openTotpSecret(ctx.services.box, ctx.app.id, entityId, totp.secretSealed), code, ctx.services.clock.now());
  if (step === undefined) return wrongCode('code', locale);
  return totp.lastStep !== null && step <= totp.lastStep ? usedCode(locale) : step;
}

/**
 * Takes `step` in `tx`, so that it proves one change only; usedCode when another request took it
 * (or a later one) since it was checked.
 */
export async function takeTotpStep(ctx: CallContext<'db'>, entityId: number, step: number, locale: string, tx: Tx): Promise<void> {
  if (!(await ctx.services.db.factors.takeTotpStep(ctx.app.id, entityId, step, tx))) throw usedCode(locale);
}
