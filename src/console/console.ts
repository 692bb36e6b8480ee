import { randomUUID } from 'node:crypto';
import express, { type NextFunction, type Request, type Response } from 'express';
import { peerBudgetKey } from '../domain/addresses';
import { CONSOLE_CALLBACK_PATH } from '../domain/base-urls';
import { keptUserAgent } from '../domain/events';
import { OperatorForbiddenError, roleMay, type ConsoleAction } from '../domain/operators';
import { LimitReachedError, Refusal } from '../domain/refusal';
import { randomToken, safeEqual } from '../domain/secrets';
import type { Application } from '../domain/storage/applications';
import type { Logger } from '../logger';
import { registrationOpen } from '../domain/registration';
import { consoleApplication } from '../usecases/operators/console-reads';
import { consoleLoginClient, consoleOperator, endConsoleSession, openConsoleSession, type Operator } from '../usecases/operators/console';
import type { CallContext, Services } from '../usecases/services';
import { deviceOf } from '../web/account';
import { cookieValue, crossSite, escape, pageLocale, sendPage, stringFields, type PageLocale } from '../web/pages';
import { q, say, type ConsoleParts, type Signed } from './parts';
import { CONSOLE_ROUTES, type FormLimits } from './routes';

/**
 * The operators' console (docs/console.md): server-rendered pages on a port of their own, signed in
 * through the operators' application's hosted sign-in (two factors, a role), every action one use
 * case with the operator as its actor. The same discipline as the hosted pages: a strict
 * Content-Security-Policy with no script at all, no framing, nothing cached, every POST from this
 * origin with the session's form token. This is its shell (headers, the sign-in, the guard every
 * page goes through, the error page); the pages are modules of their own, declared in routes.ts.
 */
export interface ConsoleOptions {
  services: Services;
  /** The operators' application's name (CONSOLE_APP). */
  operatorsApp: string;
  /** Where browsers reach the console (CONSOLE_PUBLIC_URL), without a trailing slash. */
  publicUrl: string;
  trustProxy?: string;
  /** The queue dashboard's routes (bull-board), behind the same sign-in (with Redis only). */
  queues?: { router: express.Router };
  logger: Logger;
}

/** A path of the console to go back to after the sign-in: one slash, then printable characters without a backslash (`//host` and `/\\host` are other sites to a browser). */
const LOCAL_PATH = /^\/(?![/\\])[\x21-\x5b\x5d-\x7e]{0,500}$/;
const SESSION_COOKIE = 'gh_console';
const STATE_COOKIE = 'gh_console_state';
const STATE_SECONDS = 15 * 60;

/** A refusal of a use case, as the status of the page that says it. */
const REFUSAL_STATUS: Partial<Record<Refusal['reason'], number>> = { forbidden: 403, gone: 404 };

/** The body parser of a route's form. */
const formOf = (form: FormLimits) => express.urlencoded({ extended: form.repeated === true, limit: form.bytes, parameterLimit: form.fields });

