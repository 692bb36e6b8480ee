import type { Application } from '../domain/storage/applications';
import { isProviderPage } from '../domain/openid-routes';
import type { Services } from '../usecases/services';
import { pageLocale, renderError, type PageLocale, type PageProblem } from '../web/pages';

/**
 * Every answer of the mounted provider is Gatehouse's (docs/openid-connect.md#errors): its pages
 * are Gatehouse's error page in the application's look, its JSON errors carry the request id, both
 * keep the headers every answer has (the request id, no caching, no sniffing: a Koa error answer
 * would drop them), and anything the provider throws, even from its own error handlers, becomes
 * one structured log line and a generic answer, never a stack trace or a bare text/plain 500.
 */

/** The slice of a Koa context these answers use. */
export interface ProviderContext {
  status: number; body: unknown; path: string; method: string;
  /** Express's response (the provider is handed Express's request and response), whose locals hold the request id. */
  res: object;
  set(headers: Record<string, string>): void; get(header: string): string;
  oidc?: { params?: Record<string, unknown> };
}

/** What an error the provider shows means to an app's developer, in Gatehouse's words. */
const PROVIDER_ERRORS: Readonly<Record<string, string>> = {
  invalid_redirect_uri: 'the redirect_uri or post_logout_redirect_uri is not one of the client\'s (its settings redirect_uris and post_logout_redirect_uris)',
  invalid_client: 'the client_id is not a login client of this application',
  invalid_request: 'a parameter of the request is missing, repeated or wrong; see docs/openid-connect.md for what the provider takes',
  session_not_found: 'this sign-in is over or was started in another browser; start it again from the app',
};

/** The provider's resume route (`/oidc/auth/<uid>`): it takes no parameters, only the browser's interaction cookie. */
export const isResume = (path: string) => /^\/oidc\/auth\/[^/]+$/.test(path);

export const requestIdOf = (ctx: Pick<ProviderContext, 'res'>) => String((ctx.res as { locals?: Record<string, unknown> }).locals?.requestId ?? '');

/** Sends a page (a Koa context's) as Gatehouse draws it, in the language the app asked for, else the browser's. */
export function sendOwnPage(ctx: ProviderContext, status: number, draw: (locale: PageLocale) => { headers: Record<string, string>; html: string }): void {
  const asked = ctx.oidc?.params?.ui_locales;
  const page = draw(pageLocale(typeof asked === 'string' ? asked.split(' ')[0] : undefined, ctx.get('accept-language')));
  ctx.set(page.headers);
  ctx.status = status;
  ctx.body = page.html;
}

/**
 * Which of PROVIDER_ERRORS an error the provider shows is: a lost sign-in and an address off the
 * client's list said as such (the provider's own words are a library's, never shown).
 */
export function pageErrorOf(error: string, description: unknown, name?: string): string {
  if (name === 'SessionNotFound') return 'session_not_found';
  if (error === 'invalid_request' && typeof description === 'string' && /redirect_uri/.test(description)) return 'invalid_redirect_uri';
  return error;
}

/** The error page of an OpenID error (`error`, as the provider names it). */
export function sendErrorPage(ctx: ProviderContext, app: Application, status: number, error: string): void {
  const problem: PageProblem = error === 'server_error'
    ? { key: 'unavailable', detail: `request id ${requestIdOf(ctx)}` }
    : {
      key: error === 'invalid_request' || error === 'invalid_redirect_uri' || error === 'invalid_client' ? 'badLink' : 'signInSpent',
      detail: `the OpenID request was refused (${error}): ${PROVIDER_ERRORS[error] ?? 'start the sign-in again from the app'}`,
    };
  sendOwnPage(ctx, status, (locale) => renderError(locale, app, problem));
}

/**
 * The provider's outermost middleware (provider.use): catches what escapes the provider, draws a
 * page route's JSON error as a page, and adds the request id to its JSON errors.
 */
export function gatehouseAnswers(app: Application, logger: Services['logger']) {
  return async (ctx: ProviderContext, next: () => Promise<unknown>) => {
    try {
      await next();
    } catch (err) {
      const expected = isResume(ctx.path) && (err as { name?: string }).name === 'SessionNotFound';
      if (!expected) logger.error({ request_id: requestIdOf(ctx), method: ctx.method, path: ctx.path, err }, 'unexpected error in the OpenID provider');
      // a resume whose interaction is gone (the browser's cookie expired, or the sign-in finished in another tab)
      if (isResume(ctx.path)) return sendErrorPage(ctx, app, 400, 'session_not_found');
      if (isProviderPage(ctx.path)) return sendErrorPage(ctx, app, 500, 'server_error');
      ctx.status = 500;
      ctx.body = { error: 'server_error', error_description: 'an unexpected error occurred; quote the request_id when reporting it', request_id: requestIdOf(ctx) };
      return;
    }
    // a path under /oidc/ that is none of the provider's (a GET of a POST-only endpoint): the API's unknown endpoint, not Koa's bare text
    if (ctx.status === 404 && ctx.body == null) {
      if (isProviderPage(ctx.path)) return sendErrorPage(ctx, app, 404, 'invalid_request');
      ctx.status = 404;
      ctx.body = { error: 'invalid_request', error_description: `there is no endpoint ${ctx.method} ${ctx.path.slice(0, 200)}; the discovery document lists the provider's`, request_id: requestIdOf(ctx) };
      return;
    }
    const body = ctx.body as { error?: unknown; error_description?: unknown } | null | undefined;
    if (ctx.status < 400 || typeof body !== 'object' || body === null || Buffer.isBuffer(body) || typeof body.error !== 'string') return;
    // a browser's endpoint answers with a page whatever the client asked to accept
    if (isProviderPage(ctx.path)) return sendErrorPage(ctx, app, ctx.status, pageErrorOf(body.error, body.error_description));
    ctx.body = { ...body, request_id: requestIdOf(ctx) };
  };
}
