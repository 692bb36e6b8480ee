import { Refusal } from '../../domain/refusal';
import { isDisabled, type UserRecord } from '../../domain/storage/records';
import { reviseRecord, signInVersion, writeSignInAlone } from '../records/versions';
import type { StoredProfile } from '../../domain/storage/social';
import { asAccount, type CallContext } from '../services';
import { event, kept, recordSubject } from '../../domain/events';
import type { UnitOfWork } from '../../domain/ports';
import type { Tx } from '../../domain/storage';
import type { Written } from '../../domain/versions';
import { loginCredentials, loginTokens, type FlowRequest, type Proven, type SignedIn, type SignInOutcome } from './call';
import type { SignInFactor } from '../../domain/session';
import { textsOf } from '../../texts';
import { secondFactorPolicy, type SecondFactorMethod } from '../../domain/second-factor';
import { pauseForSecondFactor, secondFactorOwed, sendToEnroll, type SignInAlso } from './second-factor-step';
import { identityEvent, invalidToken, linkIdentity } from './social-identities';
import { countFailedSignIn } from './failed-sign-ins';
import { joinByDomain } from '../organizations/domains';
import { refuseWhereConnectionRequired } from '../sso/discovery';

/** The second factor that finished a sign-in: a code, a recovery code, or a passkey (that verified the person or not). */
export type SecondFactor = Exclude<SignInFactor, 'password' | 'social' | 'email_code' | 'connection'>;

/**
 * 210 for a disabled user, said only to someone who proved the password or the identity: the
 * flow's message `errors.accountDisabled` when it has one, else ours in the flow's locale.
 */
export function accountDisabled(ctx: CallContext<'flows'>, request: FlowRequest, formName?: string): Refusal {
  const own = ctx.services.flows.text(request.flow, 'errors.accountDisabled');
  const message = own !== 'errors.accountDisabled' ? own : textsOf('api', request.flow.locale).accountDisabled;
  return new Refusal('wrong_credentials', 'this account is disabled by an operator of the service', {
    message, ...(formName !== undefined && { fields: { [formName]: [message] } }),
  });
}

/** How a sign-in goes on once its first credential is proven (signedIn), or once its second factor is too (finishSignIn). */
export interface SignInOptions {
  passwordHash?: string;
  profiles?: StoredProfile[];
  /**
   * A password sign-in: the hash the password was checked against, and its refusal. A password
   * changed meanwhile (a reset, another session) refuses the sign-in: the old password no longer
   * signs in, and its rehash never overwrites the new one.
   */
  checked?: { passwordHash: string; refused: () => Refusal };
  /** The organization's connection the person signed in through (docs/organizations.md#connections). */
  connection?: string;
  /** The first credential the person proved who they are with (a password unless said otherwise). */
  factors?: SignInFactor[];
  /** A mobile SDK's refresh secret (see loginCredentials). */
  refreshSecret?: string;
  /**
   * More work of the same sign-in, in its transaction with the record locked (a social token
   * spent, a merged identity linked): the sign-in then commits in one transaction, never in the
   * single call.
   */
  also?: SignInAlso;
  /** The second factor that finished a paused sign-in (finishSignIn only: signedIn pauses an account that owes one). */
  secondFactor?: SecondFactor;
  /** The second factors the account owes one of, when the caller read them already (secondFactorOwed; none: it owes none). */
  secondFactorsOwed?: SecondFactorMethod[];
  /** A paused sign-in finished: what it spends in the sign-in's transaction (the sign-in then commits in one transaction). */
  finishing?: Finishing;
}

/**
 * What every successful sign-in answers (password, social, passkey), at its seam: a disabled
 * account is refused; an account that owes a second factor pauses here (before anything is issued
 * or spent), one sent to add it first gets its enroll_token; otherwise the session (finishSignIn).
 */
