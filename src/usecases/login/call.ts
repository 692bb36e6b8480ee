import type { Tx } from '../../domain/storage';
import type { NewCredential } from '../../domain/storage/credentials';
import type { Client } from '../../domain/clients';
import type { CompiledForm, FormResult } from '../../domain/flow-forms';
import type { FlowVersion } from '../../domain/flows';
import { randomToken, sha256Hex } from '../../domain/secrets';
import { AUTHORIZATION_CODE_SECONDS, refreshSessionKey, type Issue } from '../../domain/tokens';
import { ApiError, errors } from '../../errors';
import type { CallContext } from '../services';

export type ResponseType = 'token' | 'code' | 'code_and_token';
export const RESPONSE_TYPES: readonly ResponseType[] = ['token', 'code', 'code_and_token'];

/**
 * A login use case's input (sign-in, registration, social sign-in, the email requests): the flow
 * request (the login client, its flow, redirect_uri, response_type) and what the caller sent (the
 * form's fields and the endpoint's own parameters). The API's handlers make it from an HTTP request
 * (loginHandler); the hosted pages from their own form, with the client and flow they already hold.
 */
export interface LoginCall extends CallContext { request: FlowRequest }

/** A login use case: the answer's body, or an ApiError a caller shows (the API as its error body, a page on its form). */
export type LoginUseCase = (call: LoginCall) => Promise<Record<string, unknown>>;

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
export function requestForm(ctx: CallContext, request: FlowRequest, fallback: string, endpoint: string): CompiledForm {
  const name = ctx.params.get('form') ?? fallback;
  const definition = request.flow.definition.forms[name];
  const fits = definition !== undefined && (definition.action === undefined || definition.action === endpoint);
  const form = fits ? ctx.services.flows.form(ctx.app, request.flow, name) : undefined;
  if (!form) {
    const usable = Object.entries(request.flow.definition.forms).filter(([, f]) => f.action === undefined || f.action === endpoint).map(([n]) => n);
    throw errors.invalidArgument('form', `flow "${request.flow.name}" has no form "${name.slice(0, 64)}" for ${endpoint}; use ${usable.join(', ')} (form names are case-sensitive)`);
  }
  return form;
}

/** docs/api.md#flows: a required form field that was not sent at all is a missing argument (100). */
export function requireFields(ctx: CallContext, form: CompiledForm, stored: Record<string, string> = {}): void {
  for (const { name, required, field } of form.fields) {
    if (!required || stored[name] !== undefined) continue;
    const sent = field.type === 'dateselect'
      ? ['year', 'month', 'day'].some((p) => ctx.params.values[`${name}[dateselect_${p}]`] !== undefined) || ctx.params.values[name] !== undefined
      : ctx.params.values[name] !== undefined;
    if (!sent) throw errors.missingArgument(name);
  }
}

/** Whether no other record of the application holds `value` (email and username are unique). */
export function uniqueness(ctx: CallContext, ownId?: number) {
  return {
    async isUnique(attribute: string, value: string): Promise<boolean> {
      if (attribute !== 'email' && attribute !== 'username') return true;
      const found = await ctx.services.db.records.find(ctx.app.id, attribute === 'email' ? { email: value } : { username: value });
      return !found || found.id === ownId;
    },
  };
}

/** 390 with every message of every field, in the request's locale. */
export function assertValid(result: FormResult): void {
  if (Object.keys(result.invalid).length > 0) {
    throw new ApiError('invalidFormFields', 'one or more form fields are not valid; see invalid_fields', { extra: { invalid_fields: result.invalid } });
  }
}

/**
 * The credentials a successful login or registration issues, per response_type: the rows to
 * store (with `also`, more credentials for the same INSERT, such as a registration's welcome
 * link) and the answer naming their values.
 */
