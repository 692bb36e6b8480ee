import type { Tx } from '../../domain/storage';
import type { UserRecord } from '../../domain/storage/records';
import type { UnitOfWork } from '../../domain/ports';
import { event, recordSubject, type Acting } from '../../domain/events';
import { IdentityTakenError } from '../../domain/storage/social';
import type { Client } from '../../domain/clients';
import type { SocialProfile } from '../../domain/social/profile';
import { ExternalSocialError, type Redeemed } from '../../domain/social/tokens';
import { Refusal, invalidField } from '../../domain/refusal';
import type { CallContext } from '../services';
import { touchRecord } from '../records/versions';

/**
 * The profile behind a social token (built-in or external social login application), or the
 * error `invalid` makes when the token is unknown, expired or spent. An external application that
 * cannot be used is a 500 saying which and why.
 */
export async function redeemToken(ctx: CallContext<'socialTokens'>, client: Client, value: string, invalid: () => Refusal): Promise<Redeemed> {
  try {
    const redeemed = await ctx.services.socialTokens.redeem(ctx.app, client, value);
    if (!redeemed) throw invalid();
    return redeemed;
  } catch (e) {
    if (e instanceof ExternalSocialError) throw new Refusal('misconfigured', e.message);
    throw e;
  }
}

/** 200 naming the command's token field: unknown, expired, or already spent. */
export const invalidToken = (field = 'token') => () =>
  invalidField(field, 'the social login token is invalid, expired or already used; sign in with the provider again');

/** 361: the identity belongs to a record already (this one or another). */
export const identityTaken = () => new Refusal('identity_taken', 'this social identity is already linked to an account', {
  field: 'token', message: 'This social account is already linked to an account.',
});

/**
 * Links the identity behind `value` to `record` and spends the token, in the caller's transaction:
 * both or neither. A token spent meanwhile is `invalid`; an identity linked meanwhile is 361.
 */
export async function linkIdentity(
  ctx: CallContext<'clock' | 'db' | 'socialTokens'>, record: UserRecord, value: string, profile: SocialProfile, tx: Tx, invalid: () => Refusal,
): Promise<{ did: 'account.identity_linked'; provider: string }> {
  const { socialTokens, db, clock } = ctx.services;
  if (!(await socialTokens.consume(ctx.app, value, tx))) throw invalid();
  try {
    await db.social.profiles.insert({
      applicationId: ctx.app.id, entityId: record.id, provider: profile.providerName, identifier: profile.identifier, data: { ...profile },
    }, clock.now(), tx);
  } catch (e) {
    if (e instanceof IdentityTakenError) throw identityTaken();
    throw e;
  }
  return { did: 'account.identity_linked', provider: profile.providerName };
}

/**
 * Changes the identities linked to an existing record in the work's transaction (`change`, given
 * the record as locked, answers what it did and with which provider), with the record locked first
 * and one more version of it: records that change and the version with its snapshot.
 */
export async function changeIdentities(
  ctx: CallContext<'clock' | 'db' | 'versions'>, record: UserRecord, uow: UnitOfWork, acting: Acting,
  change: (locked: UserRecord) => Promise<IdentityChange>,
): Promise<void> {
  const { db, clock } = ctx.services;
  const locked = await db.records.findForUpdate(ctx.app.id, record.id, uow.tx);
  if (!locked) throw new Refusal('gone', 'the account was deleted meanwhile');
  const done = await change(locked);
  uow.record(identityEvent(ctx, acting, record.id, done, clock.now()));
  await touchRecord(ctx.services, uow, locked, acting, ['profiles']);
}

/** What a change of identities did, and with which provider. */
export interface IdentityChange { did: 'account.identity_linked' | 'account.identity_unlinked'; provider: string }

/** The event of an identity linked or unlinked. */
export const identityEvent = (ctx: CallContext<never>, acting: Acting, entityId: number, done: IdentityChange, at: Date) =>
  event(done.did, ctx.app.id, at, acting, recordSubject(entityId), { provider: done.provider });

/**
 * A `merge_token` presented with a sign-in into `record`: it must be the token of an auth_native
 * call that failed with 380 because of this very record.
 */
export async function mergeRequest(ctx: CallContext<'socialTokens'>, client: Client, value: string, record: UserRecord): Promise<Redeemed> {
  const invalid = invalidToken('mergeToken');
  const merge = await redeemToken(ctx, client, value, invalid);
  if (merge.outcome?.presented !== 'email_address_in_use' || merge.outcome.conflictEntityId !== record.id) {
    throw invalidField('mergeToken', 'is not the token of an /oauth/auth_native call that answered 380 for this account');
  }
  return merge;
}