export async function signedIn(
  ctx: CallContext<'box' | 'clock' | 'db' | 'flows' | 'joinableDomains' | 'logger' | 'socialTokens' | 'tokens' | 'versions' | 'work'>, request: FlowRequest, record: UserRecord, options: SignInOptions = {},
): Promise<SignInOutcome> {
  const first = options.factors ?? ['password'];
  if (isDisabled(record, ctx.services.clock.now())) {
    await countFailedSignIn(ctx, record.id, 'account_disabled', request.client);
    throw accountDisabled(ctx, request);
  }
  // a member of an organization that requires its connection signs in through it only (docs/organizations.md#required-sign-in)
  await refuseWhereConnectionRequired(ctx.services, ctx.app, record.id, options.connection);
  // the seam: an account with a second factor waits for it here, before anything is issued or spent
  // (a passkey is not the second factor of a sign-in it began)
  const factors = options.secondFactorsOwed ?? await secondFactorOwed(ctx, record);
  const owed = factors.filter((m) => m !== 'passkey' || !first.some((f) => f === 'passkey' || f === 'verified_passkey'));
  if (owed.length > 0) {
    return pauseForSecondFactor(ctx, request, record, { factors: first, refreshSecret: options.refreshSecret, also: options.also ?? {}, passwordHash: options.checked?.passwordHash }, owed);
  }
  // a second factor required, and none to ask for (a passkey that verified the person is two factors)
  if (secondFactorPolicy(ctx.app) === 'required' && !first.includes('verified_passkey')) {
    // an account with passkeys that signed in with one that did not verify the person: one factor, and nothing to add it with
    if (factors.length > 0) {
      throw new Refusal('wrong_credentials', 'this application requires two factors: this passkey did not verify the person (no PIN or biometric), '
        + 'and the account has no other second factor; sign in with a passkey that verifies the person, or with the password and a passkey', {
        field: 'credential', message: textsOf('api', request.flow.locale).passkeyNotVerified,
      });
    }
    // an account with no second factor: it adds one first
    return sendToEnroll(ctx, request, record, { factors: first, refreshSecret: options.refreshSecret, also: options.also ?? {}, passwordHash: options.checked?.passwordHash });
  }
  return finishSignIn(ctx, request, record, options);
}

/**
 * The session of a sign-in whose factors are all proven: tokens per response_type, then lastLogin
 * written (and a rehashed password, when one is given) with the record's snapshot, then
 * capture_user as that write left the record, all in one commit. `profiles` are the record's
 * identities when they were read with it (the password sign-in's lookup); otherwise they are read
 * here.
 */
export async function finishSignIn(
  ctx: CallContext<'clock' | 'db' | 'flows' | 'joinableDomains' | 'logger' | 'socialTokens' | 'tokens' | 'versions' | 'work'>, request: FlowRequest, record: UserRecord, options: SignInOptions = {},
): Promise<SignedIn> {
  const signedIn = await sessionOf(ctx, request, record, options);
  await joinByAddress(ctx, request, record);
  return signedIn;
}

/**
 * Just-in-time membership (docs/organizations.md#domains): a verified address at a domain some
 * organizations let accounts join by makes the account a member of them. It never fails a sign-in.
 */
export async function joinByAddress(
  ctx: CallContext<'clock' | 'db' | 'joinableDomains' | 'logger' | 'work'>, request: FlowRequest, record: Pick<UserRecord, 'id' | 'email' | 'emailVerified'>,
): Promise<void> {
  try {
    await joinByDomain(ctx.services, { app: ctx.app, acting: asAccount(ctx, record.id, request.client), record });
  } catch (e) {
    ctx.services.logger.warn({ err: e, request_id: ctx.origin.requestId }, 'joining organizations by the address\'s domain failed; the sign-in stands');
  }
}

