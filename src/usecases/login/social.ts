import { randomUUID } from 'node:crypto';
import { isDisabled, DuplicateAttributeError, type UserRecord } from '../../domain/storage/records';
import { changesFrom } from '../../domain/profile-fields';
import type { CompiledForm } from '../../domain/flow-forms';
import type { SocialProfile } from '../../domain/social/profile';
import { formatTimestamp } from '../../domain/timestamps';
import { FRESH_SIGN_IN_SECONDS, mayResetPassword } from '../../domain/tokens';
import { USER_TYPE } from '../../domain/users';
import { Refusal, invalidField } from '../../domain/refusal';
import { accountDisabled, joinByAddress, signedIn } from './signed-in';
import { asAccount, type CallContext } from '../services';
import { insertRecord } from '../records/versions';
import { event, recordSubject } from '../../domain/events';
import { assertValid, type Bearer, type FlowRequest, type FormSubmission, isPaused, type LoginCall, type Paused, type SignedIn, recordOfAccessToken, requestForm, requireFields, takenAttribute, takeRegistrationAttempt, formContext } from './call';
import { registrationTokens, sentToEnroll } from './second-factor-step';
import { changeIdentities, identityTaken, invalidToken, linkIdentity, mergeRequest, redeemToken } from './social-identities';
import { verificationMail } from './verification-mail';
import { refuseClosedRegistration } from '../../domain/registration';

/** The profile's value for a record attribute (what thin registration copies and prereg_fields carry). */
function fromProfile(profile: SocialProfile, attribute: string | undefined): string | null {
  switch (attribute) {
    case 'email': return profile.email ?? null;
    case 'displayName': return profile.displayName ?? null;
    case 'givenName': return profile.name?.givenName ?? null;
    case 'familyName': return profile.name?.familyName ?? null;
    case 'username': return profile.preferredUsername ?? null;
    case 'birthdate': return profile.birthday ?? null;
    case 'mobileNumber': return profile.phoneNumber ?? null;
    default: return null;
  }
}

/** docs/api.md#social-login: only fields of the named form, filled from the profile where one maps to it. */
const preregFields = (form: CompiledForm, profile: SocialProfile) =>
  Object.fromEntries(form.fields.map(({ name, field }) => [name, fromProfile(profile, field.schemaAttribute)]));

/** 380 with what the spec says of the account that holds the email (docs/api.md#social-login). */
async function emailInUse(ctx: CallContext<'db'>, record: UserRecord): Promise<Refusal> {
  const linked = await ctx.services.db.social.profiles.forEntity(ctx.app.id, record.id);
  const photo = linked.find((p) => typeof p.data.photo === 'string');
  return new Refusal('email_in_use', 'an account with this email address exists; sign in to it (with merge_token to link this identity)', {
    existing: {
      provider: record.passwordHash || linked.length === 0 ? 'capture' : linked[0].provider,
      displayName: String(record.attributes.displayName ?? linked[0]?.data.displayName ?? ''),
      photo: photo ? { id: photo.id, value: photo.data.photo, type: 'other' } : null,
      dateCreated: formatTimestamp(record.created),
    },
  });
}

/** A social sign-in's result: signed in as with a password, and whether the record was made by it (or paused as a password sign-in pauses). */
export type SocialSignedIn = (SignedIn & { isNew: boolean }) | Paused;

/**
 * Creates a record for a social identity and signs it in, spending the token, in one statement
 * transaction with its welcome email (a verification link, unless the provider verified the email).
 */
async function register(
  ctx: CallContext<'baseUrls' | 'box' | 'clock' | 'db' | 'joinableDomains' | 'logger' | 'socialTokens' | 'tokens' | 'versions' | 'work'>, request: FlowRequest, token: string, profile: SocialProfile,
  input: { email: string | null; username?: string; attributes: Record<string, unknown> }, refreshSecret: string | undefined,
): Promise<SocialSignedIn> {
  refuseClosedRegistration(ctx.app, request.client);
  const { clock, work } = ctx.services;
  const verifiedNow = input.email !== null && input.email.normalize('NFC').toLowerCase() === profile.verifiedEmail?.toLowerCase();
  const verifyUrl = request.client.settings.verify_email_url;
  const { record, tokens, made } = await work.run(async (uow) => {
    const { tx } = uow;
    // one version: the record with its identity
    const { written, acting } = await insertRecord(ctx.services, uow, {
      applicationId: ctx.app.id, typeName: USER_TYPE, uuid: randomUUID(), email: input.email, username: input.username ?? null,
      passwordHash: null, emailVerified: verifiedNow ? clock.now() : null, attributes: input.attributes,
    }, (made) => asAccount(ctx, made.id, request.client), { attach: async (made) => void await linkIdentity(ctx, made, token, profile, tx, invalidToken()) });
    const created = written.record;
    const welcome = created.email && verifyUrl && !verifiedNow ? verificationMail(ctx, request, created, verifyUrl, 'welcome') : undefined;
    const issued = await registrationTokens(ctx, request, { entityId: created.id, factors: ['social'] }, tx, refreshSecret, welcome ? [welcome.credential] : []);
    const subject = recordSubject(created.id);
    uow.record(
      event('account.registered', ctx.app.id, created.created, acting, subject, { method: 'social' }, welcome && { mail: welcome.mail }),
      event('account.identity_linked', ctx.app.id, created.created, acting, subject, { provider: profile.providerName }),
    );
    return { record: written.rendered, tokens: issued, made: created };
  });
  // the application requires a second factor: the new account adds one before its first session
  if (tokens.enrollToken !== undefined) return sentToEnroll(tokens.enrollToken, 'the account is registered');
  // an address the provider verified joins the organizations of its domain, as a sign-in does
  await joinByAddress(ctx, request, made);
  return { record, isNew: true, ...tokens };
}

