import { judge, refusalOf, writeRecord, WriteRefusedError, type WriteRefusal } from '../records/write-record';
import { DuplicateAttributeError } from '../../domain/storage/records';
import { changesFrom, prefillFrom } from '../../domain/profile-fields';
import { FRESH_SIGN_IN_SECONDS, mayResetPassword } from '../../domain/tokens';
import { Refusal, invalidField, notSignedIn } from '../../domain/refusal';
import { accountSubject, guardPasswordGuesses } from './password-guesses';
import { asAccount } from '../services';
import { textsOf } from '../../texts';
import { assertValid, type Bearer, type FormSubmission, type LoginCall, recordOfAccessToken, requestForm, requireFields, takenAttribute, formContext } from './call';

const ENDPOINT = '/oauth/update_profile_native';

/**
 * docs/api.md#flows: edits the record of the access token with editProfileForm (fields the record already
 * holds need not be resent), or sets its password with changePasswordForm (current password
 * required), newPasswordForm or newPasswordFormNoAuth (only with a token from a reset link or a
 * sign-in minutes ago). A new password ends the record's other sessions. A new email address needs
 * the same proof (the form's current password, or such a token), is unverified until verified, and
 * is told to the old address, a verified one with a link that undoes it
 * (docs/api.md#changing-the-email-address).
 */
export async function updateProfile(
  ctx: LoginCall<'baseUrls' | 'clock' | 'db' | 'flows' | 'loginLimits' | 'passwords' | 'rateLimiter' | 'versions' | 'work'>, command: { form: FormSubmission; accessToken: Bearer },
): Promise<{ ignoredFields: string[] }> {
  const { request } = ctx;
  const { accessToken } = command;
  const { values } = command.form;
  const form = requestForm(ctx, request, command.form, 'editProfileForm', ENDPOINT);
  const { passwords, clock, flows, work, baseUrls } = ctx.services;
  const { token, record } = await recordOfAccessToken(ctx, request, accessToken);

  const stored = prefillFrom(form, record);
  requireFields(form, values, stored);
  const result = await form.validate(values, await formContext(ctx, record.id), stored);
  assertValid(result);

  // a form asking for the current password (a password field that writes nothing and confirms
  // nothing) must get it right
  const current = form.fields.find((f) => f.field.type === 'password' && !f.field.schemaAttribute && !f.field.validation.some((r) => r.rule === 'match'));
  if (current) {
    const guesses = await guardPasswordGuesses(ctx, accountSubject(record, ''));
    const given = result.values[current.name] ?? '';
    if (!(record.passwordHash ? await passwords.verify(record.passwordHash, given) : await passwords.verifyNothing(given))) {
      throw new Refusal('wrong_credentials', 'the current password is not correct', {
        fields: { [form.name]: [flows.text(request.flow, 'errors.wrongCurrentPassword')] },
      });
    }
    await guesses.succeeded();
  }

  const { password, ...change } = changesFrom(form, result.values);
  // a change of password that keeps the current one changes nothing, and tells the person it did
  const newField = form.fields.find((f) => f.field.schemaAttribute === 'password');
  if (current && newField && password !== undefined && password === result.values[current.name]) {
    throw new Refusal('invalid_form', 'the new password is the current one; choose another', {
      fields: { [newField.name]: [textsOf('api', request.flow.locale).samePassword] },
    });
  }
  // the address as stored fills a form that did not send it: only an address sent is a change
  const emailField = form.fields.find((f) => f.field.schemaAttribute === 'email');
  if (!emailField || values[emailField.name] === undefined) delete change.email;
  // a stolen token, or one an access_issuer minted, must not take the account over: a new password
  // or a new email address (which receives the next reset link) needs proof the holder signed in now
  // (the one policy of record writes, src/usecases/records/write-record.ts)
  const role = current !== undefined || mayResetPassword(token, clock.now()) ? 'proven' : 'person';
  const unproven = (what: string, alternative = '') => invalidField('form', `${form.name} ${what}, which needs an access token from a password reset link or from a sign-in within the last ${FRESH_SIGN_IN_SECONDS / 60} minutes; `
    + `${alternative}sign in again, then send the form with the new access token`);
  const refusal = (reason: WriteRefusal) => {
    switch (reason) {
      case 'email_removed': return invalidField('form', `${form.name} would remove the email address, which the account needs to be recovered; change it to another address instead`);
      case 'password_unproven': return unproven('sets a password without the current one', 'use changePasswordForm with the current password, or ');
      case 'email_unproven': return unproven('changes the email address');
      default: return invalidField('form', `${form.name} changes what the person's own form cannot (${reason})`);
    }
  };
  // judged before argon2 runs, and again with the record locked: the address may have changed since it was read (an undo)
  const refused = refusalOf(role, 'form', judge(record, change, password !== undefined));
  if (refused) throw refusal(refused);
  const passwordHash = password === undefined ? undefined : await passwords.hash(password);
  const notice = () => ({ app: ctx.app, baseUrl: baseUrls.of(ctx.app.name), locale: request.flow.locale, clientId: request.client.id });
  try {
    const acting = asAccount(ctx, record.id, request.client);
    const written = await work.run((uow) => writeRecord(ctx.services, uow, {
      app: ctx.app, entityId: record.id, role, channel: 'form', acting, passwordHash, keepSession: token.family, notice, change: () => ({ change }),
    }));
    if (!written) throw notSignedIn();
  } catch (e) {
    if (e instanceof WriteRefusedError) throw refusal(e.reason);
    if (!(e instanceof DuplicateAttributeError)) throw e;
    throw takenAttribute(ctx, request, form, e.attribute);
  }
  // what was sent that the form has no field for (a givenName to a form whose field is firstName): changed nothing, and said so
  return { ignoredFields: notFormFields(form.fields.map((f) => f.name), Object.keys(values)) };
}

/** The parameters of a flow endpoint that are no form's fields (docs/api.md#flows). */
const FLOW_PARAMETERS = new Set(['client_id', 'client_secret', 'locale', 'flow', 'flow_version', 'redirect_uri', 'response_type', 'form', 'access_token']);

/** The names sent that are neither one of the form's fields (a date's parts, `birthdate[dateselect_year]`, are its field's) nor a parameter of the endpoint. */
function notFormFields(fields: readonly string[], sent: readonly string[]): string[] {
  const names = sent.map((name) => name.replace(/\[[^\]]*\]$/, ''));
  return [...new Set(names)].filter((name) => !FLOW_PARAMETERS.has(name) && !fields.includes(name)).sort();
}
