import type { Request, Response } from 'express';
import type { Application } from '../../domain/storage/applications';
import type { StoredCredential } from '../../domain/storage/credentials';
import type { Client } from '../../domain/clients';
import type { FlowVersion } from '../../domain/flows';
import { Refusal } from '../../domain/refusal';
import { safeEqual } from '../../domain/secrets';
import { peerBudgetKey } from '../../domain/addresses';
import type { CallContext, Services } from '../../usecases/services';
import type { FlowRequest, LoginUseCase } from '../../usecases/login/call';
import type { AccountOverview } from '../../usecases/account/overview';
import { accountClient } from '../../usecases/account/account-client';
import { accountCallbackOf, type SessionView } from '../../usecases/account/browser-sessions';
import { callUseCase, clientFlow, type PageRefusal } from '../login-calls';
import { renderFields } from '../form-fields';
import { pageFailure, type HostedPages } from '../hosted';
import { accountState, browserSessionOfRequest, sessionCookieName } from '../account-sign-in';
import { brandOf, crossSite, escape, originOf, pageHandler, sendError, sendPage, stringFields, type PageLocale } from '../pages';
import { filled, textsOf } from '../../texts';

// What the account page's areas share: its words, the signed-in request, the way a change runs
// (`act`) and comes back to the page, and the small forms every section draws.

export type Key = keyof ReturnType<typeof accountTexts>;
const accountTexts = (locale: PageLocale) => textsOf('account', locale);
export const say = (locale: PageLocale, key: string, values: Record<string, string> = {}) => filled(accountTexts(locale)[key] ?? key, values);
/** `say`, escaped for the page's HTML. */
export const sayHtml = (locale: PageLocale) => (key: Key, values?: Record<string, string>) => escape(say(locale, key, values));

/** What a successful POST says once it has redirected back (`done`). */
export const DONE = [
  'profile', 'password', 'passkeyAdded', 'passkeyRenamed', 'passkeyRemoved', 'totpOff', 'identityLinked', 'identityUnlinked', 'sessionEnded', 'othersEnded', 'disowned',
  'organizationSwitched', 'organizationLeft', 'organizationJoined', 'organizationInvited',
] as const;
export type Done = (typeof DONE)[number];

/** What a signed-in request of the page works with: its session, its login client and that client's flow. */
export interface Signed { app: Application; locale: PageLocale; session: StoredCredential; client: Client; flow: FlowVersion }

/** What the page shows besides the account: what the last POST did, or why not (and in which form). */
export interface Shown { done?: Done; notice?: string; reauth?: boolean; form?: string; values?: Record<string, string>; invalid?: Record<string, string[]> }

/**
 * `formToken`: the CSRF token of a session's forms, a keyed MAC (SECRET_KEY) of the session's
 * hash: the same in every tab of the browser, worthless without the session's cookie, and ended
 * with the session. A POST must bring it and come from this origin (crossSite).
 */
export interface Page {
  services: Services;
  formToken: (session: StoredCredential) => string;
  secure: (req: Request) => boolean;
  /** The account page with what the last POST showed (overview.ts), which every area answers with. */
  show: (req: Request, res: Response, s: Signed, status: number, shown?: Shown) => Promise<void>;
  /** The hosted pages: their checks say where a registration's passkey offer goes back to. */
  hosted: HostedPages;
}

/** Where a registration's passkey offer lives (docs/account-page.md#a-passkey-after-registration). */
export const OFFER_PATH = '/register/passkey';

export const sessionCookie = (p: Page, req: Request) => sessionCookieName(req, p.services.baseUrls.secure);

/** Sends the browser to the hosted sign-in, which comes back to the callback with a code (accountState). */
export function toSignIn(p: Page, req: Request, res: Response, app: Application, client: Client, locale: PageLocale): void {
  const state = accountState(req, res, p.services.baseUrls.secure, client.clientId);
  const query = new URLSearchParams({ client_id: client.clientId, redirect_uri: accountCallbackOf(p.services, app), state, locale });
  res.redirect(303, `/signin?${query}`);
}

