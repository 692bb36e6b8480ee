import { MAX_PASSWORD_LENGTH } from '../../domain/passwords';
import { Refusal } from '../../domain/refusal';
import type { CallContext } from '../services';
import { accountSubject, guardPasswordGuesses } from './password-guesses';
import { isDisabled, uniqueKey } from '../../domain/storage/records';
import { accountDisabled, signedIn } from './signed-in';
import { requestForm, requireFields, type FlowRequest, type FormSubmission, type LoginCall, type SignInOutcome } from './call';
import { mergeRequest } from './social-identities';
import { secondFactorMethods } from '../factors/second-factors-of';
import { countFailedSignIn } from './failed-sign-ins';
import { countTowardBusy, proveWork } from './proof-of-work';

const ENDPOINT = '/oauth/auth_native_traditional';

/** 210 keyed by the form name: byte for byte the same for an unknown account and a wrong password. */
function invalidCredentials(ctx: CallContext<'flows'>, request: FlowRequest, formName: string): Refusal {
  return new Refusal('wrong_credentials', 'the sign-in failed; check the email address or username and the password', {
    fields: { [formName]: [ctx.services.flows.text(request.flow, 'errors.invalidCredentials')] },
  });
}

/** A sign-in with a password: the form, the Android SDK's `user` and `password` when it sent them, a merge token, a mobile SDK's refresh secret. */
export interface SignInCommand {
  form: FormSubmission;
  /** Used when none of the form's fields was sent (the Android SDK's fallback when the app has no flow). */
  sdkFallback?: { user: string; password: string };
  /** The token of a social sign-in that failed with 380 for this account: its identity is linked too. */
  mergeToken?: string;
  refreshSecret?: string;
  /** A solved proof-of-work challenge, where the client asks for one (docs/proof-of-work.md). */
  altcha?: string;
}

/**
 * docs/api.md#flows: sign in by email or username and password. Every attempt is counted against the
 * account's and the address's budgets before the password is checked (unknown accounts have a
 * budget too), and an unknown account still costs one argon2 verification.
 */
export async function signIn(
  ctx: LoginCall<'box' | 'clock' | 'db' | 'flows' | 'joinableDomains' | 'logger' | 'loginLimits' | 'passwords' | 'rateLimiter' | 'socialTokens' | 'tokens' | 'versions' | 'work'>, command: SignInCommand,
): Promise<SignInOutcome> {
  const { request } = ctx;
  const form = requestForm(ctx, request, command.form, 'signInForm', ENDPOINT);
  await proveWork(ctx, command.altcha);
  const passwordField = form.fields.find((f) => f.field.type === 'password');
  const identifierField = form.fields.find((f) => f.field.type !== 'password');
  if (!passwordField || !identifierField) throw new Refusal('misconfigured', `form ${form.name} needs an identifier field and a password field`);
  // the Android SDK's fallback when the app has no flow: `user` and `password` instead of the form's fields
  const values = command.form.values;
  const fallback = command.sdkFallback !== undefined && form.fields.every((f) => values[f.name] === undefined) ? command.sdkFallback : undefined;
  if (!fallback) requireFields(form, values);
  const identifier = (fallback ? fallback.user : values[identifierField.name] ?? '').trim();
  const password = (fallback ? fallback.password : values[passwordField.name]) ?? '';
  const { mergeToken } = command;

  const { db, passwords } = ctx.services;
  const usable = identifier !== '' && password !== '' && password.length <= MAX_PASSWORD_LENGTH && identifier.length <= 254;
  const key = identifier.includes('@') ? { email: identifier } : { username: identifier };
  const found = usable ? await db.records.findWithProfiles(ctx.app.id, key) : undefined;
  const record = found?.record;
  // the attempt is taken before argon2 runs, for known and unknown accounts alike
  const guesses = await guardPasswordGuesses(ctx, accountSubject(record, uniqueKey(identifier)!));
  const ok = record?.passwordHash ? await passwords.verify(record.passwordHash, password) : await passwords.verifyNothing(password);
  if (!ok || !record) {
    // counted without waiting: a refusal takes as long for a known account as for an unknown one
    if (record) void countFailedSignIn(ctx, record.id, 'wrong_password', request.client);
    await countTowardBusy(ctx);
    throw invalidCredentials(ctx, request, form.name);
  }

  // the right password of a disabled user: said so, and nothing is linked or issued (nor is the attempt counted against a budget)
  if (isDisabled(record, ctx.services.clock.now())) {
    await guesses.givenBack();
    await countFailedSignIn(ctx, record.id, 'account_disabled', request.client);
    throw accountDisabled(ctx, request, form.name);
  }
  // the account's failures are forgotten once the sign-in is done: a second factor still owed keeps them
  // read with the record: a sign-in asks for nothing more before the password is checked
  const owed = secondFactorMethods(ctx.app, found!.factors);
  await (owed.length > 0 ? guesses.firstOfTwo() : guesses.succeeded());
  // a merge_token is checked before anything is issued: a bad one signs nobody in
  const merge = mergeToken === undefined ? undefined : await mergeRequest(ctx, request.client, mergeToken, record);
  // a hash made with weaker parameters than today's policy is replaced while the password is at hand
  const passwordHash = passwords.needsRehash(record.passwordHash!) ? await passwords.hash(password) : undefined;
  return signedIn(ctx, request, record, {
    passwordHash, profiles: found!.profiles, refreshSecret: command.refreshSecret,
    // the identity of the failed social sign-in joins this account, and the token is spent, in the sign-in's transaction
    ...(merge && { also: { merge: { token: mergeToken!, profile: merge.profile } } }),
    checked: { passwordHash: record.passwordHash!, refused: () => invalidCredentials(ctx, request, form.name) },
    secondFactorsOwed: owed,
  });
}
