import { BUDGET_KEYS } from '../../domain/budget-keys';
import { refuseClosedRegistration } from '../../domain/registration';
import { randomUUID } from 'node:crypto';
import {
  EMAIL_CODE_GUESSES, EMAIL_CODE_SECONDS, EMAIL_LINK_PATH, emailCodeBinding, emailCodeFamily, emailCodeRegisters, emailLinkBinding, emailOf,
  newEmailCode, offersEmailCode, typedEmailCode, type EmailCodeExtra,
} from '../../domain/email-codes';
import { event, recordSubject, type Acting, type Subject } from '../../domain/events';
import { displayName, type MailRequest } from '../../domain/mail';
import { changesFrom } from '../../domain/profile-fields';
import { LimitReachedError, Refusal, invalidField } from '../../domain/refusal';
import { randomToken, safeEqual, sha256Hex } from '../../domain/secrets';
import type { StoredCredential } from '../../domain/storage/credentials';
import { DuplicateAttributeError, isDisabled, uniqueKey, type UserRecord } from '../../domain/storage/records';
import { USER_TYPE } from '../../domain/users';
import { insertRecord } from '../records/versions';
import { textsOf } from '../../texts';
import { asAccount, type CallContext } from '../services';
import {
  assertValid, formContext, isPaused, requestForm, requireFields, takenAttribute, takeRegistrationAttempt, type FormSubmission, type LoginCall, type SignInOutcome,
} from './call';
import { accountSubject, guardPasswordGuesses } from './password-guesses';
import { countFailedSignIn } from './failed-sign-ins';
import { countTowardBusy, proveWork } from './proof-of-work';
import { registrationTokens, sentToEnroll } from './second-factor-step';
import { joinByAddress, signedIn } from './signed-in';

/** 403-like refusal of an application or client that does not offer it. */
function notOffered(): Refusal {
  return new Refusal('not_offered', 'this application does not offer sign-in by email code to this client; '
    + 'an operator turns it on with the setting email_code_sign_in=on (docs/email-codes.md)');
}

/** What starts a sign-in by email code: the address typed, and for a hosted page, where to go back to. */
export interface BeginEmailCode { email: string; hosted?: EmailCodeExtra['hosted']; altcha?: string }

/** A code mailed (or, to an address that gets none, seemingly so): the code_token that redeems it, and how long it lives. */
export interface EmailCodeBegun { codeToken: string; expiresIn: number }

/**
 * Mails a 6-digit code and a link that sign in (docs/email-codes.md). The answer is the same
 * whether an account has the address or not, and so is the work: every begin takes from the
 * recipient's and the client address's mail budgets (shared with the other emails), stores one
 * code row (ending the address's earlier codes) and commits. Only an account's address, or an
 * unknown one where the client may register by code, is mailed.
 */
