import { changeAccount } from '../../domain/accounts';
import { addressChanged } from '../../domain/email-change';
import { DuplicateAttributeError } from '../../domain/storage/records';
import { changesFrom, prefillFrom } from '../../domain/profile-fields';
import { FRESH_SIGN_IN_SECONDS, mayResetPassword } from '../../domain/tokens';
import { ApiError, errors } from '../../errors';
import { accountSubject, guardPasswordGuesses } from './password-guesses';
import { assertValid, type LoginCall, recordOfAccessToken, requestForm, requireFields, takenAttribute, uniqueness } from './call';

const ENDPOINT = '/oauth/update_profile_native';

/**
 * docs/api.md#flows: edits the record of the access token with editProfileForm (fields the record already
 * holds need not be resent), or sets its password with changePasswordForm (current password
 * required), newPasswordForm or newPasswordFormNoAuth (only with a token from a reset link or a
 * sign-in minutes ago). A new password ends the record's other sessions. A new email address needs
 * the same proof (the form's current password, or such a token), is unverified until verified, and
 * is told to the old address with a link that undoes it (docs/api.md#changing-the-email-address).
 */
export async function updateProfile(ctx: LoginCall): Promise<Record<string, unknown>> {
  const { request } = ctx;
  const accessToken = ctx.params.require('access_token');
  const form = requestForm(ctx, request, 'editProfileForm', ENDPOINT);
  const { db, passwords, clock, flows, outbox, versions, box, baseUrls } = ctx.services;
  const { token, record } = await recordOfAccessToken(ctx, request, accessToken);

  const stored = prefillFrom(form, record);
  requireFields(ctx, form, stored);
  const result = await form.validate(ctx.params.values, uniqueness(ctx, record.id), stored);
  assertValid(result);

  // a form asking for the current password (a password field that writes nothing and confirms
  // nothing) must get it right
  const current = form.fields.find((f) => f.field.type === 'password' && !f.field.schemaAttribute && !f.field.validation.some((r) => r.rule === 'match'));
  if (current) {
    const guesses = await guardPasswordGuesses(ctx, accountSubject(record, ''));
    const given = result.values[current.name] ?? '';
    if (!(record.passwordHash ? await passwords.verify(record.passwordHash, given) : await passwords.verifyNothing(given))) {
      throw new ApiError('invalidCredentials', 'the current password is not correct', {
        extra: { invalid_fields: { [form.name]: [flows.text(request.flow, 'errors.wrongCurrentPassword')] } },
      });
    }
    await guesses.succeeded();
  }

  const { password, ...change } = changesFrom(form, result.values);
  // a stolen token, or one an access_issuer minted, must not take the account over: a new password
  // or a new email address (which receives the next reset link) needs proof the holder signed in now
  const proven = current !== undefined || mayResetPassword(token, clock.now());
  const moved = addressChanged(record.email, change.email);
  if (moved && (change.email ?? '') === '') {
    throw errors.invalidArgument('form', `${form.name} would remove the email address, which the account needs to be recovered; change it to another address instead`);
  }
  if ((password !== undefined || moved) && !proven) {
    const what = password !== undefined ? 'sets a password without the current one' : 'changes the email address';
    throw errors.invalidArgument('form', `${form.name} ${what}, which needs an access token from a password reset link or from a sign-in within the last ${FRESH_SIGN_IN_SECONDS / 60} minutes; `
      + `${password !== undefined ? 'use changePasswordForm with the current password, or ' : ''}sign in again, then send the form with the new access token`);
  }
  const passwordHash = password === undefined ? undefined : await passwords.hash(password);
  const notice = { box, app: ctx.app, baseUrl: baseUrls.of(ctx.app.name), locale: request.flow.locale, clientId: request.client.id };
  try {
    const written = await changeAccount({ db, outbox, versions, now: () => clock.now() }, ctx.app.id, record.id, { ...change, passwordHash }, { keepSession: token.family, notice });
    if (!written) throw errors.invalidAccessToken();
  } catch (e) {
    if (!(e instanceof DuplicateAttributeError)) throw e;
    throw takenAttribute(ctx, request, form, e.attribute);
  }
  return {};
}
