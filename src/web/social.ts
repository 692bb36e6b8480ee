import { BUDGET_KEYS } from '../domain/budget-keys';
import { peerBudgetKey } from '../domain/addresses';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { Application } from '../domain/storage/applications';
import { safeEqual } from '../domain/secrets';
import { settingOfList } from '../domain/settings';
import { ProviderError } from '../domain/social/relying-party';
import { finishSocialSignIn } from '../usecases/social/finish-sign-in';
import { SOCIAL_STATE_SECONDS, startSocialSignIn } from '../usecases/social/start-sign-in';
import { LimitReachedError } from '../domain/refusal';
import type { Services } from '../usecases/services';
import type { HostedPages, HostedReturn } from './hosted';
import { brandOf, cookieValue, escape, LINK_CODE, markFailedPage, providerLabel, pageLocale, sendError, sendPage, text, type PageLocale } from './pages';

/**
 * What a sign-in in progress needs to resume on its callback (stored with it by the start use
 * case): it ends by posting a token to `tokenUrl`, or, when a hosted sign-in page started it, back
 * on that page (`hosted`), in the page's language.
 */
interface Resume { tokenUrl?: string; hosted?: HostedReturn; account?: { session: string }; locale: PageLocale }

/**
 * What the account page gives the social pages: the end of a sign-in it started to link an
 * identity to the account of its session (`family`: that session's, kept with the sign-in).
 */
export interface AccountLinking {
  finishLink(req: Request, res: Response, app: Application, locale: PageLocale, socialToken: string, family: string): Promise<void>;
}

/** Characters of an auth_info apiKey or token (a key is set by its owner; tokens are 40). */
const MAX_API_KEY = 256;
const COOKIE = 'gatehouse_social';

/**
 * The cookie holding a sign-in's state: over TLS (or when PUBLIC_BASE_URL is https) `__Host-`,
 * Secure and for the whole host, so no sibling host can plant one (a planted state would sign the
 * victim in as the attacker's identity); over plain http, for the provider's callback only.
 */
const stateCookieName = (services: Services, req: Request) => (req.protocol === 'https' || services.baseUrls.secure ? `__Host-${COOKIE}` : COOKIE);
const stateCookie = (services: Services, req: Request, provider: string, value: string, seconds: number) => {
  const name = stateCookieName(services, req);
  const scope = name === COOKIE ? `Path=/social/${provider}/callback` : 'Path=/; Secure';
  return `${name}=${value}; HttpOnly; SameSite=Lax; ${scope}; Max-Age=${seconds}`;
};
const PROVIDER_PATH = /^[a-z][a-z0-9-]{0,31}$/;

const one = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

type PageWork = (req: Request, res: Response, app: Application, locale: PageLocale) => Promise<void>;

/** The exact URLs tokens may be posted to, from the login clients' and the application's settings. */
async function allowedTokenUrl(services: Services, app: Application, raw: string | undefined): Promise<string | undefined> {
  if (!raw) return undefined;
  // the stored rows: no secret needs opening to read a setting
  const clients = (await services.db.clients.list(app.id)).filter((c) => c.features.includes('login_client'));
  const lists = [app.settings.social_token_urls, ...clients.map((c) => c.settings.social_token_urls)];
  const allowed = new Set(lists.flatMap(settingOfList));
  return allowed.has(raw) ? raw : undefined;
}

/** A provider's failure as a page of its own (502): the detail (addresses, library messages) to the log; people read what happened, in their language. */
function providerFailed(services: Services, res: Response, locale: PageLocale, app: Application, e: ProviderError): void {
  services.logger.warn({ provider: e.provider, kind: e.kind, detail: e.message }, 'social sign-in failed at the provider');
  sendError(res, 502, locale, app, { key: e.kind === 'unreachable' ? 'providerDown' : 'providerFailed', values: { provider: providerLabel(e.provider) } });
}

/** A social page: the application and the page's locale resolved; a provider's failure shown as a page of its own (502), anything else to the error page. */
const socialPage = (services: Services, resolveApp: (host: string | undefined) => Promise<Application>, work: PageWork) =>
  async (req: Request, res: Response, next: NextFunction) => {
    const locale = pageLocale(req.query.locale, req.headers['accept-language']);
    let app: Application | undefined;
    try {
      app = await resolveApp(req.headers.host);
      await work(req, res, app, locale);
    } catch (e) {
      if (e instanceof ProviderError && app) return providerFailed(services, res, locale, app, e);
      markFailedPage(res, { locale, app });
      next(e);
    }
  };

const refuseTokenUrl = (res: Response, locale: PageLocale, app: Application) => sendError(res, 400, locale, app, {
  key: 'badLink', detail: 'token_url is missing or is not on the allow-list of this application (the social_token_urls setting of a login client or of the application); nothing was sent anywhere.',
});