export function loginCredentials(
  ctx: CallContext,
  request: FlowRequest,
  entityId: number,
  at: Date,
  also: { issue: Issue; value: string }[] = [],
): { rows: NewCredential[]; answer: Record<string, string> } {
  const { tokens } = ctx.services;
  /** What the answer calls each credential's value; unnamed ones are stored, not answered. */
  const list: { name?: string; issue: Issue; value?: string }[] = [];
  // the password was typed just now: these tokens may set a new one for a few minutes
  const proof = { authenticated_at: at.toISOString() };
  if (request.responseType !== 'code') {
    const access = tokens.accessToken(ctx.app, request.client, entityId, null, proof);
    const value = randomToken(20);
    list.push({ name: 'access_token', issue: access, value });
    // the mobile SDKs' refresh secret: /oauth/refresh_access_token renews this token with it
    const secret = refreshSecret(ctx);
    if (secret !== undefined) {
      list.push({ issue: tokens.refreshSecretIssue(ctx.app, request.client, entityId, access.family!, value, secret), value: refreshSessionKey(value) });
    }
  }
  if (request.responseType !== 'token') {
    list.push({ name: 'authorization_code', issue: {
      kind: 'authorization_code', app: ctx.app, entityId, client: request.client, redirectUri: request.redirectUri!,
      family: randomToken(16), seconds: AUTHORIZATION_CODE_SECONDS, extra: proof,
    } });
  }
  const { values, rows } = tokens.credentialRows([...list, ...also], at);
  return { rows, answer: Object.fromEntries(list.flatMap((c, n) => (c.name ? [[c.name, values[n]]] : []))) };
}

/** The tokens a successful login or registration answers with, stored in `tx` (see loginCredentials). */
export async function loginTokens(
  ctx: CallContext,
  request: FlowRequest,
  entityId: number,
  tx?: Tx,
  also: { issue: Issue; value: string }[] = [],
): Promise<Record<string, string>> {
  const at = ctx.services.clock.now();
  const { rows, answer } = loginCredentials(ctx, request, entityId, at, also);
  await ctx.services.db.credentials.insert(rows, at, tx);
  return answer;
}

/**
 * The `refresh_secret` a mobile SDK sends with sign-in and registration calls (random, made on
 * the device: 40 characters from the SDKs), checked.
 */
function refreshSecret(ctx: CallContext): string | undefined {
  const secret = ctx.params.get('refresh_secret');
  if (secret === undefined) return undefined;
  if (secret.length < 16 || secret.length > 256 || /[^\x21-\x7e]/.test(secret)) {
    throw errors.invalidArgument('refresh_secret', 'must be 16 to 256 printable ASCII characters without spaces (the mobile SDKs send 40 random characters)');
  }
  return secret;
}

/** Takes one registration attempt from the client address's budget (every attempt counts, before the unique rules can tell whether an address is registered). */
export async function takeRegistrationAttempt(ctx: CallContext): Promise<void> {
  await ctx.services.rateLimiter.take([[`register:address:${ctx.app.id}:${ctx.clientAddress}`, ctx.services.registrationLimit]]);
}

/** 390 for a unique attribute another record took first, with the flow's message for that rule. */
export function takenAttribute(ctx: CallContext, request: FlowRequest, form: CompiledForm, attribute: string): ApiError {
  const field = form.fields.find((f) => f.field.schemaAttribute === attribute);
  const rule = field?.field.validation.find((r) => r.rule === 'unique');
  const message = rule ? ctx.services.flows.text(request.flow, rule.message) : `${attribute} is already in use`;
  return new ApiError('invalidFormFields', 'one or more form fields are not valid; see invalid_fields', {
    extra: { invalid_fields: { [field?.name ?? attribute]: [message] } },
  });
}

/**
 * The record the `access_token` parameter of a login endpoint acts for: 413 when the token is not
 * live, or was issued for another client (`for_client_id`).
 */
export async function recordOfAccessToken(ctx: CallContext, request: FlowRequest, value = ctx.params.require('access_token')) {
  const { db, clock } = ctx.services;
  const token = await db.credentials.findActive(ctx.app.id, 'access_token', sha256Hex(value), clock.now());
  const usable = token && (token.forClientId === null || token.forClientId === request.client.id);
  const record = usable && token.entityId ? await db.records.find(ctx.app.id, { id: token.entityId }) : undefined;
  if (!token || !record) throw errors.invalidAccessToken();
  return { token, record };
}
