import type { Client } from '../../domain/clients';
import { invalidField } from '../../domain/refusal';
import { sha256Hex } from '../../domain/secrets';
import type { StoredCredential } from '../../domain/storage/credentials';
import type { UnitOfWork } from '../../domain/ports';
import { isDisabled } from '../../domain/storage/records';
import type { CallContext } from '../services';
import type { FlowRequest, SignedIn } from './call';
import { openPaused, resumeOf } from './second-factor-step';
import { Refusal } from '../../domain/refusal';
import { accountDisabled, finishSignIn, type SecondFactor } from './signed-in';

/** What an enroll_token's row says was added with it (the factor that then finishes its sign-in). */
const enrolledWith = (row: StoredCredential): SecondFactor | undefined => {
  const added = (row.extra as { enrolled?: unknown } | null)?.enrolled;
  return added === 'totp' || added === 'passkey' || added === 'verified_passkey' ? added : undefined;
};

/**
 * Marks, in the enrollment's unit of work, that `factor` was added with this enroll_token: the
 * sign-in it waits with may go on with that factor (continueAfterEnrollment), and only then.
 */
export async function markEnrolled(ctx: CallContext<'clock' | 'db'>, uow: UnitOfWork, token: StoredCredential, factor: SecondFactor): Promise<void> {
  if (token.kind !== 'enroll_token') return;
  await ctx.services.db.credentials.setExtra(ctx.app.id, 'enroll_token', token.valueHash, { ...token.extra, enrolled: factor }, ctx.services.clock.now(), uow.tx);
}

/**
 * A sign-in sent to add a second factor goes on once it is added (docs/second-factor.md#when-the-application-requires-a-second-factor):
 * adding the factor proved it, so the sign-in that waited (its first credential proven, paused at
 * its seam) finishes with it and answers what it would have answered, without the password again
 * and without a code the enrollment just used. Its paused row is spent once, however many race.
 * Refused (naming `enrollToken`) when no factor was added with this enroll_token, when the sign-in
 * is over (its 5 minutes, a password changed meanwhile), or for a token that waits with none (a
 * password reset's: the mailbox alone signs nobody in).
 */
export async function continueAfterEnrollment(
  ctx: CallContext<'box' | 'clock' | 'db' | 'flows' | 'joinableDomains' | 'logger' | 'socialTokens' | 'tokens' | 'versions' | 'work'> & { client: Client },
  command: { enrollToken: string } | { enrollTokenHash: string },
): Promise<SignedIn> {
  const { db, clock, flows } = ctx.services;
  const over = () => invalidField('enrollToken', 'has no sign-in waiting with it any more (it waits 5 minutes, and ends with a new password); sign in again');
  const enrollHash = 'enrollToken' in command ? sha256Hex(command.enrollToken) : command.enrollTokenHash;
  const enroll = await db.credentials.findActive(ctx.app.id, 'enroll_token', enrollHash, clock.now());
  if (!enroll || enroll.clientId !== ctx.client.id) throw over();
  const factor = enrolledWith(enroll);
  if (!factor) throw invalidField('enrollToken', 'has not added a second factor yet: add an authenticator app or a passkey with it first');
  const value = resumeOf(ctx, enroll);
  const mfaTokenHash = value === undefined ? undefined : sha256Hex(value);
  const row = mfaTokenHash === undefined ? undefined : await db.credentials.findActive(ctx.app.id, 'mfa_token', mfaTokenHash, clock.now());
  if (!row || row.clientId !== ctx.client.id || row.entityId === null || row.entityId !== enroll.entityId) throw over();
  const opened = openPaused(ctx, row);
  const record = await db.records.find(ctx.app.id, { id: row.entityId });
  if (!opened?.answer || !record) throw over();
  const { paused, answer } = opened;
  const request: FlowRequest = {
    client: ctx.client, flow: await flows.resolve(ctx.app, answer.flow.name, String(answer.flow.version), answer.flow.locale),
    redirectUri: row.redirectUri ?? undefined, responseType: answer.response_type,
  };
  if (isDisabled(record, clock.now())) throw accountDisabled(ctx, request);
  if (paused.passwordHash !== undefined && record.passwordHash !== paused.passwordHash) throw over();
  return finishSignIn(ctx, request, record, {
    factors: paused.factors, refreshSecret: paused.refreshSecret, also: paused.also, secondFactor: factor,
    finishing: { mfaTokenHash: mfaTokenHash!, clientId: ctx.client.id, spent: over, wrong: over },
    ...(paused.passwordHash !== undefined && { checked: { passwordHash: paused.passwordHash, refused: over } }),
  });
}

/**
 * What the API answers beside a factor added with an enroll_token: the session of the sign-in that
 * waited with it (continueAfterEnrollment), or none when no sign-in waits or it ended meanwhile.
 * The factor is on whatever happens here: its own answer (recovery codes, a passkey's id) is never
 * lost to a sign-in that is over (the person signs in again).
 */
export async function sessionAfterEnrollment(
  ctx: Parameters<typeof continueAfterEnrollment>[0], token: StoredCredential,
): Promise<SignedIn | undefined> {
  if (token.kind !== 'enroll_token' || resumeOf(ctx, token) === undefined) return undefined;
  return continueAfterEnrollment(ctx, { enrollTokenHash: token.valueHash }).catch((e: unknown) => {
    if (e instanceof Refusal) return undefined;
    throw e;
  });
}
