import type { Request, Response } from 'express';
import { randomToken, safeEqual } from '../domain/secrets';
import { ACCOUNT_CALLBACK_PATH } from '../usecases/account/browser-sessions';
import { cookieValue } from './pages';

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

export function accountState(req: Request, res: Response, secure: boolean, clientId: string, next?: Record<string, string>): string {
  const state = `${randomToken(STATE_RANDOM / 2)}${Buffer.from(clientId).toString('base64url')}`;
  const options = { httpOnly: true, sameSite: 'lax' as const, secure: secure || req.secure, path: ACCOUNT_CALLBACK_PATH, maxAge: STATE_SECONDS * 1000 };
  res.cookie(STATE_COOKIE, state, options);
  if (next) res.cookie(NEXT_COOKIE, Buffer.from(JSON.stringify(next)).toString('base64url'), options);
  else res.clearCookie(NEXT_COOKIE, { path: ACCOUNT_CALLBACK_PATH });
  return state;
}

/** The callback's side: the state's client id and where to go next, when this browser started it; the cookies cleared either way. */
export function returnedState(req: Request, res: Response, state: string): { clientId: string; next?: Record<string, string> } | undefined {
  const held = cookieValue(req, STATE_COOKIE) ?? '';
  const next = cookieValue(req, NEXT_COOKIE);
  res.clearCookie(STATE_COOKIE, { path: ACCOUNT_CALLBACK_PATH });
  res.clearCookie(NEXT_COOKIE, { path: ACCOUNT_CALLBACK_PATH });
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
