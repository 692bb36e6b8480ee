import { DuplicateAttributeError } from '../../domain/storage/records';
import { changesFrom } from '../../domain/profile-fields';
import { USER_TYPE } from '../../domain/users';
import { randomUUID } from 'node:crypto';
import { verificationMail } from './verification-mail';
import { insertRecord } from '../records/versions';
import { event, recordSubject } from '../../domain/events';
import { asAccount } from '../services';
import { registrationTokens, sentToEnroll } from './second-factor-step';
import { proveWork } from './proof-of-work';
import { refuseClosedRegistration } from '../../domain/registration';
import { assertValid, type FormSubmission, type LoginCall, requestForm, requireFields, type SignInOutcome, takenAttribute, takeRegistrationAttempt, formContext } from './call';

const ENDPOINT = '/oauth/register_native_traditional';

/**
 * docs/api.md#flows: validates the registration form with every rule, creates the record (email unique
 * per application regardless of case, also under concurrent registrations), and signs it in.
 */
export async function registerWithPassword(
  ctx: LoginCall<'baseUrls' | 'box' | 'clock' | 'db' | 'flows' | 'passwords' | 'rateLimiter' | 'registrationLimit' | 'tokens' | 'versions' | 'work'>, command: { form: FormSubmission; refreshSecret?: string; altcha?: string },
): Promise<SignInOutcome> {
  const { request } = ctx;
  refuseClosedRegistration(ctx.app, request.client);
  const form = requestForm(ctx, request, command.form, 'registrationForm', ENDPOINT);
  requireFields(form, command.form.values);
  await proveWork(ctx, command.altcha);
  await takeRegistrationAttempt(ctx);
  const result = await form.validate(command.form.values, await formContext(ctx));
  assertValid(result);

  const { email, username, password, attributes } = changesFrom(form, result.values);
  const { passwords } = ctx.services;
  const passwordHash = password === undefined ? null : await passwords.hash(password);
  const verifyUrl = request.client.settings.verify_email_url;
  try {
    // the record, its tokens and its welcome email (with a verification link) commit together
    const { record, tokens } = await ctx.services.work.run(async (uow) => {
      const { tx } = uow;
      const { written, acting } = await insertRecord(ctx.services, uow, {
        applicationId: ctx.app.id, typeName: USER_TYPE, uuid: randomUUID(), email: email ?? null, username: username ?? null,
        passwordHash, emailVerified: null, attributes,
      }, (created) => asAccount(ctx, created.id, request.client));
      const created = written.record;
      const welcome = created.email && verifyUrl ? verificationMail(ctx, request, created, verifyUrl, 'welcome') : undefined;
      const tokens = await registrationTokens(ctx, request, { entityId: created.id, factors: passwordHash ? ['password'] : [] }, tx, command.refreshSecret, welcome ? [welcome.credential] : []);
      uow.record(event('account.registered', ctx.app.id, created.created, acting, recordSubject(created.id), { method: 'password' }, welcome && { mail: welcome.mail }));
      return { record: written.rendered, tokens };
    });
    // the application requires a second factor: the new account adds one before its first session
    if (tokens.enrollToken !== undefined) return sentToEnroll(tokens.enrollToken, 'the account is registered');
    return { record, ...tokens };
  } catch (e) {
    if (!(e instanceof DuplicateAttributeError) || e.attribute === 'uuid') throw e;
    // lost a race with a concurrent registration: the same answer the unique rule gives
    throw takenAttribute(ctx, request, form, e.attribute);
  }
}
