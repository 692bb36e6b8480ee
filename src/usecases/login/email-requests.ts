import { BUDGET_KEYS } from '../../domain/budget-keys';
import { sha256Hex } from '../../domain/secrets';
import { uniqueKey } from '../../domain/storage/records';
import type { Client } from '../../domain/clients';
import { displayName, withParameter, type MailRequest } from '../../domain/mail';
import { event, recordSubject, type Acting } from '../../domain/events';
import type { UserRecord } from '../../domain/storage/records';
import { randomToken } from '../../domain/secrets';
import { Refusal, invalidField } from '../../domain/refusal';
import { asAccount, type CallContext } from '../services';
import { assertValid, type FlowRequest, type FormSubmission, type LoginCall, requestForm, requireFields } from './call';
import { settingSeconds, verificationMail } from './verification-mail';
import { proveWork } from './proof-of-work';
import type { UnitOfWork } from '../../domain/ports';

/** The URL setting the emailed link points at; a clear error (nothing queued) when it is missing. */
function configuredUrl(client: Client, key: 'password_recover_url' | 'verify_email_url'): string {
  const url = client.settings[key];
  if (!url || !/^https?:\/\//.test(url)) {
    throw new Refusal('misconfigured', `client ${client.clientId} has no ${key} setting, so no link can be sent; set it with /settings/set (key=${key})`);
  }
  return url;
}

/**
 * What forgot_password_native and verify_email_native share: the form with its email field, and
 * limits per recipient and per client address, counted on every request before the code knows
 * whether the address is registered (no email bombing, no account discovery by timing).
 */
async function emailRequest(ctx: LoginCall<'db' | 'flows' | 'mailLimits' | 'rateLimiter'>, submission: FormSubmission, fallbackForm: string, endpoint: string) {
  const { request } = ctx;
  const form = requestForm(ctx, request, submission, fallbackForm, endpoint);
  requireFields(form, submission.values);
  const result = await form.validate(submission.values, { isUnique: async () => true });
  assertValid(result);
  const field = form.fields.find((f) => f.field.type === 'email') ?? form.fields[0];
  const email = (result.values[field.name] ?? '').trim();

  // taken atomically before anything is sent: parallel requests never send more than the limit
  const { rateLimiter, mailLimits } = ctx.services;
  await rateLimiter.take([
    // the address hashed: the store of the limits never holds one
    [BUDGET_KEYS.mailRecipient(ctx.app.id, sha256Hex(uniqueKey(email) ?? '')), mailLimits.recipient],
    [BUDGET_KEYS.mailAddress(ctx.app.id, ctx.clientAddress), mailLimits.address],
  ]);

  const record = email === '' ? undefined : await ctx.services.db.records.find(ctx.app.id, { email });
  return { request, form, record };
}

const flowMessage = (ctx: CallContext<'flows'>, request: FlowRequest, key: string) => ctx.services.flows.text(request.flow, key);

/**
 * docs/api.md#flows: mails a one-time authorization code, bound to this client and to its
 * password_recover_url, as `code` on that URL. The code and the email commit together.
 */
export async function requestPasswordReset(
  ctx: LoginCall<'baseUrls' | 'box' | 'clock' | 'db' | 'flows' | 'mailLimits' | 'rateLimiter' | 'tokens' | 'work'>, command: { form: FormSubmission; altcha?: string },
): Promise<void> {
  await proveWork(ctx, command.altcha);
  const { request, form, record } = await emailRequest(ctx, command.form, 'forgotPasswordForm', '/oauth/forgot_password_native');
  const recoverUrl = configuredUrl(request.client, 'password_recover_url');
  if (request.redirectUri !== recoverUrl) {
    throw invalidField('redirectUri', "must equal this client's password_recover_url setting", { received: request.redirectUri, expected: recoverUrl });
  }
  if (!record) {
    throw new Refusal('no_such_account', 'no account is registered with this email address; nothing was sent', {
      fields: { [form.name]: [flowMessage(ctx, request, 'errors.noSuchAccount')] },
    });
  }
  if (!record.passwordHash && !request.flow.definition.settings?.allowResetWithoutPassword) {
    throw new Refusal('nothing_to_do', 'the account has no password to reset (it signs in with a social provider); nothing was sent', {
      message: flowMessage(ctx, request, 'errors.noPassword'),
    });
  }

  await mailPasswordReset(ctx, { client: request.client, record, locale: request.flow.locale, acting: asAccount(ctx, record.id, request.client) });
}