/** The call of a use case the page runs itself (finding its session, ending one it replaces). */
export const callOf = (p: Page, req: Request, res: Response, app: Application): CallContext =>
  ({ origin: originOf(req, res), app, clientAddress: peerBudgetKey(req.ip), services: p.services });

/** The browser and system of a User-Agent, as a person names them ("Firefox on Linux"); '' when unknown. */
export function deviceOf(agent: string | undefined): string {
  const ua = agent ?? '';
  const browser = /Edg\//.test(ua) ? 'Edge' : /OPR\//.test(ua) ? 'Opera' : /Firefox\//.test(ua) ? 'Firefox' : /Chrom(e|ium)\//.test(ua) ? 'Chrome'
    : /Safari\//.test(ua) ? 'Safari' : '';
  const system = /Android/.test(ua) ? 'Android' : /iPhone|iPad/.test(ua) ? 'iOS' : /Mac OS X/.test(ua) ? 'macOS' : /Windows/.test(ua) ? 'Windows'
    : /CrOS/.test(ua) ? 'ChromeOS' : /Linux/.test(ua) ? 'Linux' : '';
  return [browser, system].filter(Boolean).join(' / ');
}

/** A page for a browser without a session: a message and the way to sign in. */
export function signedOutPage(res: Response, app: Application, locale: PageLocale, status: number, message: string): void {
  const title = say(locale, 'title');
  sendPage(res, status, locale, title, `<h1>${escape(title)}</h1><p class="notice" role="status">${escape(message)}</p>`
    + `<a class="button" href="/account?locale=${escape(encodeURIComponent(locale))}">${escape(say(locale, 'signInAgain'))}</a>`, { brand: brandOf(app) });
}

/**
 * A time on the page: a mark that survives escaping, which `timed` (overview.ts) turns into a
 * `<time>` element, written in UTC and shown in the viewer's own time zone by LOCAL_TIMES_SCRIPT.
 */
export const dateOf = (_locale: PageLocale, at: Date) => `\u0001${at.toISOString()}\u0001`;

/** A small form of the page: one action, the CSRF token, hidden values, and its button. */
export function actionForm(action: string, token: string, button: string, fields: Record<string, string> = {}, inner = '', secondary = false): string {
  return `<form method="post" action="${escape(action)}">${inner}`
    + Object.entries(fields).map(([k, v]) => `<input type="hidden" name="${escape(k)}" value="${escape(v)}">`).join('')
    + `<input type="hidden" name="csrf" value="${escape(token)}">`
    + `<button type="submit"${secondary ? ' class="secondary"' : ''}>${escape(button)}</button></form>`;
}

/** A form of the flow (editProfileForm, changePasswordForm) with what the last attempt showed. */
export function flowForm(p: Page, s: Signed, name: string, action: string, button: string, values: Record<string, string>, shown: Shown, token: string): string {
  const form = p.services.flows.form(s.app, s.flow, name);
  if (!form) return '';
  const mine = shown.form === name;
  return `<form method="post" action="${action}" data-validate>`
    + renderFields(p.services.flows, s.flow, form, s.locale, mine ? { ...values, ...shown.values } : values, mine ? shown.invalid ?? {} : {})
    + `<input type="hidden" name="csrf" value="${escape(token)}"><button type="submit">${escape(button)}</button></form>`;
}

/** Where a change needs a sign-in minutes ago and the session's is older: the way to sign in again. */
export const reauthTip = (locale: PageLocale) => {
  const t = sayHtml(locale);
  return `<p class="tip">${t('reauth')} <a href="/account/reauth">${t('reauthLink')}</a></p>`;
};

export const factorsOf = (locale: PageLocale, session: Pick<SessionView, 'factors'>) => {
  const names = [...new Set((session.factors.length ? session.factors : ['unknown']).map((f) => say(locale, `factor_${f}`)))];
  return names.join(say(locale, 'and'));
};

