import type { StoredCredential } from '../../domain/storage/credentials';
import { Refusal, invalidField } from '../../domain/refusal';
import { sessionFacts } from '../../domain/session';
import { event, recordSubject } from '../../domain/events';
import { MAX_PASSWORD_LENGTH } from '../../domain/passwords';
import { asAccount, type CallContext } from '../services';
import { guardPasswordGuesses, accountSubject } from '../login/password-guesses';
import { accountOfToken } from './account';
import { factorMail } from './confirm-totp';
import { takeTotpStep, unusedTotpStep } from './totp-codes';
import { recordLocale } from '../../domain/email-change';
import { textsOf } from '../../texts';

/**
 * Turns the authenticator off (docs/second-factor.md), proven by a current code from it or by the
 * account's password, guessed against the account's password budget. In one unit of work the
 * authenticator, the recovery codes and the sign-ins waiting for a second factor go, and the
 * person is told by email.
 */
export async function removeTotp(
  ctx: CallContext<'box' | 'clock' | 'db' | 'loginLimits' | 'passwords' | 'rateLimiter' | 'work'>, command: { token: StoredCredential; code?: string; currentPassword?: string },
): Promise<void> {
  const { db, clock, work, passwords } = ctx.services;
  const { record, client } = await accountOfToken(ctx, command.token);
  const totp = await db.factors.totp(ctx.app.id, record.id);
  if (!totp?.confirmedAt) throw new Refusal('nothing_to_do', 'this account has no authenticator to remove');
  const guesses = await guardPasswordGuesses(ctx, accountSubject(record, ''));
  // a code's time step is taken with the change, in its transaction
  let step: number | undefined;
  if (command.code !== undefined) {
    const checked = unusedTotpStep(ctx, record.id, totp, command.code, recordLocale(record));
    if (checked instanceof Refusal) throw checked;
    step = checked;
  } else {
    // the password proves it only in a session that the authenticator proved too: a password and
    // a token alone (a reset link's, a leaked one) never turn the second factor off
    // (by its factors: a code mailed to the person is `otp` too; a session from before factors were kept, by its amr)
    const facts = sessionFacts(command.token);
    const byAuthenticator = facts?.factors ? facts.factors.some((f) => f === 'totp' || f === 'recovery_code') : facts?.amr.includes('otp');
    if (!byAuthenticator) {
      throw invalidField('currentPassword', 'proves this only with an access token of a sign-in made with the authenticator; send a current code from it instead (code)');
    }
    const password = command.currentPassword ?? '';
    const ok = record.passwordHash && password.length <= MAX_PASSWORD_LENGTH ? await passwords.verify(record.passwordHash, password) : await passwords.verifyNothing(password);
    if (!ok) {
      throw new Refusal('wrong_credentials', 'the current password is not correct', {
        field: 'currentPassword', message: textsOf('api', recordLocale(record)).wrongPassword,
      });
    }
  }
  await work.run(async (uow) => {
    const at = clock.now();
    // the record's lock first, as every change of the account takes it (a sign-in finishing with a code too)
    const locked = await db.records.findForUpdate(ctx.app.id, record.id, uow.tx);
    if (locked && step !== undefined) await takeTotpStep(ctx, record.id, step, recordLocale(record), uow.tx);
    if (!locked || !(await db.factors.removeTotp(ctx.app.id, record.id, uow.tx))) throw new Refusal('nothing_to_do', 'this account has no authenticator to remove');
    await db.credentials.revokeForRecord(ctx.app.id, record.id, ['recovery_code', 'mfa_token'], null, at, uow.tx);
    const acting = asAccount(ctx, record.id, client);
    uow.record(event('account.second_factor_removed', ctx.app.id, at, acting, recordSubject(record.id), { method: 'totp' }, factorMail(ctx, record, 'second-factor-off')));
  });
  await guesses.succeeded();
}
