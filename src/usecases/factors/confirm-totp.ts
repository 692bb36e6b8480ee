import type { StoredCredential } from '../../domain/storage/credentials';
import type { UserRecord } from '../../domain/storage/records';
import { Refusal } from '../../domain/refusal';
import { matchTotp, openTotpSecret, secondFactorPolicy } from '../../domain/second-factor';
import { event, recordSubject } from '../../domain/events';
import { displayName, type MailRequest } from '../../domain/mail';
import { recordLocale } from '../../domain/email-change';
import { asAccount, type CallContext } from '../services';
import { guardPasswordGuesses, accountSubject } from '../login/password-guesses';
import { accountOfToken } from './account';
import { renewRecoveryCodes } from './recovery-codes';
import { wrongCode } from './totp-codes';
import { markEnrolled, sessionAfterEnrollment } from '../login/enrolled-sign-in';
import type { SignedIn } from '../login/call';

/** The email that tells the person how their sign-in changed, when the account has an address. */
export const factorMail = (ctx: CallContext<never>, record: UserRecord, template: 'second-factor-on' | 'second-factor-off'): { mail: MailRequest } | undefined =>
  (record.email ? { mail: { app: ctx.app, template, locale: recordLocale(record), to: record.email, name: displayName(record) } } : undefined);

/**
 * Turns the authenticator on (docs/second-factor.md): a first code from it proves it holds the
 * secret. In one unit of work the authenticator is confirmed (that code's step is then used), the
 * account gets RECOVERY_CODES new recovery codes, and the person is told by email. Answers the
 * recovery codes, shown once. Codes are guessed against the account's password budget.
 */
export async function confirmTotp(
  ctx: CallContext<'box' | 'clock' | 'db' | 'flows' | 'joinableDomains' | 'logger' | 'loginLimits' | 'rateLimiter' | 'socialTokens' | 'tokens' | 'versions' | 'work'>,
  command: { token: StoredCredential; code: string; continueSignIn?: boolean },
): Promise<{ recoveryCodes: string[]; signedIn?: SignedIn }> {
  const { db, clock, work, box } = ctx.services;
  if (secondFactorPolicy(ctx.app) === 'off') throw new Refusal('not_offered', 'this application does not offer a second factor (its setting second_factor is off)');
  const { record, client } = await accountOfToken(ctx, command.token);
  const totp = await db.factors.totp(ctx.app.id, record.id);
  if (!totp) throw new Refusal('nothing_to_do', 'this account has no authenticator being added; start with totp_enroll_native');
  if (totp.confirmedAt) throw new Refusal('nothing_to_do', 'this account\'s authenticator is on already');
  const guesses = await guardPasswordGuesses(ctx, accountSubject(record, ''));
  const step = matchTotp(openTotpSecret(box, ctx.app.id, record.id, totp.secretSealed), command.code, clock.now());
  if (step === undefined) throw wrongCode('code', recordLocale(record));
  await guesses.succeeded();
  const acting = asAccount(ctx, record.id, client);
  const recoveryCodes = await work.run(async (uow) => {
    const locked = await db.records.findForUpdate(ctx.app.id, record.id, uow.tx);
    if (!locked) throw new Refusal('gone', 'the account was deleted meanwhile');
    // the secret the code was checked against: one enrolled again meanwhile is not turned on
    if (!(await db.factors.confirmTotp(ctx.app.id, record.id, totp.secretSealed, step, clock.now(), uow.tx))) {
      throw new Refusal('nothing_to_do', 'this account\'s authenticator is on already, or was enrolled again meanwhile: confirm with the newest one');
    }
    const codes = await renewRecoveryCodes(ctx, uow, record, client);
    const at = clock.now();
    uow.record(
      event('account.second_factor_added', ctx.app.id, at, acting, recordSubject(record.id), { method: 'totp' }, factorMail(ctx, record, 'second-factor-on')),
      event('account.recovery_codes_renewed', ctx.app.id, at, acting, recordSubject(record.id), { count: codes.length }),
    );
    // added with an enroll_token: the sign-in that waits with it may go on with this factor
    await markEnrolled(ctx, uow, command.token, 'totp');
    return codes;
  });
  // the code just typed proved the factor: the sign-in sent to add it goes on (the API's), never asking for the password again
  const signedIn = command.continueSignIn ? await sessionAfterEnrollment({ ...ctx, client }, command.token) : undefined;
  if (signedIn) return { recoveryCodes, signedIn };
  return { recoveryCodes };
}
