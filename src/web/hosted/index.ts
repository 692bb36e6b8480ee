import express, { type Request, type Response } from 'express';
import type { Application } from '../../domain/storage/applications';
import type { Services } from '../../usecases/services';
import type { CheckedResponse } from '../../usecases/sso/connection-sign-in';
import { csrf, type PageProblem, pageForm, pageHandler, sendError, stringFields, type PageLocale } from '../pages';
import { entryOf, type EntryWork, heldBy, type Hosted, type HostedReturn, say, type View } from './parts';
import { show } from './form-page';
import { finishSocial } from './social-registration';
import { finishConnection } from './organization';
import { HOSTED_ROUTES } from './routes';

export { pageFailure, type HostedReturn } from './parts';

const COOKIE = 'gh_login_csrf';

const viewOf = (path: string): View => (path === '/register' ? 'register' : path === '/signin/forgot' ? 'forgot' : path === '/register/social' ? 'social' : 'signin');

/** A page's GET or POST: the entry checked first (an error page, never a redirect, when it is wrong); a POST's CSRF token and held social values next. */
const withEntry = (h: Hosted, resolveApp: (host: string | undefined) => Promise<Application>, work: EntryWork) =>
  pageHandler(resolveApp, async (req, res, app, locale) => {
    const source = req.method === 'POST' ? req.body ?? {} : req.query;
    const entry = await entryOf(h.services, app, source, locale);
    if ('key' in entry) return sendError(res, 400, locale, app, entry);
    const body = req.method === 'POST' ? stringFields(req.body) : {};
    if (req.method !== 'POST') return work(req, res, app, entry, body, {});
    // a refused POST shows the page's plain form with a fresh token: nothing of its body
    const view = viewOf(req.path);
    const plain = view === 'social' ? 'signin' : view;
    if (!h.token.matches(req, body.csrf)) return show(h, req, res, app, entry, plain, 403, { notice: say(locale, 'expired') });
    const held = heldBy(h.services, req, body);
    if (!held) return show(h, req, res, app, entry, plain, 403, { notice: say(locale, 'otherBrowser') });
    await work(req, res, app, entry, body, held);
  });

/**
 * GET /signin and GET /register: the reference sign-in and registration pages, built from the
 * login client's flow (signInForm, registrationForm, forgotPasswordForm, socialRegistrationForm)
 * as stored, so a flow change shows without code. Every POST goes through the same use cases as
 * the API (the same rules, limits and uniform failures), and a success redirects to `redirect_uri`
 * (on the client's `redirect_uris` allow-list) with an authorization code and the app's `state`.
 * The pages are those of HOSTED_ROUTES (routes.ts), registered in its order.
 */
export function hostedRoutes(services: Services, resolveApp: (host: string | undefined) => Promise<Application>) {
  const router = express.Router();
  const h: Hosted = { services, token: csrf(services.box, COOKIE, '/', services.baseUrls.secure) };
  const form = pageForm({ limit: '32kb', parameterLimit: 60 });
  for (const route of HOSTED_ROUTES) {
    const handler = 'page' in route ? withEntry(h, resolveApp, route.page(h)) : pageHandler(resolveApp, route.link(h));
    if (route.method === 'GET') router.get(route.path, handler);
    else router.post(route.path, form, handler);
  }
  return {
    router,
    finishSocial: (req: Request, res: Response, app: Application, locale: PageLocale, back: HostedReturn, provider: string, socialToken: string) =>
      finishSocial(h, req, res, app, locale, back, provider, socialToken),
    finishConnection: (req: Request, res: Response, app: Application, locale: PageLocale, back: HostedReturn, checked: CheckedResponse) =>
      finishConnection(h, req, res, app, locale, back, checked),
    /** Whether a hosted page may start a social sign-in for these parameters (the same checks as its own GET). */
    async hostedReturn(app: Application, query: Record<string, unknown>, locale: PageLocale): Promise<HostedReturn | PageProblem> {
      const entry = await entryOf(services, app, query, locale);
      return 'key' in entry ? entry : { clientId: entry.client.clientId, redirectUri: entry.redirectUri, state: entry.state };
    },
  };
}
export type HostedPages = ReturnType<typeof hostedRoutes>;
