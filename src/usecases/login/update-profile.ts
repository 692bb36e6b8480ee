import { changeAccount } from '../../domain/accounts';
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
 * sign-in minutes ago). A new password ends the record's other sessions.
 */
export async function updateProfile(ctx: LoginCall): Promise<Record<string, unknown>> {
  const { request } = ctx;
  const accessToken = ctx.params.require('access_token');
  const form = requestForm(ctx, request, 'editProfileForm', ENDPOINT);
  const { db, passwords, clock, flows, outbox, versions } = ctx.services;
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
  if (password !== undefined && !current && !mayResetPassword(token, clock.now())) {
    // a stolen token, or one an access_issuer minted, must not take the account over
    throw errors.invalidArgument('form', `${form.name} sets a password without the current one, which needs an access token from a password reset link or from a sign-in within the last ${FRESH_SIGN_IN_SECONDS / 60} minutes; use changePasswordForm with the current password, or sign in again`);
  }
  const passwordHash = password === undefined ? undefined : await passwords.hash(password);
  try {
    const written = await changeAccount({ db, outbox, versions, now: () => clock.now() }, ctx.app.id, record.id, { ...change, passwordHash }, token.family);
    if (!written) throw errors.invalidAccessToken();
  } catch (e) {
    if (!(e instanceof DuplicateAttributeError)) throw e;
    throw takenAttribute(ctx, request, form, e.attribute);
  }
  return {};
}