export async function beginEmailCode(
  ctx: LoginCall<'baseUrls' | 'box' | 'clock' | 'db' | 'mailLimits' | 'rateLimiter' | 'work'>, command: BeginEmailCode,
): Promise<EmailCodeBegun> {
  const { request, app } = ctx;
  const { client } = request;
  if (!offersEmailCode(app, client)) throw notOffered();
  const email = emailOf(command.email);
  if (!email) throw invalidField('email', 'must be one email address, such as ada@example.com (at most 254 characters)', { message: textsOf('api', request.flow.locale).invalidEmail });
  await proveWork(ctx, command.altcha);
  const normalized = uniqueKey(email)!;
  const { rateLimiter, mailLimits, db, clock, box, work, baseUrls } = ctx.services;
  // taken atomically before anything is sent: parallel begins never mail more than the budget
  await rateLimiter.take([
    [BUDGET_KEYS.mailRecipient(app.id, sha256Hex(normalized)), mailLimits.recipient],
    [BUDGET_KEYS.mailAddress(app.id, ctx.clientAddress), mailLimits.address],
  ]);
  const record = await db.records.find(app.id, { email });
  const now = clock.now();
  const registration = record === undefined;
  const mailed = record ? !isDisabled(record, now) : emailCodeRegisters(app, client);

  const codeToken = randomToken(32);
  const code = newEmailCode();
  const hash = sha256Hex(codeToken);
  const extra: EmailCodeExtra = {
    sealedCode: box.seal(code, emailCodeBinding(hash)), sealedEmail: box.seal(email, emailCodeBinding(hash)), ...(command.hosted && { hosted: command.hosted }),
  };
  const family = emailCodeFamily(box, app.id, normalized);
  const link = new URL(EMAIL_LINK_PATH, baseUrls.of(app.name));
  const locale = command.hosted?.locale ?? request.flow.locale;
  link.searchParams.set('l', box.seal(codeToken, emailLinkBinding(app.id)));
  // the link's page speaks the email's language
  link.searchParams.set('locale', locale);
  // an address that gets no mail still leaves the same outbox row, addressed to nobody (the mail worker
  // sends nothing for it, and no row names the address): the begin writes and queues the same either way
  const mail: MailRequest = {
    app, template: 'email-code', locale, to: mailed ? record?.email ?? email : '', name: mailed ? (record ? displayName(record) : email.split('@')[0]) : '',
    link: link.toString(), code, expiresIn: EMAIL_CODE_SECONDS,
  };
  const subject: Subject = record && mailed ? recordSubject(record.id) : { kind: 'application', id: String(app.id) };
  // someone not known yet asked through the client (an address's owner, or not): nobody's act to audit, like the account's own
  const acting: Acting = record && mailed ? asAccount(ctx, record.id, client) : { actor: { kind: 'system' }, origin: { ...ctx.origin, clientId: client.clientId } };
  // the same writes for every address (the code's row, the event), and the answer once they commit,
  // before the email is queued: it takes as long whether an account has the address or not
  await work.run(async (uow) => {
    // a new code ends the address's earlier ones
    await db.credentials.revokeFamily(app.id, family, now, uow.tx);
    await db.credentials.insert([{
      // (an account that gets no mail is not named: its row answers as an unknown address's does)
      applicationId: app.id, kind: 'email_code', valueHash: hash, entityId: mailed ? record?.id ?? null : null, clientId: client.id, forClientId: null,
      redirectUri: request.redirectUri ?? null, extra: extra as unknown as Record<string, unknown>, family,
      expiresAt: new Date(now.getTime() + EMAIL_CODE_SECONDS * 1000),
    }], now, uow.tx);
    uow.record(event('account.email_code_requested', app.id, now, acting, subject, { registration, mailed }, { mail }));
  }, { readCommitted: true, answerFirst: true });
  return { codeToken, expiresIn: EMAIL_CODE_SECONDS };
}

/**
 * What redeems a mailed code: its code_token and the code typed, or, on the page a link opens in the
 * browser that asked, the link's sealed code_token (`link`, proven by that browser holding the same
 * code_token). `form`: the registration form's other fields, for an address no account has.
 */
export interface EmailCodeSignInCommand {
  codeToken: string;
  code?: string;
  link?: string;
  form?: FormSubmission;
  refreshSecret?: string;
}

const spentToken = () => invalidField('codeToken', 'is invalid, expired or already used (a code lives 10 minutes and works once; a new code ends the earlier one); ask for a new code');

/** The live code row of `codeToken`, this client's. */
async function liveCode(ctx: LoginCall<'clock' | 'db'>, codeToken: string): Promise<StoredCredential> {
  if (codeToken.length > 64 || codeToken === '') throw spentToken();
  const row = await ctx.services.db.credentials.findActive(ctx.app.id, 'email_code', sha256Hex(codeToken), ctx.services.clock.now());
  if (!row || row.clientId !== ctx.request.client.id) throw spentToken();
  return row;
}

/** The code and the address a row keeps sealed; undefined when they do not open (another SECRET_KEY). */
function openCode(ctx: CallContext<'box'>, row: StoredCredential): { code: string; email: string } | undefined {
  const extra = row.extra as Partial<EmailCodeExtra> | null;
  if (!extra?.sealedCode || !extra.sealedEmail) return undefined;
  try {
    const binding = emailCodeBinding(row.valueHash);
    return { code: ctx.services.box.open(extra.sealedCode, binding), email: ctx.services.box.open(extra.sealedEmail, binding) };
  } catch {
    return undefined;
  }
}

/**
 * Signs in with a mailed code (docs/email-codes.md): exactly what a password sign-in answers, a
 * first factor (`amr` otp and email). Each code takes 5 wrong guesses, then ends; every guess also
 * draws on the account's and the client address's sign-in budgets, shared with passwords. The right
 * code spends its row by one conditional update, so of any number of parallel redemptions one signs
 * in. To an address no account has, it registers with the flow's registration form (its fields
 * other than the address and passwords) where the client may register by code.
 */