/** A reset link's kind: a person's "forgot password" (or an operator's "send a reset email"), or a new operator's first password. */
export type ResetLinkKind = 'reset' | 'operator_setup';

/** The link that sets a new operator's first password lives three days (a reset link an hour, unless set otherwise). */
export const OPERATOR_SETUP_SECONDS = 3 * 24 * 3600;

/**
 * A reset link for `record`, mailed in `locale`: a one-time authorization code bound to `client`
 * and its password_recover_url, as `code` on that URL, committed with its event and its email.
 * What a person's "forgot password" and an operator's "send a reset email" both do.
 */
export async function mailPasswordReset(
  ctx: CallContext<'baseUrls' | 'clock' | 'tokens' | 'work'>, command: { client: Client; record: UserRecord; locale: string; acting: Acting },
): Promise<void> {
  await ctx.services.work.run((uow) => recordResetLink(ctx, uow, { ...command, kind: 'reset' }));
}

/**
 * Issues a reset link in the unit of work and records its event with its email. A new operator's
 * link (`operator_setup`) lives three days and names the address it was mailed to (its SHA-256):
 * setting the password with it proves that address, which is verified from then on.
 */
export async function recordResetLink(
  ctx: CallContext<'baseUrls' | 'clock' | 'tokens'>, uow: UnitOfWork, command: { client: Client; record: UserRecord; locale: string; acting: Acting; kind: ResetLinkKind },
): Promise<void> {
  const { client, record } = command;
  if (!record.email) throw new Refusal('nothing_to_do', 'the account has no email address to send a reset link to');
  const recoverUrl = configuredUrl(client, 'password_recover_url');
  const { tokens, clock } = ctx.services;
  const setup = command.kind === 'operator_setup';
  const lifetime = setup ? OPERATOR_SETUP_SECONDS : settingSeconds(ctx, client, 'password_reset_lifetime', 3600);
  const code = await tokens.issue({
    kind: 'authorization_code', app: ctx.app, entityId: record.id, client, redirectUri: recoverUrl,
    family: randomToken(16), seconds: lifetime, extra: { password_reset: true, ...(setup && { verifies: sha256Hex(uniqueKey(record.email) ?? '') }) },
  }, uow.tx);
  const mail: MailRequest = {
    app: ctx.app, template: setup ? 'operator-invitation' : 'reset-password', locale: command.locale, to: record.email, name: displayName(record),
    link: withParameter(ctx.services.baseUrls.rebase(recoverUrl, ctx.app.name), 'code', code), expiresIn: lifetime,
  };
  uow.record(event('account.password_reset_requested', ctx.app.id, clock.now(), command.acting, recordSubject(record.id), {}, { mail }));
}

/** Whether a reset link was mailed to `email` as a new operator's first password: using it proves the address. */
export const linkVerifies = (extra: Record<string, unknown> | null, email: string | null): boolean =>
  email !== null && typeof extra?.verifies === 'string' && extra.verifies === sha256Hex(uniqueKey(email) ?? '');

/**
 * docs/api.md#flows: mails a one-time verification code as `verification_code` on the client's
 * verify_email_url; /access/useVerificationCode then sets emailVerified.
 */
export async function requestEmailVerification(
  ctx: LoginCall<'baseUrls' | 'clock' | 'db' | 'flows' | 'mailLimits' | 'rateLimiter' | 'tokens' | 'work'>, command: { form: FormSubmission },
): Promise<void> {
  const { request, form, record } = await emailRequest(ctx, command.form, 'resendVerificationForm', '/oauth/verify_email_native');
  const verifyUrl = configuredUrl(request.client, 'verify_email_url');
  if (!record) {
    throw new Refusal('wrong_credentials', 'no account is registered with this email address; nothing was sent', {
      fields: { [form.name]: [flowMessage(ctx, request, 'errors.noSuchAccount')] },
    });
  }
  if (record.emailVerified) {
    throw new Refusal('nothing_to_do', 'this email address is already verified; nothing was sent', {
      message: flowMessage(ctx, request, 'errors.alreadyVerified'),
    });
  }
  const { credential, mail } = verificationMail(ctx, request, record, verifyUrl, 'verify-email');
  await ctx.services.work.run(async (uow) => {
    await ctx.services.tokens.issueAll([credential], uow.tx);
    const acting = asAccount(ctx, record.id, request.client);
    uow.record(event('account.verification_requested', ctx.app.id, ctx.services.clock.now(), acting, recordSubject(record.id), {}, { mail }));
  });
}
