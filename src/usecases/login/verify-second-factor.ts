import type { Client } from '../../domain/clients';
import { sha256Hex } from '../../domain/secrets';
import { invalidField } from '../../domain/refusal';
import { matchTotp, normalRecoveryCode, openTotpSecret, type SecondFactorMethod } from '../../domain/second-factor';
import type { CallContext } from '../services';
import type { FlowRequest, SignedIn } from './call';
import { accountSubject, guardPasswordGuesses } from './password-guesses';
import { openPaused } from './second-factor-step';
import { accountDisabled, signedIn } from './signed-in';
import { wrongCode } from '../factors/confirm-totp';

/** The second factor that finishes a paused sign-in: a code of the authenticator, or a recovery code. */
export interface SecondFactorCommand {
  mfaToken: string;
  code?: string;
  recoveryCode?: string;
}

/**
 * Finishes a sign-in paused for its second factor (docs/second-factor.md) with exactly what the
 * sign-in would have answered: the mfa_token must be live and this client's; the code is guessed
 * against the account's password budget; a code of the authenticator is accepted once (its time
 * step is taken by one conditional update), a recovery code is spent. The mfa_token is then spent
 * (one sign-in per token, however many race for it) and the session issued with `otp` beside the
 * first credential in its facts.
 */
export async function verifySecondFactor(ctx: CallContext & { client: Client }, command: SecondFactorCommand): Promise<SignedIn & { social: boolean }> {
  const { db, clock, work, box, flows } = ctx.services;
  const hash = sha256Hex(command.mfaToken);
  const spent = () => invalidField('mfaToken', 'is invalid, expired or already used (a sign-in waits 5 minutes for its second factor); sign in again');
  const row = await db.credentials.findActive(ctx.app.id, 'mfa_token', hash, clock.now());
  if (!row || row.clientId !== ctx.client.id || row.entityId === null) throw spent();
  const opened = openPaused(ctx, row);
  const record = await db.records.find(ctx.app.id, { id: row.entityId });
  if (!opened || !record) throw spent();
  const flow = await flows.resolve(ctx.app, opened.flow.name, String(opened.flow.version), opened.flow.locale);
  const request: FlowRequest = { client: ctx.client, flow, redirectUri: row.redirectUri ?? undefined, responseType: opened.responseType };
  if (record.disabledAt) throw accountDisabled(ctx, request);
  const { paused } = opened;
  // the password the sign-in proved is no longer the account's: it starts again
  if (paused.passwordHash !== undefined && record.passwordHash !== paused.passwordHash) throw spent();

  const guesses = await guardPasswordGuesses(ctx, accountSubject(record, ''));
  let method: SecondFactorMethod;
  if (command.code !== undefined) {
    method = 'totp';
    const totp = await db.factors.totp(ctx.app.id, record.id);
    const step = totp?.confirmedAt ? matchTotp(openTotpSecret(box, ctx.app.id, record.id, totp.secretSealed), command.code, clock.now()) : undefined;
    if (step === undefined || !(await db.factors.takeTotpStep(ctx.app.id, record.id, step))) throw wrongCode('code', flow.locale);
  } else {
    method = 'recovery_code';
    const code = normalRecoveryCode(command.recoveryCode ?? '');
    const codeHash = sha256Hex(code);
    // this account's own code only: another account's recovery code proves nothing here
    const own = code.length > 0 && code.length <= 64 && (await db.credentials.find(ctx.app.id, 'recovery_code', codeHash))?.entityId === record.id;
    const used = own && await work.run(({ tx }) => db.credentials.consume(ctx.app.id, 'recovery_code', codeHash, clock.now(), tx));
    if (!used) throw wrongCode('recoveryCode', flow.locale);
  }
  await guesses.succeeded();
  // one sign-in per token: of parallel verifications with right codes, one spends it
  if (!(await work.run(({ tx }) => db.credentials.consume(ctx.app.id, 'mfa_token', hash, clock.now(), tx, ctx.client.id)))) throw spent();
  const signed = await signedIn(ctx, request, record, {
    amr: paused.amr, refreshSecret: paused.refreshSecret, also: paused.also, secondFactor: method,
    ...(paused.passwordHash !== undefined && { checked: { passwordHash: paused.passwordHash, refused: spent } }),
  });
  return { ...signed, social: paused.amr.includes('fed') };
}
