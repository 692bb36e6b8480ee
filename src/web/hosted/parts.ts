import type { Request, Response } from 'express';
import type { Application } from '../../domain/storage/applications';
import type { Client } from '../../domain/clients';
import type { FlowVersion } from '../../domain/flows';
import { safeEqual } from '../../domain/secrets';
import { isHttpUrl, settingOfList } from '../../domain/settings';
import { DependencyDownError, Refusal } from '../../domain/refusal';
import type { Services } from '../../usecases/services';
import type { FlowRequest, SignedIn } from '../../usecases/login/call';
import { accountCallbackOf } from '../../usecases/account/browser-sessions';
import { clientFlow, pageError, type PageRefusal } from '../login-calls';
import { cookieValue, type csrf, escape, type PageProblem, type PageLocale } from '../pages';
import { filled, textsOf } from '../../texts';

// What the hosted pages share: their words, who a page works for (its entry), its forms' hidden values, and the way to the app.

const badLink = (detail: string): PageProblem => ({ key: 'badLink', detail });

export type Key =
  | 'signIn' | 'register' | 'forgot' | 'socialRegister' | 'signInButton' | 'registerButton' | 'forgotButton' | 'or' | 'withProvider'
  | 'noAccount' | 'haveAccount' | 'forgotLink' | 'backToSignIn' | 'forgotIntro' | 'forgotSent' | 'socialIntro' | 'merge'
  | 'tooMany' | 'expired' | 'failed' | 'otherBrowser' | 'codeTitle' | 'codeIntro' | 'codeLabel' | 'codeButton' | 'recoveryLabel' | 'codeAgain'
  | 'passkeyButton' | 'passkeyFailed' | 'enrollTitle' | 'enrollIntro' | 'enrollSecret' | 'enrollButton' | 'enrolledTitle' | 'enrolledIntro'
  | 'continueSignIn' | 'emailCodeLink' | 'emailCodeTitle' | 'emailCodeAsk' | 'emailLabel' | 'emailCodeSend' | 'emailCodeSent' | 'emailCodeLabel'
  | 'emailCodeButton' | 'emailCodeAgain' | 'emailCodeRegister' | 'linkTitle' | 'linkIntro' | 'linkButton' | 'linkOtherBrowser' | 'linkExpired'
  | 'organizationLink' | 'organizationTitle' | 'organizationAsk' | 'organizationNone' | 'organizationButton';

export const say = (locale: PageLocale, key: Key, values: Record<string, string> = {}) =>
  filled(textsOf('hosted', locale)[key], values);

/** Who a hosted page works for: a login client, an allowed redirect_uri, the app's opaque state, and the client's flow. */
export interface Entry { client: Client; redirectUri: string; state?: string; locale: PageLocale; flow: FlowVersion }

/**
 * Where a page's forms may post and be redirected (CSP form-action covers the redirects a POST
 * starts): this host, the sign-in's redirect URI, and the client's other redirect URIs. A sign-in
 * for an OpenID app goes through the account page's callback here and ends at the app's
 * redirect URI, one of its client's.
 */
export function formActionOf(app: Application, entry: Entry): string {
  const registered = settingOfList(entry.client.settings.redirect_uris ?? app.settings.redirect_uris).filter(isHttpUrl).map((u) => new URL(u).origin);
  return ["'self'", ...new Set([new URL(entry.redirectUri).origin, ...registered.slice(0, 20)])].join(' ');
}

/** What the social callback needs to come back to the hosted page (stored with the sign-in in progress). */
export interface HostedReturn { clientId: string; redirectUri: string; state?: string }

/** The pages built from a form of the login client's flow, and that form's name. */
export type View = 'signin' | 'register' | 'forgot' | 'social';
export const FORMS: Record<View, string> = { signin: 'signInForm', register: 'registrationForm', forgot: 'forgotPasswordForm', social: 'socialRegistrationForm' };
/** Binds the social token a page carries to the browser the social callback answered (see `Held`). */
export const HOLD_COOKIE = 'gh_social_hold';
export const HOLD_SECONDS = 30 * 60;
const MAX_STATE = 512;

/** Where a person at an organization with its own identity provider types their work address (home-realm discovery, organization.ts). */
export const ORGANIZATION_PATH = '/signin/organization';
/** Where a sign-in by email code starts (email-code.ts). */
export const EMAIL_CODE_PATH = '/signin/email-code';

const one = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** The operators' console's own callback, for a login client of the operators' application (docs/console.md). */
const isConsoleCallback = (services: Services, app: Application, uri: string) =>
  services.baseUrls.console?.app === app.name && services.baseUrls.console.callback === uri;

/** The exact redirect URIs a login client's `redirect_uris` setting (else the application's) allows. */
export function allowedRedirectUris(app: Application, client: Client): Set<string> {
  return new Set(settingOfList(client.settings.redirect_uris ?? app.settings.redirect_uris).filter(isHttpUrl));
}