export async function emailCodeSignIn(
  ctx: LoginCall<'box' | 'clock' | 'db' | 'flows' | 'joinableDomains' | 'logger' | 'loginLimits' | 'rateLimiter'
    | 'registrationLimit' | 'socialTokens' | 'tokens' | 'versions' | 'work'>,
  command: EmailCodeSignInCommand,
): Promise<SignInOutcome> {
  const { request, app } = ctx;
  if (!offersEmailCode(app, request.client)) throw notOffered();
  const row = await liveCode(ctx, command.codeToken);
  const opened = openCode(ctx, row);
  if (!opened) throw spentToken();
  const { db, rateLimiter, box } = ctx.services;
  const known = row.entityId === null ? await db.records.find(app.id, { email: opened.email }) : await db.records.find(app.id, { id: row.entityId });

  let guesses: Awaited<ReturnType<typeof guardPasswordGuesses>> | undefined;
  if (command.link !== undefined) {
    // the link's own code_token, opened in the browser that holds the same one
    let linked: string | undefined;
    try {
      linked = box.open(command.link, emailLinkBinding(app.id));
    } catch {
      linked = undefined;
    }
    if (linked === undefined || !safeEqual(sha256Hex(linked), row.valueHash)) throw invalidField('link', 'is not the link of this browser\'s code; type the code the email shows');
  } else {
    if (command.code === undefined) throw new Refusal('missing', 'code is required: the 6-digit code of the email', { field: 'code' });
    const typed = typedEmailCode(command.code);
    // not a code at all: no guess taken
    if (typed === undefined) {
      throw invalidField('code', 'must be the 6 digits of the email (spaces and dashes are ignored)', { message: textsOf('api', request.flow.locale).wrongEmailCode });
    }
    // 5 wrong guesses per code, counted across pods before the code is compared; a right one gives its guess back
    const key = BUDGET_KEYS.emailCodeGuesses(app.id, row.valueHash);
    let taken: Awaited<ReturnType<typeof rateLimiter.take>>;
    try {
      taken = await rateLimiter.take([[key, { max: EMAIL_CODE_GUESSES, windowSeconds: EMAIL_CODE_SECONDS }]]);
    } catch (e) {
      if (!(e instanceof LimitReachedError)) throw e;
      throw invalidField('codeToken', `has had ${EMAIL_CODE_GUESSES} wrong codes and is ended; ask for a new code`);
    }
    guesses = await guardPasswordGuesses(ctx, accountSubject(known, uniqueKey(opened.email)!));
    if (!safeEqual(typed, opened.code)) {
      if (known) void countFailedSignIn(ctx, known.id, 'wrong_code', request.client);
      await countTowardBusy(ctx);
      throw new Refusal('wrong_credentials', 'the code is not the one the email shows; check it and type it again (each code takes 5 wrong tries)', {
        field: 'code', message: textsOf('api', request.flow.locale).wrongEmailCode,
      });
    }
    await taken.settle({ giveBack: [key] });
  }

  try {
    return await redeem(ctx, row, known, opened.email, command, guesses);
  } catch (e) {
    // the right code that signed nobody in (a field to fill in, a disabled account, spent meanwhile): no failure to count
    await guesses?.givenBack();
    throw e;
  }
}

/** A right code (or link) goes on: the account signs in, or the address registers. */
async function redeem(
  ctx: LoginCall<'box' | 'clock' | 'db' | 'flows' | 'joinableDomains' | 'logger' | 'rateLimiter' | 'registrationLimit' | 'socialTokens' | 'tokens' | 'versions' | 'work'>,
  row: StoredCredential, known: UserRecord | undefined, email: string, command: EmailCodeSignInCommand, guesses: Awaited<ReturnType<typeof guardPasswordGuesses>> | undefined,
): Promise<SignInOutcome> {
  const { request, app } = ctx;
  const { db, clock } = ctx.services;
  if (!known) {
    if (!emailCodeRegisters(app, request.client)) {
      throw new Refusal('no_such_account', 'no account has this email address, and this client does not register by email code (setting email_code_registration)', {
        message: textsOf('api', request.flow.locale).noAccountForCode,
      });
    }
    const outcome = await registerByCode(ctx, row, email, command);
    await guesses?.succeeded();
    return outcome;
  }
  // spent before anything is issued: of parallel redemptions, one goes on
  if (!(await db.credentials.consumeAlone(app.id, 'email_code', row.valueHash, clock.now(), request.client.id))) throw spentToken();
  const outcome = await signedIn(ctx, request, known, { factors: ['email_code'], refreshSecret: command.refreshSecret });
  await (isPaused(outcome) ? guesses?.firstOfTwo() : guesses?.succeeded());
  return outcome;
}

