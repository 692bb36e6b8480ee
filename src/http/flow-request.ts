import { chosenFlow } from '../domain/flows';
import type { TokenPair } from '../domain/tokens';
import { ApiError, errors } from '../errors';
import { isPaused, RESPONSE_TYPES, type FlowRequest, type FormSubmission, type LoginCall, type LoginUseCase, type Paused, type ResponseType, type SignedIn, type SignInOutcome } from '../usecases/login/call';
import { pauseRefusal } from '../usecases/login/second-factor-step';
import type { Handler, RequestContext } from './context';

const MAX_REDIRECT_URI = 2048;

/** `redirect_uri`: an http(s) URL of at most 2,048 characters (login endpoints, codes and tokens). */
export function parseRedirectUri(ctx: RequestContext): string {
  const uri = ctx.params.require('redirect_uri');
  if (!/^https?:/i.test(uri)) throw errors.invalidArgument('redirect_uri', 'must begin with http: or https:');
  if (uri.length > MAX_REDIRECT_URI) throw errors.invalidArgument('redirect_uri', `is longer than ${MAX_REDIRECT_URI} characters`);
  return uri;
}

/**
 * The API's adapter of a login use case: the flow request parsed (redirect_uri as the endpoint
 * wants it), the endpoint's parameters made into the use case's command, and its result into the
 * answer's body.
 */
export const loginHandler = <C, R>(
  useCase: LoginUseCase<C, R>,
  redirectUri: 'required' | 'optional' | 'ignored',
  command: (ctx: RequestContext) => C,
  answer: (result: R) => Record<string, unknown>,
): Handler => async (ctx) => {
  const request = await parseFlowRequest(ctx, { redirectUri });
  const call: LoginCall = { origin: ctx.origin, app: ctx.app, clientAddress: ctx.clientAddress, services: ctx.services, request };
  return answer(await useCase(call, command(ctx)));
};

/** The form a login endpoint's request sends: `form` names it, and every parameter is a field value. */
export const formOf = (ctx: RequestContext): FormSubmission => ({ name: ctx.params.get('form'), values: ctx.params.values });

/** The `refresh_secret` a mobile SDK sends with sign-in and registration calls, as sent (the use case checks it where it issues tokens). */
export const refreshSecretOf = (ctx: RequestContext): string | undefined => ctx.params.get('refresh_secret');

/**
 * A sign-in that paused, as the API answers it (docs/second-factor.md): the spec's error body, 214
 * second_factor_required with its mfa_token or 215 second_factor_enrollment_required with its
 * enroll_token; anything else as it is.
 */
export function unlessPaused<T extends object>(outcome: T | Paused): T {
  if (isPaused(outcome)) throw pauseRefusal(outcome);
  return outcome;
}

/** A sign-in's answer: the record as `capture_user`, and the tokens response_type asked for (or its pause). */
export const signedInBody = (outcome: SignInOutcome): Record<string, unknown> => {
  const r: SignedIn = unlessPaused(outcome);
  return {
    capture_user: r.record, ...(r.accessToken !== undefined && { access_token: r.accessToken }), ...(r.authorizationCode !== undefined && { authorization_code: r.authorizationCode }),
  };
};

/** A pair as /oauth/token answers it (docs/api.md#oauthtoken). */
export const pairBody = (pair: TokenPair): Record<string, unknown> => ({
  access_token: pair.accessToken, expires_in: pair.expiresIn, refresh_token: pair.refreshToken,
  ...(pair.transactionState !== undefined && { transaction_state: pair.transactionState }),
});

/** An answer with nothing but `stat`. */
export const nothing = (): Record<string, unknown> => ({});

/** `thin_registration` and the like: true or false (the original also took 1 and 0). */
export function flag(ctx: RequestContext, name: string): boolean {
  const v = ctx.params.get(name);
  if (v === undefined || v === 'false' || v === '0') return false;
  if (v === 'true' || v === '1') return true;
  throw errors.invalidArgument(name, 'must be true or false');
}

/**
 * docs/api.md#flows: shared parameters, checked in the order a caller fixes them: client_id (100; 403
 * without login_client, refused by the route's kinds), flow and flow_version (or the client's
 * defaults; HEAD refused), locale, redirect_uri where the endpoint lists it, response_type; then
 * the flow version itself (500 when the name, version or locale is unknown).
 */
export async function parseFlowRequest(ctx: RequestContext, options: { redirectUri: 'required' | 'optional' | 'ignored' }): Promise<FlowRequest> {
  const p = ctx.params;
  if (ctx.principal.kind !== 'client') throw errors.missingArgument('client_id');
  const client = ctx.principal.client;
  const { name: flowName, version } = chosenFlow(client.settings, { flow: p.get('flow'), version: p.get('flow_version') });
  if (flowName === undefined) throw errors.missingArgument('flow');
  if (version === undefined) throw errors.missingArgument('flow_version');
  if (version.toUpperCase() === 'HEAD') throw errors.invalidArgument('flow_version', 'HEAD is not accepted; name a version number');
  const locale = p.require('locale');
  let redirectUri: string | undefined;
  if (options.redirectUri === 'required' || (options.redirectUri === 'optional' && p.get('redirect_uri') !== undefined)) {
    redirectUri = parseRedirectUri(ctx);
  }
  const responseType = (p.get('response_type') ?? 'token') as ResponseType;
  if (!RESPONSE_TYPES.includes(responseType)) throw errors.invalidArgument('response_type', 'must be token, code or code_and_token');
  if (responseType !== 'token' && redirectUri === undefined) {
    throw new ApiError('missingArgument', 'missing required argument: redirect_uri (an authorization code is bound to it)', { extra: { argument_name: 'redirect_uri' } });
  }
  const flow = await ctx.services.flows.resolve(ctx.app, flowName, version, locale);
  return { client, flow, redirectUri, responseType };
}
