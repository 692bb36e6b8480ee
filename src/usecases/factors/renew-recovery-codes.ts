import type { StoredCredential } from '../../domain/storage/credentials';
import { Refusal } from '../../domain/refusal';
import { event, recordSubject } from '../../domain/events';
import { recordLocale } from '../../domain/email-change';
import { asAccount, type CallContext } from '../services';
import { guardPasswordGuesses, accountSubject } from '../login/password-guesses';
import { accountOfToken } from './account';
import { takeTotpStep, unusedTotpStep } from './totp-codes';
import { renewRecoveryCodes } from './recovery-codes';

/**
 * New recovery codes for the account of `token` (docs/second-factor.md), proven by a current code
 * of its authenticator app (taken once, like a sign-in's, against the account's budget): the old
 * ones stop working, the new ones are answered once, and an event says how many.
 */
export async function newRecoveryCodes(
  ctx: CallContext<'box' | 'clock' | 'db' | 'loginLimits' | 'rateLimiter' | 'tokens' | 'work'>, command: { token: StoredCredential; code: string },
): Promise<{ recoveryCodes: string[] }> {
  const { db, clock, work } = ctx.services;
  const { record, client } = await accountOfToken(ctx, command.token);
  const totp = await db.factors.totp(ctx.app.id, record.id);
  if (!totp?.confirmedAt) throw new Refusal('nothing_to_do', 'this account has no authenticator app, so it has no recovery codes; add one first (totp_enroll_native)');
  const guesses = await guardPasswordGuesses(ctx, accountSubject(record, ''));
  const locale = recordLocale(record);
  const step = unusedTotpStep(ctx, record.id, totp, command.code, locale);
  if (step instanceof Refusal) throw step;
  const recoveryCodes = await work.run(async (uow) => {
    // the code's time step is taken with the new codes, in their transaction, after the record's
    // lock (as every change of the account takes it, a sign-in finishing with a code too)
    if (!(await db.records.findForUpdate(ctx.app.id, record.id, uow.tx))) throw new Refusal('gone', 'the account was deleted meanwhile');
    await takeTotpStep(ctx, record.id, step, locale, uow.tx);
    const codes = await renewRecoveryCodes(ctx, uow, record, client);
    uow.record(event('account.recovery_codes_renewed', ctx.app.id, clock.now(), asAccount(ctx, record.id, client), recordSubject(record.id), { count: codes.length }));
    return codes;
  });
  await guesses.succeeded();
  return { recoveryCodes };
}