/**
 * A registration proven by a mailed code: the flow's registration form (`form`, else
 * registrationForm) without its address, which the code proved (verified from now on), and without
 * passwords (the account signs in by code, and may set one later).
 */
async function registerByCode(
  ctx: LoginCall<'box' | 'clock' | 'db' | 'flows' | 'joinableDomains' | 'logger' | 'rateLimiter' | 'registrationLimit' | 'tokens' | 'versions' | 'work'>,
  row: StoredCredential, email: string, command: EmailCodeSignInCommand,
): Promise<SignInOutcome> {
  const { request, app } = ctx;
  refuseClosedRegistration(app, request.client);
  // the flow's registration forms only (a sign-in form's would skip the registration's rules)
  const form = requestForm(ctx, request, command.form ?? { values: {} }, 'registrationForm', '/oauth/register_native_traditional');
  const emailField = form.fields.find((f) => f.field.schemaAttribute === 'email');
  if (!emailField) throw new Refusal('misconfigured', `form ${form.name} has no field for the email address, so a code cannot register with it`);
  const passwordFields = form.fields.filter((f) => f.field.type === 'password').map((f) => f.name);
  const values = { ...command.form?.values, [emailField.name]: email };
  for (const p of passwordFields) delete values[p];
  // the address and the passwords are not the form's to send here
  requireFields(form, values, Object.fromEntries(passwordFields.map((p) => [p, ''])));
  await takeRegistrationAttempt(ctx);
  const result = await form.validate(values, await formContext(ctx));
  for (const p of passwordFields) delete result.invalid[p];
  assertValid(result);
  const { username, attributes } = changesFrom(form, result.values);
  const { db, clock, work } = ctx.services;
  try {
    const { record, tokens } = await work.run(async (uow) => {
      const { tx } = uow;
      const now = clock.now();
      if (!(await db.credentials.consume(app.id, 'email_code', row.valueHash, now, tx, request.client.id))) throw spentToken();
      const { written, acting } = await insertRecord(ctx.services, uow, {
        applicationId: app.id, typeName: USER_TYPE, uuid: randomUUID(), email, username: username ?? null,
        passwordHash: null, emailVerified: now, attributes,
      }, (made) => asAccount(ctx, made.id, request.client));
      const created = written.record;
      const tokens = await registrationTokens(ctx, request, { entityId: created.id, factors: ['email_code'] }, tx, command.refreshSecret);
      uow.record(event('account.registered', app.id, created.created, acting, recordSubject(created.id), { method: 'email_code' }));
      return { record: { written, created }, tokens };
    });
    await joinByAddress(ctx, request, record.created);
    if (tokens.enrollToken !== undefined) return sentToEnroll(tokens.enrollToken, 'the account is registered');
    return { record: record.written.rendered, ...tokens };
  } catch (e) {
    if (!(e instanceof DuplicateAttributeError) || e.attribute === 'uuid') throw e;
    // the address registered meanwhile (another tab, a password registration): the same answer the unique rule gives
    throw takenAttribute(ctx, request, form, e.attribute);
  }
}

/** The code a link's page shows in a browser that did not ask (to type where it did); undefined when the link is not live. */
export async function codeOfLink(ctx: CallContext<'box' | 'clock' | 'db'>, command: { link: string }): Promise<{ code: string; email: string; row: StoredCredential } | undefined> {
  let codeToken: string;
  try {
    codeToken = ctx.services.box.open(command.link, emailLinkBinding(ctx.app.id));
  } catch {
    return undefined;
  }
  const row = await ctx.services.db.credentials.findActive(ctx.app.id, 'email_code', sha256Hex(codeToken), ctx.services.clock.now());
  const opened = row && openCode(ctx, row);
  return opened ? { ...opened, row: row! } : undefined;
}
