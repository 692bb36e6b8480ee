import { isDisabled } from '../../domain/storage/records';
import type { Client } from '../../domain/clients';
import { sha256Hex } from '../../domain/secrets';
import { invalidField } from '../../domain/refusal';
import type { AuthenticationResponseJSON } from '@simplewebauthn/server';
import { normalRecoveryCode, recoveryCodeKey } from '../../domain/second-factor';
import { credentialOf, provePasskey, spendAssertionChallenge } from '../factors/passkey-ceremony';
import type { CallContext } from '../services';
import type { FlowRequest, SignedIn } from './call';
import { accountSubject, guardPasswordGuesses } from './password-guesses';
import { openPaused, pausedMethods } from './second-factor-step';
import { accountDisabled, finishSignIn, spendFinishing, type Finishing, type SecondFactor } from './signed-in';
import { unusedTotpStep, usedCode, wrongCode } from '../factors/totp-codes';
import { countFailedSignIn } from './failed-sign-ins';
import { recordLocale } from '../../domain/email-change';
import { Refusal } from '../../domain/refusal';
import type { TokenPair } from '../../domain/tokens';

/** The second factor that finishes a paused sign-in: a code of the authenticator, a recovery code, or a passkey's credential for a challenge begun with the mfa_token. */
export interface SecondFactorCommand {
  mfaToken: string;
  code?: string;
  recoveryCode?: string;
  passkey?: { challengeToken: string; credential: unknown };
  /** Only a paused sign-in (a page signs in; it has no use for a paused code exchange's pair). */
  signInOnly?: boolean;
}

/** What a second factor finished: the sign-in's answer, or the pair of a paused code exchange (a password reset's code). */
export type Verified = { signedIn: SignedIn; social: boolean } | { pair: TokenPair };

/**
 * Finishes a sign-in paused for its second factor (docs/second-factor.md) with exactly what the
 * sign-in would have answered: the mfa_token must be live and this client's; the code is guessed
 * against the account's password budget. In one transaction the mfa_token is spent (one sign-in
 * per token, however many race for it), the code's time step taken (a code of the authenticator is
 * accepted once) or the recovery code spent, and the session issued with `otp` beside the first
 * credential in its facts. A paused code exchange gets its pair.
 */