/** GET /social/signin: the application's providers, each starting a sign-in whose token goes to `token_url`. */
const pickProvider = (services: Services): PageWork => async (req, res, app, locale) => {
  const tokenUrl = await allowedTokenUrl(services, app, one(req.query.token_url));
  if (!tokenUrl) return refuseTokenUrl(res, locale, app);
  const list = await services.providers.list(app.id);
  const query = (name: string) => `/social/${name}/start?${new URLSearchParams({ token_url: tokenUrl, locale })}`;
  const links = list.map((p) => `<li><a class="button" href="${escape(query(p.name))}">${escape(text(locale, 'signInWith', { provider: providerLabel(p.name) }))}</a></li>`);
  sendPage(res, 200, locale, text(locale, 'signIn'), `<h1>${escape(text(locale, 'signIn'))}</h1>`
    + (links.length ? `<ul>${links.join('')}</ul>` : `<p>${escape(text(locale, 'noProviders'))}</p>`), { brand: brandOf(app) });
};

/** GET /social/:provider/start: a sign-in in progress stored by the start use case, the browser to the provider. */
const startSignIn = (services: Services, hosted: HostedPages | undefined): PageWork => async (req, res, app, locale) => {
  const name = String(req.params.provider);
  const found = PROVIDER_PATH.test(name) ? await services.providers.withSecret(app.id, name) : undefined;
  if (!found) {
    return sendError(res, 404, locale, app, { key: 'badLink', detail: 'this application has no sign-in provider of this name (npx gatehouse providers:list)' });
  }
  // from a hosted sign-in page (its client and redirect_uri checked as that page checks them), or for a token_url
  const back = req.query.hosted === '1' && hosted ? await hosted.hostedReturn(app, req.query, locale) : undefined;
  if (back && 'key' in back) return sendError(res, 400, locale, app, back);
  const tokenUrl = back ? undefined : await allowedTokenUrl(services, app, one(req.query.token_url));
  if (!back && !tokenUrl) return refuseTokenUrl(res, locale, app);
  await toProvider(services, req, res, app, locale, found, { tokenUrl, hosted: back, locale });
};

type FoundProvider = NonNullable<Awaited<ReturnType<Services['providers']['withSecret']>>>;

/** A sign-in in progress stored by the start use case (resuming with `resume`), and the browser sent to the provider. */
async function toProvider(services: Services, req: Request, res: Response, app: Application, locale: PageLocale, found: FoundProvider, resume: Resume): Promise<void> {
  let started;
  try {
    started = await startSocialSignIn(services, {
      app, found, clientAddress: peerBudgetKey(req.ip), callbackUrl: `${req.protocol}://${req.get('host')}/social/${found.provider.name}/callback`, resume: { ...resume },
    });
  } catch (e) {
    // each start stores a sign-in in progress: starts are limited per client address
    if (!(e instanceof LimitReachedError)) throw e;
    const wait = e.retryAfterSeconds;
    res.setHeader('Retry-After', String(wait));
    return sendError(res, 429, locale, app, { key: 'tooManyStarts', values: { seconds: String(wait) } });
  }
  // the state also lives in this browser: a callback carried to another browser (login CSRF) fails
  res.setHeader('Set-Cookie', stateCookie(services, req, found.provider.name, started.state, SOCIAL_STATE_SECONDS));
  res.setHeader('Cache-Control', 'no-store');
  res.redirect(303, started.url);
}

/**
 * A sign-in with `provider` whose identity the account page links to its signed-in account (its
 * callback ends in AccountLinking.finishLink); an unknown provider gets an error page.
 */
export async function startLinking(
  services: Services, req: Request, res: Response, app: Application, locale: PageLocale, provider: string, family: string,
): Promise<void> {
  const found = PROVIDER_PATH.test(provider) ? await services.providers.withSecret(app.id, provider) : undefined;
  if (!found) return sendError(res, 404, locale, app, { key: 'badLink', detail: 'this application has no sign-in provider of this name (npx gatehouse providers:list)' });
  try {
    await toProvider(services, req, res, app, locale, found, { account: { session: family }, locale });
  } catch (e) {
    if (!(e instanceof ProviderError)) throw e;
    providerFailed(services, res, locale, app, e);
  }
}