/** An API failure as the page shows it: the flow's messages by field, else one notice. */
export function pageFailure(res: Response, locale: PageLocale, form: string, e: PageRefusal): { status: number; shown: { notice?: string; invalid?: Record<string, string[]> } } {
  // a dependency down: nothing was done, said on the form
  if (e instanceof DependencyDownError) return { status: 500, shown: { notice: say(locale, 'failed', { reason: pageError(e).message }) } };
  if (!(e instanceof Refusal)) {
    const seconds = String(e.retryAfterSeconds);
    res.setHeader('Retry-After', seconds);
    return { status: 429, shown: { notice: say(locale, 'tooMany', { seconds }) } };
  }
  const invalid = { ...e.detail.fields } as Record<string, string[]>;
  const formWide = invalid[form];
  if (formWide) return { status: 400, shown: { notice: formWide.join(' ') } };
  if (Object.keys(invalid).length > 0) return { status: 400, shown: { invalid } };
  // the person's own message when the flow has one, else what the API would say
  const message = e.detail.message ?? pageError(e).message;
  return { status: e.reason === 'misconfigured' ? 500 : 400, shown: { notice: say(locale, 'failed', { reason: message }) } };
}

/** What the hosted pages' functions share: the services, and the CSRF token of their forms. */
export interface Hosted { services: Services; token: ReturnType<typeof csrf> }

/** The page's client, redirect URI, state and flow; or what is wrong with the link (never redirected to). */
export async function entryOf(services: Services, app: Application, source: Record<string, unknown>, locale: PageLocale): Promise<Entry | PageProblem> {
  const clientId = one(source.client_id);
  if (!clientId || clientId.length > 64) return badLink('client_id is missing: open this page with the client_id of a login client of this application.');
  const client = await services.clients.find(app.id, clientId);
  if (!client || !client.features.includes('login_client')) return badLink('client_id is not a login client of this application.');
  const redirectUri = one(source.redirect_uri);
  // the account page's own callback is every login client's: its code stays with this service
  if (!redirectUri || !(allowedRedirectUris(app, client).has(redirectUri) || redirectUri === accountCallbackOf(services, app) || isConsoleCallback(services, app, redirectUri))) {
    return badLink('redirect_uri is missing or is not on the allow-list of this client (its redirect_uris setting, or the application\'s); nothing was sent anywhere.');
  }
  const state = one(source.state);
  if (state !== undefined && (state.length > MAX_STATE || /[\u0000-\u001f\u007f]/.test(state))) return badLink(`state must be at most ${MAX_STATE} printable characters.`);
  // a flow without the page's locale is shown in English, as its messages would be
  const flow = await clientFlow(services, app, client, locale);
  if (!flow) return badLink('this login client has no default flow to show (its default_flow_name and default_flow_version settings).');
  return { client, redirectUri, state: state || undefined, locale, flow };
}

export const entryQuery = (entry: Entry, extra: Record<string, string> = {}) => new URLSearchParams({
  client_id: entry.client.clientId, redirect_uri: entry.redirectUri, locale: entry.locale, ...(entry.state ? { state: entry.state } : {}), ...extra,
}).toString();

export const hidden = (fields: Record<string, string | undefined>) => Object.entries(fields)
  .filter((e): e is [string, string] => e[1] !== undefined)
  .map(([k, v]) => `<input type="hidden" name="${escape(k)}" value="${escape(v)}">`).join('');

/**
 * What a page keeps through its form after a social callback: a social token to register, or a
 * merge token to link at sign-in, and the provider's name. Only the callback's own page puts them
 * in a form, and it binds them to its browser with a keyed tag in an HttpOnly, SameSite=Strict
 * cookie: a POST carrying a token without that tag (a cross-site form, a token copied into
 * another browser) is refused, so nobody can make a victim's sign-in link their identity.
 */
export interface Held { token?: string; mergeToken?: string; provider?: string }
export const holdTag = (services: Services, held: Held) =>
  services.box.tag(JSON.stringify([held.provider ?? '', held.token ?? '', held.mergeToken ?? '']), 'hosted social');

/** The social values of a POST, when this browser holds their tag; `undefined` when it does not. */
export function heldBy(services: Services, req: Request, body: Record<string, string>): Held | undefined {
  if (!body.token && !body.merge_token) return {};
  const held = { token: body.token || undefined, mergeToken: body.merge_token || undefined, provider: body.provider || undefined };
  const tag = cookieValue(req, HOLD_COOKIE);
  return tag && safeEqual(tag, holdTag(services, held)) ? held : undefined;
}

/** What a page built from the flow shows: what was typed, what failed, what was done, a held social token. */
export interface Shown extends Held {
  values?: Record<string, string>;
  invalid?: Record<string, string[]>;
  notice?: string;
  done?: string;
}

/** What a page's use case works for: the entry's login client and flow, its redirect_uri, and a code for the app. */
export const flowRequest = (entry: Entry): FlowRequest => ({ client: entry.client, flow: entry.flow, redirectUri: entry.redirectUri, responseType: 'code' });

/** To the app with the code (and its state). */
export function toApp(res: Response, entry: Entry, signedIn: SignedIn): void {
  res.clearCookie(HOLD_COOKIE, { path: '/' });
  const target = new URL(entry.redirectUri);
  target.searchParams.set('code', String(signedIn.authorizationCode));
  if (entry.state) target.searchParams.set('state', entry.state);
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.redirect(303, target.toString());
}

/** A page's GET or POST once its entry is checked (and a POST's CSRF token and held social values, index.ts). */
export type EntryWork = (req: Request, res: Response, app: Application, entry: Entry, body: Record<string, string>, held: Held) => Promise<void>;