async function sessionOf(
  ctx: CallContext<'clock' | 'db' | 'flows' | 'socialTokens' | 'tokens' | 'versions' | 'work'>, request: FlowRequest, record: UserRecord, options: SignInOptions,
): Promise<SignedIn> {
  const { db, clock, work } = ctx.services;
  const acting = asAccount(ctx, record.id, request.client);
  const first = options.factors ?? ['password'];
  const proven: Proven = { entityId: record.id, factors: options.secondFactor ? [...first, options.secondFactor] : first };
  const method = first.includes('connection') ? 'connection' : first.includes('social') ? 'social' : first.includes('password') ? 'password' : first.includes('email_code') ? 'email_code' : 'passkey';
  const also = options.also ?? {};
  const alongside = also.socialToken !== undefined || also.merge !== undefined || options.finishing ? alongsideOf(ctx, request, record, also, options.finishing) : undefined;
  /** What the sign-in records: that it happened, and the record's new version (lastLogin, a rehashed password) with its snapshot. */
  const signedIn = (at: Date) => event('account.signed_in', ctx.app.id, at, acting, recordSubject(record.id), {
    method, ...(options.secondFactor && { factor: options.secondFactor === 'verified_passkey' ? 'passkey' : options.secondFactor }),
  });
  const names = ['lastLogin', ...(options.passwordHash ? ['password'] : [])];
  const events = (written: Written, at: Date) => [
    signedIn(at), event('record.updated', ctx.app.id, at, acting, recordSubject(record.id), { attributes: names }, { snapshot: written.snapshot }),
  ];
  const change = (now: Date) => ({ passwordHash: options.passwordHash, attributes: { lastLogin: now.toISOString() } });
  // the whole write in one commit while the record is as the password check read it. Its
  // identities were read with it (or are read now): linking or removing one is a new version of
  // the record, which the write then refuses like any other change.
  const now = clock.now();
  const profiles = options.profiles ?? await db.social.profiles.forEntity(ctx.app.id, record.id);
  const { next, written } = signInVersion(ctx.services, record, change(now), now, profiles);
  const { rows, tokens: issued } = loginCredentials(ctx, request, proven, now, options.refreshSecret);
  // one round trip when no subscriber must write in a transaction for these events
  const happened = events(written, now);
  const jobs = alongside ? undefined : work.jobsOf(happened);
  if (jobs && await writeSignInAlone(ctx.services, record, next, rows, jobs, happened.map(kept), now)) {
    await work.dispatch(jobs, happened);
    return { record: written.rendered, ...issued };
  }
  // changed since the check (or more to do than one call does): locked, read again, and written
  // with the tokens and the snapshot in one transaction
  const { written: after, tokens } = await work.run(async (uow) => {
    const { tx } = uow;
    const at = clock.now();
    const locked = await db.records.findForUpdate(ctx.app.id, record.id, tx);
    // deleted between the password check and now: no sign-in
    if (!locked) throw new Refusal('gone', 'the account was deleted while signing in');
    if (isDisabled(locked, at)) throw accountDisabled(ctx, request);
    if (options.checked && locked.passwordHash !== options.checked.passwordHash) throw options.checked.refused();
    const changedToo = alongside ? (await alongside(uow, locked)).changed : [];
    const w = (await reviseRecord(ctx.services, uow, locked, change(at), acting, { now: at, names: [...names, ...changedToo], preceding: [signedIn(at)] }))!;
    // after the record's row lock: a token row's foreign key check would otherwise take a shared
    // lock on the record first, and two sign-ins of one account would deadlock upgrading it
    const tokens = await loginTokens(ctx, request, proven, tx, options.refreshSecret);
    return { written: w, tokens };
  });
  return { record: after.rendered, ...tokens };
}

/**
 * What finishing a paused sign-in spends with it: its mfa_token (the client's own), and the
 * authenticator's time step or the recovery code that seconded it. Spent meanwhile by another
 * request, the sign-in is refused (`spent`: the token; `wrong`: the code) and nothing is written.
 */
export interface Finishing {
  mfaTokenHash: string;
  clientId: number;
  totpStep?: number;
  recoveryCodeHash?: string;
  spent: () => Refusal;
  wrong: () => Refusal;
}

/** The proof of a paused sign-in spent in `tx`: one sign-in per mfa_token and per code, however many race. */
export async function spendFinishing(ctx: CallContext<'clock' | 'db'>, entityId: number, f: Finishing, tx: Tx): Promise<void> {
  const { db, clock } = ctx.services;
  const now = clock.now();
  if (!(await db.credentials.consume(ctx.app.id, 'mfa_token', f.mfaTokenHash, now, tx, f.clientId))) throw f.spent();
  if (f.totpStep !== undefined && !(await db.factors.takeTotpStep(ctx.app.id, entityId, f.totpStep, tx))) throw f.wrong();
  if (f.recoveryCodeHash !== undefined && !(await db.credentials.consume(ctx.app.id, 'recovery_code', f.recoveryCodeHash, now, tx))) throw f.wrong();
}

/** A sign-in's other work, made from its data: the proof of a paused sign-in spent, the social token spent, the merged identity linked. */
function alongsideOf(ctx: CallContext<'clock' | 'db' | 'socialTokens'>, request: FlowRequest, record: UserRecord, also: SignInAlso, finishing: Finishing | undefined) {
  return async (uow: UnitOfWork, locked: UserRecord): Promise<{ changed: string[] }> => {
    if (finishing) await spendFinishing(ctx, record.id, finishing, uow.tx);
    if (also.socialToken !== undefined && !(await ctx.services.socialTokens.consume(ctx.app, also.socialToken, uow.tx))) throw invalidToken()();
    if (!also.merge) return { changed: [] };
    const done = await linkIdentity(ctx, locked, also.merge.token, also.merge.profile, uow.tx, invalidToken('mergeToken'));
    uow.record(identityEvent(ctx, asAccount(ctx, record.id, request.client), record.id, done, ctx.services.clock.now()));
    return { changed: ['profiles'] };
  };
}
