import { AsyncLocalStorage } from 'node:async_hooks';
import type { Request, Response } from 'express';
import type { Origin } from '../domain/events';
import type { ProviderLogout, GrantEnd } from '../usecases/oidc/provider-storage';
import { peerOrigin } from './pages';

/**
 * The request the OpenID provider is answering, and why it writes what it writes: the one place
 * that says it. oidc-provider calls its adapter without the request, and the use cases behind the
 * adapter record where a change came from and what it was for. `route` is the provider's name of
 * the endpoint (`token`, `end_session`, `revocation`, …) and `client` the client, read from its
 * context once it has them; `granted`, what the interaction page is granting; `userCodeMissed`,
 * that the device page was given a code no device has. What a write is for follows from them
 * (`grantEnds`, `sessionEnds`), as the provider's own events name it (`grant.revoked` at the
 * revocation endpoint, `end_session.success`, a spent code presented again at the token endpoint).
 */
export interface ProviderRequest {
  origin: Origin;
  route?: string;
  /** The client the request is from, once the provider knows it. */
  client?: string;
  /** What the interaction page grants in this request: the scopes not granted before, and how they were consented to. */
  granted?: { scopes: string[]; consent: 'implied' | 'given' };
  /** The device page was given a user code no device has (the attempt stays counted). */
  userCodeMissed?: boolean;
  /** The `jti` of the request's DPoP proof as sent (unverified): what tells a replayed proof from a replayed client assertion. */
  dpopJti?: string;
  /** What an app's logout owes the apps of the session it ends, as the provider names them: recorded with the session's end. */
  logouts?: ProviderLogout[];
}

/** Notes what an app's logout owes, for the session's end to record; false when no request is at hand to note it in. */
export function noteLogoutOwed(logout: ProviderLogout): boolean {
  const store = current.getStore();
  if (!store) return false;
  (store.logouts ??= []).push(logout);
  return true;
}

/** What the request's logout owes, taken (the session's end records it once). */
export function takeLogoutsOwed(): ProviderLogout[] | undefined {
  const store = current.getStore();
  const owed = store?.logouts;
  if (store) store.logouts = undefined;
  return owed;
}

/** Why the provider ends a grant, by the endpoint it is answering: a spent code or token that came back to the token endpoint is a reuse. */
const GRANT_ENDS: Readonly<Record<string, GrantEnd>> = { token: 'reuse', revocation: 'revoked', end_session: 'logout', end_session_confirm: 'logout' };
export const grantEnds = (request: ProviderRequest): GrantEnd => GRANT_ENDS[request.route ?? ''] ?? 'ended';

/** Why the provider ends its session: a sign-out from an app (RP-initiated logout), or nothing said (it expired, another account signed in). */
export const sessionEnds = (request: ProviderRequest): 'logout' | undefined => (request.route?.startsWith('end_session') ? 'logout' : undefined);

const current = new AsyncLocalStorage<ProviderRequest>();

/** The provider's request of `req`, before it is answered: what a guard in front of the provider reads back once it answered. */
export const providerRequestOf = (req: Request, res: Response): ProviderRequest => {
  const dpopJti = jtiOf(req.headers.dpop);
  return { origin: { requestId: String(res.locals.requestId ?? ''), ...peerOrigin(req) }, ...(dpopJti !== undefined && { dpopJti }) };
};

/** A JWT's `jti` as sent, unverified (what the provider verifies later); undefined for anything else. */
function jtiOf(header: string | string[] | undefined): string | undefined {
  if (typeof header !== 'string' || header.length > 8192) return undefined;
  try {
    const jti = (JSON.parse(Buffer.from(header.split('.')[1] ?? '', 'base64url').toString()) as { jti?: unknown }).jti;
    return typeof jti === 'string' && jti.length <= 256 ? jti : undefined;
  } catch {
    return undefined;
  }
}

/** Runs `answer` (the provider's handling of `req`, or a page driving the provider) with its request at hand. */
export function withProviderRequest<T>(req: Request, res: Response, answer: () => T, request = providerRequestOf(req, res)): T {
  return current.run(request, answer);
}

/** Says that the device page was given a code no device has (the provider's NotFoundError). */
export function noteUserCodeMissed(): void {
  const store = current.getStore();
  if (store) store.userCodeMissed = true;
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