/** What a section of the page draws from: the page, the signed-in request, the account's overview, the forms' token, what the last POST showed. */
export interface SectionView { p: Page; s: Signed; o: AccountOverview; token: string; shown: Shown }

/**
 * A section of the account page (overview.ts draws them in order, each under its heading, linked
 * from the top): its heading's id and title, and what it holds; `undefined` where the account has
 * no such section.
 */
export interface Section { id: string; title: Key; draw: (v: SectionView) => Promise<string | undefined> | string | undefined }

export const requestOf = (s: Signed): FlowRequest => ({ client: s.client, flow: s.flow, responseType: 'code' });

/** A use case refused because the session's sign-in is too old for the change: the page asks to sign in again. */
export const tooOld = (e: PageRefusal) => e instanceof Refusal && e.reason === 'invalid' && e.detail.field === 'accessToken';

export type SignedWork = (req: Request, res: Response, s: Signed, body: Record<string, string>) => Promise<void>;
/** A request of the page that needs no session (its sign-in's callback, an invitation's link). */
export type OpenWork = Parameters<typeof pageHandler>[1];

/**
 * A page request of a signed-in browser: without a live session it goes to sign in (a GET) or
 * back to the page (a POST, which did nothing); a POST needs the page's CSRF token.
 */
export const signed = (p: Page, resolveApp: (host: string | undefined) => Promise<Application>, work: SignedWork) =>
  pageHandler(resolveApp, async (req, res, app, locale) => {
    const s = await signedOf(p, req, app, locale);
    if (!s) {
      if (req.method === 'POST') return res.redirect(303, `/account?locale=${encodeURIComponent(locale)}`);
      const named = await accountClient(p.services, app, req.query.client_id);
      if (!named) {
        return sendError(res, 400, locale, app, {
          key: 'badLink', detail: 'open /account with the client_id of a login client of this application, or set the application setting account_client_id',
        });
      }
      return toSignIn(p, req, res, app, named, locale);
    }
    const body = req.method === 'POST' ? stringFields(req.body) : {};
    if (req.method === 'POST' && (crossSite(req) || !safeEqual(body.csrf ?? '', p.formToken(s.session)))) return p.show(req, res, s, 403, { notice: textsOf('hosted', locale).expired });
    await work(req, res, s, body);
  });

/** The browser's live session, its login client and that client's flow; undefined without one (or when its client has no flow to show). */
export async function signedOf(p: Page, req: Request, app: Application, locale: PageLocale): Promise<Signed | undefined> {
  const session = await browserSessionOfRequest(p.services, req, app);
  const stored = session?.clientId == null ? undefined : await p.services.db.clients.findById(app.id, session.clientId);
  const client = stored && await p.services.clients.find(app.id, stored.clientId);
  const flow = client && await clientFlow(p.services, app, client, locale);
  return session && client && flow ? { app, locale, session, client, flow } : undefined;
}

/** After a POST that did what it said: back to the page (a reload repeats nothing), which says so. */
export const doneTo = (res: Response, s: Signed, done: Done) => res.redirect(303, `/account?locale=${encodeURIComponent(s.locale)}&done=${done}`);

/** Runs a use case for the page, then back to the page saying `done`, or the page with what failed. */
export const act = <C>(p: Page, useCase: LoginUseCase<C, unknown>, command: (s: Signed, body: Record<string, string>) => C, done: Done, form?: string): SignedWork =>
  async (req, res, s, body) => {
    const result = await callUseCase(p.services, req, res, s.app, useCase, requestOf(s), command(s, body));
    if (!result.error) return doneTo(res, s, done);
    if (tooOld(result.error)) return p.show(req, res, s, 403, { reauth: true });
    const { status, shown } = pageFailure(res, s.locale, form ?? 'account', result.error);
    await p.show(req, res, s, status, { ...shown, form, values: form ? body : undefined });
  };