/**
 * docs/api.md#social-login: completes a social sign-in. A linked identity signs in (and a `merge_token` from a
 * failed 380 call for that account links its identity too); an unknown identity whose email a
 * record holds is 380; otherwise `thin_registration=true` creates the record at once (when the
 * provider gave an email) or the answer is 310, with `prereg_fields` when `registration_form` is sent.
 */
export async function socialSignIn(ctx: LoginCall<'baseUrls' | 'box' | 'clock' | 'db' | 'flows' | 'joinableDomains' | 'logger' | 'socialTokens' | 'tokens' | 'versions' | 'work'>, command: {
  token: string;
  /** A merge token of a failed 380 call for the account this identity signs in to: its identity is linked too. */
  mergeToken?: string;
  /** Create the record at once when the provider gave an email address. */
  thinRegistration: boolean;
  /** The form whose fields a 310 answer prefills (prereg_fields). */
  registrationForm?: string;
  refreshSecret?: string;
}): Promise<SocialSignedIn> {
  const { request } = ctx;
  const { token, mergeToken, refreshSecret } = command;
  const thin = command.thinRegistration;
  const form = command.registrationForm === undefined ? undefined : requestForm(ctx, request, { name: command.registrationForm }, command.registrationForm, '/oauth/register_native');
  const { db, socialTokens } = ctx.services;
  const { profile } = await redeemToken(ctx, request.client, token, invalidToken());

  const linked = await db.social.profiles.byIdentifier(ctx.app.id, profile.identifier);
  const owner = linked && await db.records.find(ctx.app.id, { id: linked.entityId });
  if (owner) {
    // a disabled user: refused before anything is linked or spent
    if (isDisabled(owner, ctx.services.clock.now())) throw accountDisabled(ctx, request);
    const merge = mergeToken === undefined ? undefined : await mergeRequest(ctx, request.client, mergeToken, owner);
    // the token spent (and a merged identity linked) in the sign-in's transaction
    const signed = await signedIn(ctx, request, owner, {
      factors: ['social'], refreshSecret, also: { socialToken: token, ...(merge && { merge: { token: mergeToken!, profile: merge.profile } }) },
    });
    return isPaused(signed) ? signed : { ...signed, isNew: false };
  }

  // only an address the provider verified names an account: anyone can claim any address at a
  // provider they run, and a merge offered on that claim would hand them the account
  const holder = profile.verifiedEmail ? await db.records.find(ctx.app.id, { email: profile.verifiedEmail }) : undefined;
  if (holder) {
    await socialTokens.mark(ctx.app, token, profile, { presented: 'email_address_in_use', conflictEntityId: holder.id });
    throw await emailInUse(ctx, holder);
  }
  if (thin && profile.email) {
    try {
      return await register(ctx, request, token, profile, {
        email: profile.email,
        attributes: Object.fromEntries(['displayName', 'givenName', 'familyName'].map((a) => [a, fromProfile(profile, a)]).filter(([, v]) => v !== null)),
      }, refreshSecret);
    } catch (e) {
      if (!(e instanceof DuplicateAttributeError) || e.attribute !== 'email') throw e;
      // an account holds the email: taken meanwhile (the answer a second call would give), or
      // never verified by the provider (then no merge is offered: registration with another address)
      const taken = profile.verifiedEmail && await db.records.find(ctx.app.id, { email: profile.verifiedEmail });
      if (taken) {
        await socialTokens.mark(ctx.app, token, profile, { presented: 'email_address_in_use', conflictEntityId: taken.id });
        throw await emailInUse(ctx, taken);
      }
    }
  }
  await socialTokens.mark(ctx.app, token, profile, { presented: 'record_not_found' });
  const why = !profile.email ? 'and the provider gave no email address'
    : profile.verifiedEmail ? 'or its email address'
      : 'and the provider did not verify its email address, so it cannot be linked to an account that has it';
  throw new Refusal('unknown_identity', `no account has this social identity ${why}; register it with /oauth/register_native`, form ? { prefill: preregFields(form, profile) } : {});
}

