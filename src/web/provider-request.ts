import { AsyncLocalStorage } from 'node:async_hooks';
import type { Request, Response } from 'express';
import type { Origin } from '../domain/events';
import { peerOrigin } from './pages';

/**
 * The request the OpenID provider is answering, for its adapter: oidc-provider calls the adapter
 * without it, and the use cases behind the adapter record where a change came from and what it
 * was for. `route` is the provider's name of the endpoint (`token`, `end_session`, `revocation`,
 * …) and `client` the client, read from its context once it has them; `granted`, what the
 * interaction page is granting.
 */
export interface ProviderRequest {
  origin: Origin;
  route?: string;
  /** The client the request is from, once the provider knows it. */
  client?: string;
  /** What the interaction page grants in this request: the scopes not granted before, and how they were consented to. */
  granted?: { scopes: string[]; consent: 'implied' | 'given' };
}

const current = new AsyncLocalStorage<ProviderRequest>();

/** Runs `answer` (the provider's handling of `req`, or a page driving the provider) with its request at hand. */
export function withProviderRequest<T>(req: Request, res: Response, answer: () => T): T {
  return current.run({ origin: { requestId: String(res.locals.requestId ?? ''), ...peerOrigin(req) } }, answer);
}

/** The provider's request being answered; an empty one outside any (a sweep, a test calling the adapter). */
export const providerRequest = (): ProviderRequest => current.getStore() ?? { origin: {} };

/** Koa middleware of the provider: what its context says of the request, for the adapter. */
export async function noteProviderRoute(ctx: { oidc?: { route?: string; client?: { clientId: string } } }, next: () => Promise<void>): Promise<void> {
  const store = current.getStore();
  if (!store) return next();
  // the route and the client are known once the provider's router matched them: read when the adapter asks
  Object.defineProperty(store, 'route', { get: () => ctx.oidc?.route, configurable: true, enumerable: true });
  Object.defineProperty(store, 'client', { get: () => ctx.oidc?.client?.clientId, configurable: true, enumerable: true });
  return next();
}

/** Runs `work` (the interaction page saving a grant) saying what it grants and how it was consented to. */
export function withGrant<T>(granted: { scopes: string[]; consent: 'implied' | 'given' }, work: () => Promise<T>): Promise<T> {
  const store = current.getStore();
  return current.run({ ...(store ?? { origin: {} }), granted }, work);
}
