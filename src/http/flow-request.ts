import { chosenFlow } from '../domain/flows';
import { ApiError, errors } from '../errors';
import { RESPONSE_TYPES, type FlowRequest, type LoginUseCase, type ResponseType } from '../usecases/login/call';
import type { Handler, RequestContext } from './context';

const MAX_REDIRECT_URI = 2048;

/** `redirect_uri`: an http(s) URL of at most 2,048 characters (login endpoints, codes and tokens). */
export function parseRedirectUri(ctx: RequestContext): string {
  const uri = ctx.params.require('redirect_uri');
  if (!/^https?:/i.test(uri)) throw errors.invalidArgument('redirect_uri', 'must begin with http: or https:');
  if (uri.length > MAX_REDIRECT_URI) throw errors.invalidArgument('redirect_uri', `is longer than ${MAX_REDIRECT_URI} characters`);
  return uri;
}

/** The API's handler of a login use case: the flow request parsed (redirect_uri as the endpoint wants it), then the use case. */
export const loginHandler = (useCase: LoginUseCase, redirectUri: 'required' | 'optional' | 'ignored'): Handler => async (ctx) => {
  const request = await parseFlowRequest(ctx, { redirectUri });
  return useCase({ requestId: ctx.requestId, origin: ctx.origin, app: ctx.app, params: ctx.params, clientAddress: ctx.clientAddress, services: ctx.services, request });
};

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