export async function verifySecondFactor(
  ctx: CallContext<'baseUrls' | 'box' | 'clock' | 'db' | 'flows' | 'joinableDomains' | 'logger' | 'loginLimits' | 'rateLimiter' | 'socialTokens' | 'tokens' | 'versions' | 'work'> & { client: Client },
  command: SecondFactorCommand,
): Promise<Verified> {
  const { db, clock, work, box, flows, tokens } = ctx.services;
  const hash = sha256Hex(command.mfaToken);
  const spent = () => invalidField('mfaToken', 'is invalid, expired or already used (a sign-in waits 5 minutes for its second factor); sign in again');
  const row = await db.credentials.findActive(ctx.app.id, 'mfa_token', hash, clock.now());
  if (!row || row.clientId !== ctx.client.id || row.entityId === null) throw spent();
  const opened = openPaused(ctx, row);
  const record = await db.records.find(ctx.app.id, { id: row.entityId });
  if (!opened || !record) throw spent();
  const { paused, answer } = opened;
  const request: FlowRequest | undefined = answer && {
    client: ctx.client, flow: await flows.resolve(ctx.app, answer.flow.name, String(answer.flow.version), answer.flow.locale),
    redirectUri: row.redirectUri ?? undefined, responseType: answer.response_type,
  };
  if (!request && command.signInOnly) throw spent();
  const locale = request?.flow.locale ?? recordLocale(record);
  const disabled = () => (request ? accountDisabled(ctx, request)
    : new Refusal('no_grant', 'the user of this password reset code is disabled: it gets no tokens until an operator enables it again'));
  if (isDisabled(record, clock.now())) {
    await countFailedSignIn(ctx, record.id, 'account_disabled', ctx.client);
    throw disabled();
  }
  // the password the sign-in proved is no longer the account's: it starts again
  if (paused.passwordHash !== undefined && record.passwordHash !== paused.passwordHash) throw spent();

  // only what the sign-in owes finishes it: a passkey never seconds the passkey that began it
  const owed = pausedMethods(row);
  if (command.passkey && !owed.includes('passkey')) throw invalidField('credential', 'a passkey does not finish this sign-in: send a code (code) or a recovery code');
  if (!command.passkey && !owed.includes('totp')) throw invalidField('code', 'this sign-in finishes with a passkey (challenge_token from /oauth/passkey_auth_begin with mfa_token, and credential)');
  const guesses = await guardPasswordGuesses(ctx, accountSubject(record, ''));
  // a code that lost its race to another request (taken in the transaction below) counts as a
  // wrong one; the person is told a time step's code was used, or the recovery code refused
  let lost = false;
  const wrong = (refusal: () => Refusal) => () => { lost = true; return refusal(); };
  const finishing: Finishing = { mfaTokenHash: hash, clientId: ctx.client.id, spent, wrong: wrong(() => usedCode(locale)) };
  let method: SecondFactor;
  if (command.passkey) {
    // no guess to count: a passkey's signature is not guessed, and its challenge is spent either way
    const credential = credentialOf<AuthenticationResponseJSON>(command.passkey.credential, 'sign_in');
    const challenge = await spendAssertionChallenge(ctx, credential, command.passkey.challengeToken, 'second_factor', ctx.client);
    if (challenge.entityId !== record.id) throw invalidField('challengeToken', 'was begun for another sign-in; begin with this mfa_token');
    method = (await provePasskey(ctx, command.passkey.challengeToken, credential, locale, record.id)).factor;
  } else if (command.code !== undefined) {
    method = 'totp';
    const totp = await db.factors.totp(ctx.app.id, record.id);
    // a code of a time step taken already (by a sign-in, the enrollment, or this code used before) is never accepted again: the person waits for the next
    const step = totp?.confirmedAt ? unusedTotpStep(ctx, record.id, totp, command.code, locale) : wrongCode('code', locale);
    if (step instanceof Refusal) {
      await countFailedSignIn(ctx, record.id, 'wrong_code', ctx.client);
      throw step;
    }
    finishing.totpStep = step;
  } else {
    method = 'recovery_code';
    const code = normalRecoveryCode(command.recoveryCode ?? '');
    const now = clock.now();
    // stored under its keyed digest; codes issued before that, under their plain SHA-256
    let codeHash = sha256Hex(recoveryCodeKey(box, code));
    let found = code.length > 0 && code.length <= 64 ? await db.credentials.findActive(ctx.app.id, 'recovery_code', codeHash, now) : undefined;
    if (!found && code.length > 0 && code.length <= 64) {
      codeHash = sha256Hex(code);
      found = await db.credentials.findActive(ctx.app.id, 'recovery_code', codeHash, now);
    }
    // this account's own code only: another account's recovery code proves nothing here
    if (found?.entityId !== record.id) {
      await countFailedSignIn(ctx, record.id, 'wrong_code', ctx.client);
      throw wrongCode('recoveryCode', locale);
    }
    finishing.recoveryCodeHash = codeHash;
    finishing.wrong = wrong(() => wrongCode('recoveryCode', locale));
  }
  const { exchange } = paused;
  try {
    // the mfa_token, the code and the session in one transaction: all of them or none
    const done: Verified = request
      ? {
        signedIn: await finishSignIn(ctx, request, record, {
          factors: paused.factors, refreshSecret: paused.refreshSecret, also: paused.also, secondFactor: method, finishing,
          ...(paused.passwordHash !== undefined && { checked: { passwordHash: paused.passwordHash, refused: spent } }),
        }),
        social: paused.factors.includes('social'),
      }
      // the paused exchange's pair, in the transaction that spends its token (the record locked, as the exchange locks it)
      : { pair: await work.run(async ({ tx }) => {
        const locked = await db.records.findForUpdate(ctx.app.id, record.id, tx);
        if (!locked) throw spent();
        await spendFinishing(ctx, record.id, finishing, tx);
        if (isDisabled(locked, clock.now())) throw disabled();
        const pair = await tokens.issuePair(ctx.app, ctx.client, record.id, exchange!.family, tx, exchange!.proof);
        return exchange!.transactionState === undefined ? pair : { ...pair, transactionState: exchange!.transactionState };
      }) };
    await guesses.succeeded();
    return done;
  } catch (e) {
    if (lost) await countFailedSignIn(ctx, record.id, 'wrong_code', ctx.client);
    throw e;
  }
}
