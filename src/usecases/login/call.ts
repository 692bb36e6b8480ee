import { BUDGET_KEYS } from '../../domain/budget-keys';
import type { Tx } from '../../domain/storage';
import type { NewCredential, StoredCredential } from '../../domain/storage/credentials';
import type { Client } from '../../domain/clients';
import type { CompiledForm, FormResult, ValidationContext } from '../../domain/flow-forms';
import type { FlowVersion } from '../../domain/flows';
import { randomToken, sha256Hex } from '../../domain/secrets';
import { AUTHORIZATION_CODE_SECONDS, refreshSessionKey, type Issue } from '../../domain/tokens';
import { Refusal, invalidField, notSignedIn } from '../../domain/refusal';
import { sessionOf, type SignInFactor } from '../../domain/session';
import type { SecondFactorMethod } from '../../domain/second-factor';
import type { CallContext, Services } from '../services';
import { newPasswordRules } from './password-rules';
import { countTowardBusy } from './proof-of-work';

export type ResponseType = 'token' | 'code' | 'code_and_token';
export const RESPONSE_TYPES: readonly ResponseType[] = ['token', 'code', 'code_and_token'];

/**
 * Where a login use case runs (sign-in, registration, social sign-in, the email requests): the
 * application and where the call came from, and the flow request (the login client, its flow,
 * redirect_uri, response_type). Each use case takes its own typed command beside it: the API's
 * adapter makes both from an HTTP request (flow-request.ts), the hosted pages from their own form
 * with the client and flow they already hold.
 */
export interface LoginCall<K extends keyof Services = keyof Services> extends CallContext<K> { request: FlowRequest }

/** A login use case: its typed result, or a Refusal a caller shows (the API as its error body, a page on its form). */
export type LoginUseCase<C, R> = (call: LoginCall, command: C) => Promise<R>;

/**
 * A form as the caller sent it: the form it names (`form` on the API; none: the use case's own) and
 * the values by field name, a date as its parts (`birthdate[dateselect_year]`, …) or whole.
 */
export interface FormSubmission { name?: string; values: Readonly<Record<string, string>> }

/** What a successful sign-in or registration gives: the record as the API shows it, and what response_type asked for. */
export interface SignedIn {
  record: Record<string, unknown>;
  accessToken?: string;
  authorizationCode?: string;
}

/**
 * A sign-in that waits between its first credential and its session (docs/second-factor.md): for
 * a second factor the account has (`second_factor`: the mfa_token that finishes it, and with
 * which methods), or for one to be added first (`enroll`: the enroll_token to add it with).
 * `proven`: what the first step proved ("the password is right").
 */
export interface Paused {
  pause: { kind: 'second_factor' | 'enroll'; token: string; methods: SecondFactorMethod[]; expiresIn: number; proven: string };
}

/** What a sign-in or a registration gives: its session, or its pause. */
export type SignInOutcome = SignedIn | Paused;

/** Whether a sign-in paused (the caller asks for the second factor, or for one to be added). */
export const isPaused = <T extends object>(outcome: T | Paused): outcome is Paused => 'pause' in outcome;

export interface FlowRequest {
  client: Client;
  flow: FlowVersion;
  redirectUri?: string;
  responseType: ResponseType;
}

/**
 * The form a request names (case-sensitive; `fallback` when none), among the flow's forms whose
 * `action` is this endpoint (a form without an action serves any endpoint).
 */
export function requestForm(ctx: CallContext<'flows'>, request: FlowRequest, submission: Pick<FormSubmission, 'name'>, fallback: string, endpoint: string): CompiledForm {
  const name = submission.name ?? fallback;
  const definition = request.flow.definition.forms[name];
  const fits = definition !== undefined && (definition.action === undefined || definition.action === endpoint);
  const form = fits ? ctx.services.flows.form(ctx.app, request.flow, name) : undefined;
  if (!form) {
    const usable = Object.entries(request.flow.definition.forms).filter(([, f]) => f.action === undefined || f.action === endpoint).map(([n]) => n);
    throw invalidField('form', `flow "${request.flow.name}" has no form "${name.slice(0, 64)}" for ${endpoint}; use ${usable.join(', ')} (form names are case-sensitive)`);
  }
  return form;
}

/** docs/api.md#flows: a required form field that was not sent at all is a missing argument (100). */
export function requireFields(form: CompiledForm, values: FormSubmission['values'], stored: Record<string, string> = {}): void {
  for (const { name, required, field } of form.fields) {
    if (!required || stored[name] !== undefined) continue;
    const sent = field.type === 'dateselect'
      ? ['year', 'month', 'day'].some((p) => values[`${name}[dateselect_${p}]`] !== undefined) || values[name] !== undefined
      : values[name] !== undefined;
    if (!sent) throw new Refusal('missing', `the form field ${name} is required`, { formField: name });
  }
}

/**
 * What a form of a login call is validated with: whether no other record of the application holds
 * a value (email and username are unique), and the service's rules for a new password
 * (docs/passwords.md), for the account `ownId` when it exists.
 */
export async function formContext(ctx: LoginCall<'db'>, ownId?: number): Promise<ValidationContext> {
  return {
    async isUnique(attribute: string, value: string): Promise<boolean> {
      if (attribute !== 'email' && attribute !== 'username') return true;
      const found = await ctx.services.db.records.find(ctx.app.id, attribute === 'email' ? { email: value } : { username: value });
      return !found || found.id === ownId;
    },
    password: await newPasswordRules(ctx.services.db, ctx.app, ctx.request.flow.locale, ownId),
  };
}

/** 390 with every message of every field, in the request's locale. */
export function assertValid(result: FormResult): void {
  if (Object.keys(result.invalid).length > 0) {
    throw new Refusal('invalid_form', 'one or more form fields are not valid; see invalid_fields', { fields: result.invalid });
  }
}

