import type { Request, Response } from 'express';
import { randomToken, safeEqual } from '../domain/secrets';
import { ACCOUNT_CALLBACK_PATH, browserSessionOf } from '../usecases/account/browser-sessions';
import type { Services } from '../usecases/services';
import type { Application } from '../domain/storage/applications';
import { peerBudgetKey } from '../domain/addresses';
import { cookieValue, peerOrigin } from './pages';

/**
 * The browser's side of a sign-in that ends at the account page's callback (docs/account-page.md):
 * the `state` it carries (random, with the login client's id) is kept in an HttpOnly cookie of
 * this browser, SameSite=Lax so that it comes back from a social provider's redirect too, so a
 * code brought by another browser starts nothing. `next`: the hosted page the callback goes on
 * to (a registration's passkey offer, with its entry), else the account page.
 */
const STATE_COOKIE = 'gh_account_state';
const NEXT_COOKIE = 'gh_account_next';
const STATE_SECONDS = 30 * 60;
const STATE_RANDOM = 32;

/**
 * Over TLS (or when PUBLIC_BASE_URL is https) the cookies are `__Host-`, Secure and for the whole
 * host, so that no sibling host can plant a state of its own (and sign the browser in to its
 * account); over plain http they are the callback's only.
 */
const scopeOf = (req: Request, secure: boolean) => (secure || req.secure
  ? { prefix: '__Host-', options: { secure: true, path: '/' } }
  : { prefix: '', options: { secure: false, path: ACCOUNT_CALLBACK_PATH } });

/** The browser session's cookie: `__Host-` and Secure over TLS (or an https PUBLIC_BASE_URL), so no sibling host can plant one. */
export const sessionCookieName = (req: Request, secure: boolean) => (secure || req.secure ? '__Host-gh_account' : 'gh_account');

/**
 * The browser's live session of the account page (the application's single sign-on session), if
 * its cookie holds one, marked as used (at most once a minute, by its use case): an app's sign-in
 * through the OpenID provider is a use of the application's single sign-on session, as a page of
 * the account is, so an app renewing its tokens silently keeps it from idling out.
 */
export async function browserSessionOfRequest(services: Services, req: Request, app: Application) {
  const value = cookieValue(req, sessionCookieName(req, services.baseUrls.secure));
  return value ? browserSessionOf({ origin: peerOrigin(req), app, clientAddress: peerBudgetKey(req.ip), services }, value) : undefined;
}

export function accountState(req: Request, res: Response, secure: boolean, clientId: string, next?: Record<string, string>): string {
  const state = `${randomToken(STATE_RANDOM / 2)}${Buffer.from(clientId).toString('base64url')}`;
  const { prefix, options } = scopeOf(req, secure);
  const cookie = { ...options, httpOnly: true, sameSite: 'lax' as const, maxAge: STATE_SECONDS * 1000 };
  res.cookie(`${prefix}${STATE_COOKIE}`, state, cookie);
  if (next) res.cookie(`${prefix}${NEXT_COOKIE}`, Buffer.from(JSON.stringify(next)).toString('base64url'), cookie);
  else res.clearCookie(`${prefix}${NEXT_COOKIE}`, options);
  return state;
}

/** The callback's side: the state's client id and where to go next, when this browser started it; the cookies cleared either way. */
export function returnedState(req: Request, res: Response, secure: boolean, state: string): { clientId: string; next?: Record<string, string> } | undefined {
  const { prefix, options } = scopeOf(req, secure);
  const held = cookieValue(req, `${prefix}${STATE_COOKIE}`) ?? '';
  const next = cookieValue(req, `${prefix}${NEXT_COOKIE}`);
  res.clearCookie(`${prefix}${STATE_COOKIE}`, options);
  res.clearCookie(`${prefix}${NEXT_COOKIE}`, options);
  if (!held || state.length <= STATE_RANDOM || !safeEqual(held, state)) return undefined;
  let parsed: unknown;
  try {
    parsed = next ? JSON.parse(Buffer.from(next, 'base64url').toString()) : undefined;
  } catch {
    parsed = undefined;
  }
  const fields = parsed && typeof parsed === 'object' && !Array.isArray(parsed)
    ? Object.fromEntries(Object.entries(parsed).filter((e): e is [string, string] => typeof e[1] === 'string')) : undefined;
  return { clientId: Buffer.from(state.slice(STATE_RANDOM), 'base64url').toString(), ...(fields && { next: fields }) };
}