/** GET /social/:provider/callback: the sign-in in progress spent once by the finish use case, a one-time token to the app or the hosted page. */
const finishSignIn = (services: Services, hosted: HostedPages | undefined, account: AccountLinking | undefined): PageWork => async (req, res, app, locale) => {
  const state = one(req.query.state);
  if (!state || !LINK_CODE.test(state)) return sendError(res, 400, locale, app, { key: 'badLink', detail: 'the callback carries no valid state' });
  const bound = cookieValue(req, stateCookieName(services, req));
  if (!bound || !safeEqual(bound, state)) {
    return sendError(res, 400, locale, app, { key: 'notThisBrowser' });
  }
  const provider = String(req.params.provider);
  const query = Object.fromEntries(Object.entries(req.query).filter((e): e is [string, string] => typeof e[1] === 'string'));
  const done = await finishSocialSignIn(services, { app, provider, state, query });
  if (done.kind === 'spent') return sendError(res, 400, locale, app, { key: 'signInSpent' });
  res.setHeader('Set-Cookie', stateCookie(services, req, provider, '', 0));
  if (done.kind === 'otherProvider') return sendError(res, 400, locale, app, { key: 'badLink', detail: 'the callback does not belong to the provider the sign-in was started with' });
  const back = done.resume as unknown as Resume;
  const pageLang = back.locale ?? locale;
  if (done.kind === 'denied') {
    // what the provider said is the request's, not ours: to the log, never into the page
    services.logger.info({ provider: done.provider, error: done.error.slice(0, 64), detail: done.description?.slice(0, 200) }, 'the provider did not sign the person in');
    return sendError(res, 400, pageLang, app, { key: 'providerDenied', values: { provider: providerLabel(done.provider) } });
  }
  if (done.kind === 'providerRemoved') return sendError(res, 404, pageLang, app, { key: 'providerRemoved', values: { provider: providerLabel(done.provider) } });
  if (back.hosted && hosted) return hosted.finishSocial(req, res, app, pageLang, back.hosted, done.provider, done.token);
  if (back.account && account) return account.finishLink(req, res, app, pageLang, done.token, String(back.account.session ?? ''));
  if (!back.tokenUrl) return sendError(res, 400, pageLang, app, { key: 'badLink', detail: 'this sign-in was started with neither a token_url nor a hosted page to return to' });
  const target = new URL(back.tokenUrl);
  sendPage(res, 200, pageLang, text(pageLang, 'signIn'),
    `<form method="post" action="${escape(back.tokenUrl)}"><input type="hidden" name="token" value="${escape(done.token)}">`
    + `<noscript><button type="submit">${escape(text(pageLang, 'continue'))}</button></noscript></form>`,
    { formAction: target.origin, autoSubmit: true, brand: brandOf(app) });
};

/** POST /api/v2/auth_info: the original social login product's profile lookup, for apps that redeem tokens themselves. */
const authInfo = (services: Services, resolveApp: (host: string | undefined) => Promise<Application>) =>
  async (req: Request, res: Response, next: NextFunction) => {
    const fail = (code: number, msg: string) => res.json({ stat: 'fail', err: { code, msg } });
    try {
      const app = await resolveApp(req.headers.host);
      const apiKey = one(req.body?.apiKey);
      const token = one(req.body?.token);
      if (!apiKey || !token) return fail(0, 'missing parameter: send apiKey and token');
      if (apiKey.length > MAX_API_KEY || token.length > MAX_API_KEY) return fail(1, `apiKey and token are at most ${MAX_API_KEY} characters`);
      const expected = app.settings.social_api_key;
      if (!expected) return fail(3, 'this application has no social_api_key setting; set one with /settings/set_default to use auth_info');
      // a key check draws on the address's budget of failed sign-ins before it is made, like a password
      const address = BUDGET_KEYS.loginAddress(app.id, peerBudgetKey(req.ip));
      let taken;
      try {
        taken = await services.rateLimiter.take([[address, services.loginLimits.address]]);
      } catch (e) {
        if (!(e instanceof LimitReachedError)) throw e;
        const wait = String(e.retryAfterSeconds);
        res.status(429).setHeader('Retry-After', wait);
        return fail(3, `too many failed attempts from this address; try again in ${wait} seconds`);
      }
      if (!safeEqual(apiKey, expected)) return fail(3, 'the apiKey is not valid for this application');
      await taken.settle({ giveBack: [address] });
      const redeemed = await services.socialTokens.redeem(app, undefined, token);
      if (!redeemed) return fail(1, 'the token is invalid, expired or already used');
      res.json({ stat: 'ok', profile: redeemed.profile });
    } catch (e) {
      next(e);
    }
  };

/**
 * The browser-facing half of the built-in social login application (pages, apart from the
 * API's route table): a provider picker, the redirect to a provider, its callback, which
 * posts a one-time 40-character token to the app's `token_url`, and `auth_info` for apps that
 * redeem tokens themselves. `token_url` must be on the allow-list (`social_token_urls` of a login
 * client or of the application): nothing else is ever posted to or redirected to.
 */
export function socialRoutes(
  services: Services, resolveApp: (host: string | undefined) => Promise<Application>, hosted?: HostedPages, account?: AccountLinking,
): express.Router {
  const router = express.Router();
  const page = (work: PageWork) => socialPage(services, resolveApp, work);
  router.get('/social/signin', page(pickProvider(services)));
  router.get('/social/:provider/start', page(startSignIn(services, hosted)));
  router.get('/social/:provider/callback', page(finishSignIn(services, hosted, account)));
  router.post('/api/v2/auth_info', express.urlencoded({ extended: false, limit: '8kb' }), authInfo(services, resolveApp));
  return router;
}