/**
 * The seam of every sign-in (docs/architecture.md#the-sign-in-seam): a first credential proved who
 * the person is (`entityId`) and with what (`factors`). A second factor owed pauses the sign-in
 * between this and the session being issued; the session's tokens then carry these facts.
 */
export interface Proven { entityId: number; factors: SignInFactor[] }

/** The tokens of a sign-in, by what the result calls them. */
export type IssuedTokens = Pick<SignedIn, 'accessToken' | 'authorizationCode'>;

/**
 * The credentials a successful login or registration issues, per response_type: the rows to
 * store (with `also`, more credentials for the same INSERT, such as a registration's welcome
 * link) and the tokens among them. `refreshSecret` is the secret a mobile SDK made on the device:
 * its access token can then be renewed with it (/oauth/refresh_access_token).
 */
export function loginCredentials(
  ctx: CallContext<'tokens'>,
  request: FlowRequest,
  proven: Proven,
  at: Date,
  refreshSecret: string | undefined,
  also: { issue: Issue; value: string }[] = [],
): { rows: NewCredential[]; tokens: IssuedTokens } {
  const { entityId } = proven;
  const { tokens } = ctx.services;
  /** What the result calls each credential's value; unnamed ones are stored, not answered. */
  const list: { name?: keyof IssuedTokens; issue: Issue; value?: string }[] = [];
  // the person proved who they are just now: these tokens may set a new password for a few
  // minutes, and every token of the session carries how and when (session.ts)
  const session = sessionOf(proven.factors, at);
  const proof = { authenticated_at: at.toISOString(), session };
  if (request.responseType !== 'code') {
    const access = tokens.accessToken(ctx.app, request.client, entityId, null, proof);
    const value = randomToken(20);
    list.push({ name: 'accessToken', issue: access, value });
    // the mobile SDKs' refresh secret: /oauth/refresh_access_token renews this token with it
    if (refreshSecret !== undefined) {
      // random, made on the device: 40 characters from the SDKs
      if (refreshSecret.length < 16 || refreshSecret.length > 256 || /[^\x21-\x7e]/.test(refreshSecret)) {
        throw invalidField('refreshSecret', 'must be 16 to 256 printable ASCII characters without spaces (the mobile SDKs send 40 random characters)');
      }
      list.push({ issue: tokens.refreshSecretIssue(ctx.app, request.client, entityId, access.family!, value, refreshSecret, session), value: refreshSessionKey(value) });
    }
  }
  if (request.responseType !== 'token') {
    list.push({ name: 'authorizationCode', issue: {
      kind: 'authorization_code', app: ctx.app, entityId, client: request.client, redirectUri: request.redirectUri!,
      family: randomToken(16), seconds: AUTHORIZATION_CODE_SECONDS, extra: proof,
    } });
  }
  const { values, rows } = tokens.credentialRows([...list, ...also], at);
  return { rows, tokens: Object.fromEntries(list.flatMap((c, n) => (c.name ? [[c.name, values[n]]] : []))) as IssuedTokens };
}

/** The tokens a successful login or registration gives, stored in `tx` (see loginCredentials). */
export async function loginTokens(
  ctx: CallContext<'clock' | 'db' | 'tokens'>,
  request: FlowRequest,
  proven: Proven,
  tx: Tx,
  refreshSecret: string | undefined,
  also: { issue: Issue; value: string }[] = [],
): Promise<IssuedTokens> {
  const at = ctx.services.clock.now();
  const { rows, tokens } = loginCredentials(ctx, request, proven, at, refreshSecret, also);
  await ctx.services.db.credentials.insert(rows, at, tx);
  return tokens;
}

/** Takes one registration attempt from the client address's budget (every attempt counts, before the unique rules can tell whether an address is registered). */
export async function takeRegistrationAttempt(ctx: CallContext<'rateLimiter' | 'registrationLimit'>): Promise<void> {
  await ctx.services.rateLimiter.take([[BUDGET_KEYS.registerAddress(ctx.app.id, ctx.clientAddress), ctx.services.registrationLimit]]);
  // every registration is load a proof of work may be asked for (`when_busy`)
  await countTowardBusy(ctx);
}

/** 390 for a unique attribute another record took first, with the flow's message for that rule. */
export function takenAttribute(ctx: CallContext<'flows'>, request: FlowRequest, form: CompiledForm, attribute: string): Refusal {
  const field = form.fields.find((f) => f.field.schemaAttribute === attribute);
  const rule = field?.field.validation.find((r) => r.rule === 'unique');
  const message = rule ? ctx.services.flows.text(request.flow, rule.message) : `${attribute} is already in use`;
  return new Refusal('invalid_form', 'one or more form fields are not valid; see invalid_fields', { fields: { [field?.name ?? attribute]: [message] } });
}

/**
 * Who a call acts for: the value of an access token (the API's `access_token`), or a session an
 * adapter has already found live (the account page's browser session).
 */
export type Bearer = string | StoredCredential;

/**
 * The record the `access_token` parameter of a login endpoint (or a browser session) acts for: 413
 * when the token is not live, or was issued for another client (`for_client_id`).
 */
export async function recordOfAccessToken(ctx: CallContext<'clock' | 'db'>, request: FlowRequest, value: Bearer) {
  const { db, clock } = ctx.services;
  const token = typeof value === 'string' ? await db.credentials.findActive(ctx.app.id, 'access_token', sha256Hex(value), clock.now()) : value;
  const usable = token && (token.forClientId === null || token.forClientId === request.client.id);
  const record = usable && token.entityId ? await db.records.find(ctx.app.id, { id: token.entityId }) : undefined;
  if (!token || !record) throw notSignedIn();
  return { token, record };
}
