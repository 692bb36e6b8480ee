import type { Principal } from './authenticate';
import type { ReplayGuard } from './replay-guard';
import type { Params } from './params';
import type { Client } from '../domain/clients';
import { asClient, type CallContext, type Services } from '../usecases/services';
import type { AdminCall } from '../usecases/clients/deps';

/** What the API's handlers may use: the use cases' services, and what the API's authentication needs besides. */
export interface ApiServices extends Services {
  /** Signatures already accepted (replay protection of the Signature scheme). */
  replays: ReplayGuard;
}

/** One request, already parsed, routed to its application and authenticated: a use case's call, and who made it. */
export interface RequestContext extends CallContext {
  requestId: string;
  /** What the request sent, from the query and the body as the route reads them. */
  params: Params;
  principal: Principal;
  services: ApiServices;
}

/** A handler returns the success body without `stat`; the renderer adds it. */
export type Handler = (ctx: RequestContext) => Promise<Record<string, unknown>>;

/** The calling client; routes that use this only admit client schemes. */
export function caller(ctx: RequestContext): Client {
  if (ctx.principal.kind !== 'client') throw new Error('this handler needs an authenticated client');
  return ctx.principal.client;
}

/** The admin API's calls: the caller's application, acted on by the calling client (routes that use this only admit client schemes). */
export function adminCall(ctx: RequestContext): AdminCall {
  return { applicationId: ctx.app.id, acting: asClient(ctx, caller(ctx)) };
}