export function buildConsole(options: ConsoleOptions): express.Express {
  const { services, publicUrl, queues, logger } = options;
  const secure = publicUrl.startsWith('https:');
  const cookieName = (name: string) => (secure ? `__Host-${name}` : name);
  const callbackUrl = `${publicUrl}${CONSOLE_CALLBACK_PATH}`;
  const formToken = (operator: Operator) => services.box.tag(operator.session.valueHash, 'console form');

  const app = express();
  app.disable('x-powered-by');
  if (options.trustProxy !== undefined) app.set('trust proxy', options.trustProxy === 'true' ? true : options.trustProxy);
  app.use((_req, res, next) => {
    res.locals.requestId = randomUUID();
    res.setHeader('X-Frame-Options', 'DENY');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Referrer-Policy', 'same-origin');
    next();
  });
  app.get('/healthz', (_req, res) => void res.json({ stat: 'ok' }));

  const localeOf = (req: Request) => pageLocale(req.query.locale, req.headers['accept-language']);
  const callOf = (req: Request, res: Response, appOf: Application): CallContext => ({
    origin: { requestId: String(res.locals.requestId), address: peerBudgetKey(req.ip), userAgent: keptUserAgent(req.headers['user-agent']) },
    app: appOf, clientAddress: peerBudgetKey(req.ip), services,
  });

  /** A page of the console: its navigation (for a signed-in operator), its body; no script, forms to this origin only. */
  const page = (res: Response, status: number, locale: PageLocale, title: string, body: string, s?: Signed) => {
    const nav = s ? `<nav aria-label="${escape(say(locale, 'navigation'))}"><a href="/${q({ locale })}">${escape(say(locale, 'overview'))}</a><a href="/accounts${q({ locale })}">${escape(say(locale, 'accounts'))}</a>`
      + `<a href="/audit${q({ locale })}">${escape(say(locale, 'audit'))}</a><a href="/apps${q({ locale })}">${escape(say(locale, 'applications'))}</a>`
      + (roleMay(s.operator.role, 'administer') ? `<a href="/operators${q({ locale })}">${escape(say(locale, 'operators'))}</a>` : '')
      + (queues ? `<a href="/queues/">${escape(say(locale, 'queues'))}</a>` : '')
      + `<a href="${escape(services.baseUrls.of(s.operatorsApp.name))}/account">${escape(say(locale, 'yourAccount'))}</a>`
      + `<span>${escape(say(locale, 'signedInAs', { name: s.operator.name, role: say(locale, `role_${s.operator.role}`) }))}</span>`
      + `<form method="post" action="/signout"><input type="hidden" name="csrf" value="${escape(s.token)}"><button type="submit" class="secondary">${escape(say(locale, 'signOut'))}</button></form></nav>` : '';
    sendPage(res, status, locale, `${title} · ${say(locale, 'console')}`, `${nav}<h1>${escape(title)}</h1>${body}`, { wide: true, formAction: "'self'" });
  };
  const problem = (res: Response, status: number, locale: PageLocale, message: string, s?: Signed) =>
    page(res, status, locale, say(locale, status === 403 ? 'forbidden' : 'problem'), `<p class="notice" role="alert">${escape(message)}</p>`, s);

  /** The operators' application, or a page saying how to make it. */
  const operatorsApp = async (res: Response, locale: PageLocale): Promise<Application | undefined> => {
    const found = await consoleApplication(services, options.operatorsApp);
    if (!found) problem(res, 503, locale, say(locale, 'noOperatorsApp', { app: options.operatorsApp }));
    // an operators' application that takes registrations may hold an account someone made to be given a role
    else if (registrationOpen(found)) return void problem(res, 503, locale, say(locale, 'operatorsAppOpen', { app: options.operatorsApp }));
    return found;
  };

  /**
   * A request of a signed-in operator allowed `action`: without a session, a page goes to the
   * sign-in (a POST says it ended); a role that does not allow it gets 403 and nothing is done; a
   * POST from another site or without the session's form token gets 403.
   */
  const signed = (action: ConsoleAction, work: (req: Request, res: Response, s: Signed, body: Record<string, string>) => Promise<void>, own: { csrf?: 'its own' } = {}) =>
    async (req: Request, res: Response, next: NextFunction) => {
      const locale = localeOf(req);
      try {
        const ops = await operatorsApp(res, locale);
        if (!ops) return;
        const value = cookieValue(req, cookieName(SESSION_COOKIE));
        const post = req.method !== 'GET' && req.method !== 'HEAD' && own.csrf === undefined;
        let operator: Operator | undefined;
        try {
          operator = value ? await consoleOperator(callOf(req, res, ops), { value, action: post ? action : 'read' }) : undefined;
        } catch (e) {
          if (!(e instanceof OperatorForbiddenError)) throw e;
          return problem(res, 403, locale, say(locale, 'roleForbids'));
        }
        if (!operator) {
          if (post) return problem(res, 401, locale, say(locale, 'sessionEnded'));
          return res.redirect(303, `/signin${q({ locale, next: req.originalUrl.startsWith('/') && !req.originalUrl.startsWith('//') ? req.originalUrl : undefined })}`);
        }
        const s: Signed = { operator, operatorsApp: ops, locale, token: formToken(operator) };
        const body = post ? stringFields(req.body) : {};
        // no field of the console holds a control character (a line break in a reason is the exception)
        if (Object.values(body).some((v) => /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(v))) return problem(res, 400, locale, say(locale, 'badInput'), s);
        if (post && (crossSite(req) || !safeEqual(body.csrf ?? '', s.token))) return problem(res, 403, locale, say(locale, 'forged'), s);
        // a page reached by GET still needs its role for what it shows (the queue dashboard's actions are POSTs)
        if (!post && !roleMay(operator.role, action)) return problem(res, 403, locale, say(locale, 'roleForbids'), s);
        await work(req, res, s, body);
      } catch (e) {
        next(e);
      }
    };


  // signing in: the operators' application's hosted sign-in, back to the callback with a code
  app.get('/signin', async (req, res, next) => {
    const locale = localeOf(req);
    try {
      const ops = await operatorsApp(res, locale);
      if (!ops) return;
      const client = await consoleLoginClient(services, ops);
      if (!client) return problem(res, 503, locale, say(locale, 'noLoginClient', { app: ops.name }));
      const nextPath = typeof req.query.next === 'string' && LOCAL_PATH.test(req.query.next) ? req.query.next : '/';
      const state = randomToken(16);
      // (hex, then where to go after: a cookie holds base64url characters only)
      res.cookie(cookieName(STATE_COOKIE), `${state}_${Buffer.from(nextPath).toString('base64url')}`, {
        httpOnly: true, sameSite: 'lax', secure, path: '/', maxAge: STATE_SECONDS * 1000,
      });
      const query = new URLSearchParams({ client_id: client.clientId, redirect_uri: callbackUrl, state, locale });
      res.redirect(303, `${services.baseUrls.of(ops.name)}/signin?${query}`);
    } catch (e) {
      next(e);
    }
  });

  app.get(CONSOLE_CALLBACK_PATH, async (req, res, next) => {
    const locale = localeOf(req);
    try {
      const ops = await operatorsApp(res, locale);
      if (!ops) return;
      const cookie = cookieValue(req, cookieName(STATE_COOKIE)) ?? '';
      const held = cookie.slice(0, Math.max(0, cookie.indexOf('_')));
      const nextCoded = cookie.slice(cookie.indexOf('_') + 1);
      res.clearCookie(cookieName(STATE_COOKIE), { path: '/', secure });
      const state = typeof req.query.state === 'string' ? req.query.state : '';
      const code = typeof req.query.code === 'string' ? req.query.code : '';
      const client = await consoleLoginClient(services, ops);
      if (!held || !state || !safeEqual(held, state) || !code || !client) return problem(res, 400, locale, say(locale, 'stateLost'));
      let opened: { value: string; expiresAt: Date };
      try {
        opened = await openConsoleSession(callOf(req, res, ops), { client, code, redirectUri: callbackUrl, device: deviceOf(req.headers['user-agent']) });
      } catch (e) {
        if (e instanceof Refusal) return problem(res, 403, locale, e.reason === 'wrong_credentials' ? e.message : say(locale, 'stateLost'));
        throw e;
      }
      res.cookie(cookieName(SESSION_COOKIE), opened.value, { httpOnly: true, sameSite: 'lax', secure, path: '/', expires: opened.expiresAt });
      const nextPath = Buffer.from(nextCoded ?? '', 'base64url').toString();
      res.redirect(303, LOCAL_PATH.test(nextPath) ? nextPath : '/');
    } catch (e) {
      next(e);
    }
  });

  app.post('/signout', formOf({ bytes: '4kb', fields: 10 }), signed('read', async (req, res, s) => {
    await endConsoleSession(callOf(req, res, s.operatorsApp), { session: s.operator.session });
    res.clearCookie(cookieName(SESSION_COOKIE), { path: '/', secure });
    page(res, 200, s.locale, say(s.locale, 'signedOut'), `<p><a class="button" href="/signin${q({ locale: s.locale })}">${escape(say(s.locale, 'signIn'))}</a></p>`);
  }));

  const parts: ConsoleParts = { services, page, problem };
  for (const route of CONSOLE_ROUTES) {
    const handler = signed(route.needs, async (req, res, s, body) => {
      try {
        await route.handler({ req, res, s, body, p: parts });
      } catch (e) {
        // a use case's refusal: nothing was done, and the page says why
        if (e instanceof Refusal) return problem(res, REFUSAL_STATUS[e.reason] ?? 400, s.locale, `${e.detail.field ? `${e.detail.field}: ` : ''}${e.message}`, s);
        if (e instanceof LimitReachedError) {
          res.setHeader('Retry-After', String(e.retryAfterSeconds));
          return problem(res, 429, s.locale, e.message, s);
        }
        throw e;
      }
    });
    if (route.method === 'GET') app.get(route.path, handler);
    else app.post(route.path, formOf(route.form!), handler);
  }

  // the queue dashboard, behind the same sign-in: an admin retries or removes jobs, everyone reads
  if (queues) {
    app.use('/queues', signed('read', async (req, res, s) => {
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        // bull-board's own calls (fetch, JSON): from this origin, by an admin
        if (crossSite(req) || req.headers['sec-fetch-site'] === undefined) return problem(res, 403, s.locale, say(s.locale, 'forged'), s);
        if (!roleMay(s.operator.role, 'administer')) return problem(res, 403, s.locale, say(s.locale, 'roleForbids'), s);
      }
      await new Promise<void>((resolve, reject) => queues.router(req, res, (e?: unknown) => (e ? reject(e) : resolve())));
    }, { csrf: 'its own' }));
  }

  app.use((req, res) => problem(res, 404, localeOf(req), say(localeOf(req), 'notFound')));
  // a failure shows a page with its request id, never a stack trace
  app.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
    void _next;
    // a form the body parser refused (too large, too many fields, not decodable): the sender's to fix
    const status = (err as { status?: unknown }).status;
    if (typeof status === 'number' && status >= 400 && status < 500) return problem(res, status, localeOf(req), say(localeOf(req), 'badInput'));
    logger.error({ err, requestId: res.locals.requestId, path: req.path }, 'console request failed');
    if (res.headersSent) return;
    problem(res, 500, localeOf(req), say(localeOf(req), 'failed', { id: String(res.locals.requestId) }));
  });
  return app;
}