/**
 * docs/api.md#social-login: registers the identity of a token that /oauth/auth_native answered 310 for, with the
 * social registration form (every rule checked: 390), and signs the new record in.
 */
export async function socialRegister(
  ctx: LoginCall<'baseUrls' | 'box' | 'clock' | 'db' | 'flows' | 'joinableDomains' | 'logger' | 'rateLimiter' | 'registrationLimit' | 'socialTokens' | 'tokens' | 'versions' | 'work'>,
  command: { token: string; form: FormSubmission; refreshSecret?: string },
): Promise<SocialSignedIn> {
  const { request } = ctx;
  const { token } = command;
  refuseClosedRegistration(ctx.app, request.client);
  const form = requestForm(ctx, request, command.form, 'socialRegistrationForm', '/oauth/register_native');
  const { profile, outcome } = await redeemToken(ctx, request.client, token, invalidToken());
  if (outcome?.presented !== 'record_not_found') {
    throw invalidField('token', 'present the token to /oauth/auth_native first; register it only when that answered 310');
  }
  requireFields(form, command.form.values);
  await takeRegistrationAttempt(ctx);
  const result = await form.validate(command.form.values, await formContext(ctx));
  assertValid(result);
  const { email, username, attributes } = changesFrom(form, result.values);
  try {
    return await register(ctx, request, token, profile, { email: email ?? null, username, attributes }, command.refreshSecret);
  } catch (e) {
    if (!(e instanceof DuplicateAttributeError) || e.attribute === 'uuid') throw e;
    throw takenAttribute(ctx, request, form, e.attribute);
  }
}

/** docs/api.md#social-login: links the identity behind a social token to the record of an access token. */
export async function linkAccount(ctx: LoginCall<'clock' | 'db' | 'socialTokens' | 'versions' | 'work'>, command: { accessToken: Bearer; token: string }): Promise<void> {
  const { request } = ctx;
  const { token } = command;
  const { record, token: access } = await recordOfAccessToken(ctx, request, command.accessToken);
  // a new way to sign in is a change of how the account signs in: a stolen or minted token must not add one
  if (!mayResetPassword(access, ctx.services.clock.now())) {
    throw invalidField('accessToken', `linking an identity needs an access token from a sign-in within the last ${FRESH_SIGN_IN_SECONDS / 60} minutes `
      + 'or from a password reset link; sign in again, then link with the new access token');
  }
  const engage = () => new Refusal('spent_social_token', 'the social login token is invalid, expired or already used; sign in with the provider again');
  const { profile } = await redeemToken(ctx, request.client, token, engage);
  if (await ctx.services.db.social.profiles.byIdentifier(ctx.app.id, profile.identifier)) throw identityTaken();
  await ctx.services.work.run((uow) => changeIdentities(ctx, record, uow, asAccount(ctx, record.id, request.client),
    () => linkIdentity(ctx, record, token, profile, uow.tx, engage)));
}

/** docs/api.md#social-login: unlinks one identity, unless it is the record's last way to sign in. */
export async function unlinkAccount(ctx: LoginCall<'clock' | 'db' | 'versions' | 'work'>, command: { accessToken: Bearer; identifier: string }): Promise<void> {
  const { request } = ctx;
  const { identifier } = command;
  const { record } = await recordOfAccessToken(ctx, request, command.accessToken);
  const { db } = ctx.services;
  // checked with the record locked: two parallel unlinks cannot remove the last two ways in
  await ctx.services.work.run((uow) => changeIdentities(ctx, record, uow, asAccount(ctx, record.id, request.client), async (locked) => {
      const { tx } = uow;
      const linked = await db.social.profiles.forEntity(ctx.app.id, record.id, tx);
      const unlinked = linked.find((p) => p.identifier === identifier);
      if (!unlinked) {
        throw invalidField('identifier', 'no identity with this identifier is linked to the account (see capture_user.profiles)');
      }
      if (!locked.passwordHash && linked.length === 1) {
        throw invalidField('identifier', 'this identity is the account\'s only way to sign in; set a password or link another identity first');
      }
      await db.social.profiles.remove(ctx.app.id, record.id, identifier, tx);
      return { did: 'account.identity_unlinked' as const, provider: unlinked.provider };
  }));
}
