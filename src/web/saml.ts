import express, { type Request, type Response } from 'express';
import { peerBudgetKey } from '../domain/addresses';
import type { Application } from '../domain/storage/applications';
import { accountCallbackOf } from '../usecases/account/browser-sessions';
import { accountClient } from '../usecases/account/account-client';
import {
  answerPendingSignIn, receiveAuthnRequest, SAML_PATHS, samlMetadata, SamlRefusal, singleLogout, startIdpInitiated, type PendingSignIn, type PostedResponse,
} from '../usecases/saml/single-sign-on';
import type { CallContext, Services } from '../usecases/services';
import { accountState, browserSessionOfRequest, sessionCookieName } from './account-sign-in';
import { brandOf, cookieValue, escape, originOf, pageForm, pageHandler, sendError, sendPage, text, type PageLocale } from './pages';

/**
 * The SAML identity provider's pages (docs/saml.md#identity-provider): its metadata, SSO over
 * HTTP-Redirect and HTTP-POST, IdP-initiated sign-in, single logout over HTTP-Redirect. A request
 * that passes its checks becomes a pending sign-in this browser holds, sealed in a cookie for its
 * path only, and the browser goes on to `/saml/sso/continue/<id>` (a GET of this site, so that
 * the session cookie, SameSite=Lax, comes with it even after a service provider's cross-site POST).
 */

const PENDING_PREFIX = 'gh_saml_';
const PENDING_SECONDS = 30 * 60;
const CONTINUE_PATH = `${SAML_PATHS.sso}/continue`;
const PENDING_ID = /^[A-Za-z0-9_-]{24}$/;

const pendingBinding = (app: Application) => `saml pending sign-in\n${app.id}`;

export function samlRoutes(services: Services, resolveApp: (host: string | undefined) => Promise<Application>) {
  const router = express.Router();
  const secure = (req: Request) => services.baseUrls.secure || req.secure;
  const ctxOf = (req: Request, res: Response, app: Application): CallContext => ({ origin: originOf(req, res), app, clientAddress: peerBudgetKey(req.ip), services });

  /** Keeps a pending sign-in in this browser and goes on to answer it. */
  function hold(req: Request, res: Response, app: Application, pending: PendingSignIn): void {
    const sealed = Buffer.from(services.box.seal(JSON.stringify(pending), pendingBinding(app))).toString('base64url');
    res.cookie(`${PENDING_PREFIX}${pending.pendingId}`, sealed, {
      httpOnly: true, sameSite: 'lax', secure: secure(req), path: CONTINUE_PATH, maxAge: PENDING_SECONDS * 1000,
    });
    res.redirect(303, `${CONTINUE_PATH}/${pending.pendingId}`);
  }

  /** The pending sign-in of this browser named by the path, if it holds it. */
  function held(req: Request, app: Application, pendingId: string): PendingSignIn | undefined {
    if (!PENDING_ID.test(pendingId)) return undefined;
    const value = cookieValue(req, `${PENDING_PREFIX}${pendingId}`);
    if (!value) return undefined;
    try {
      const pending = JSON.parse(services.box.open(Buffer.from(value, 'base64url').toString(), pendingBinding(app))) as PendingSignIn;
      return pending.pendingId === pendingId ? pending : undefined;
    } catch {
      return undefined;
    }
  }

  const refusedPage = (res: Response, locale: PageLocale, app: Application, e: unknown) => {
    if (!(e instanceof SamlRefusal)) throw e;
    sendError(res, 400, locale, app, { key: 'badLink', detail: e.message });
  };

  router.get(SAML_PATHS.metadata, pageHandler(resolveApp, async (_req, res, app) => {
    const xml = await samlMetadata(services, app);
    res.status(200).set({ 'Content-Type': 'application/samlmetadata+xml; charset=utf-8', 'Cache-Control': 'public, max-age=3600' }).send(xml);
  }));

  router.get(SAML_PATHS.sso, pageHandler(resolveApp, async (req, res, app, locale) => {
    const rawQuery = req.originalUrl.includes('?') ? req.originalUrl.slice(req.originalUrl.indexOf('?') + 1) : '';
    try {
      hold(req, res, app, await receiveAuthnRequest(ctxOf(req, res, app), { binding: 'redirect', rawQuery }));
    } catch (e) {
      refusedPage(res, locale, app, e);
    }
  }));

  router.post(SAML_PATHS.sso, pageForm({ limit: '64kb', parameterLimit: 10 }), pageHandler(resolveApp, async (req, res, app, locale) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const message = typeof body.SAMLRequest === 'string' ? body.SAMLRequest : '';
    const relayState = typeof body.RelayState === 'string' ? body.RelayState : undefined;
    try {
      hold(req, res, app, await receiveAuthnRequest(ctxOf(req, res, app), { binding: 'post', message, ...(relayState !== undefined && { relayState }) }));
    } catch (e) {
      refusedPage(res, locale, app, e);
    }
  }));

  // IdP-initiated: a link of the application's own (an app launcher) to a service provider
  router.get(`${SAML_PATHS.sso}/init`, pageHandler(resolveApp, async (req, res, app, locale) => {
    const sp = typeof req.query.sp === 'string' ? req.query.sp : '';
    const relayState = typeof req.query.RelayState === 'string' ? req.query.RelayState : undefined;
    try {
      hold(req, res, app, await startIdpInitiated(ctxOf(req, res, app), { serviceProvider: sp, ...(relayState !== undefined && { relayState }) }));
    } catch (e) {
      refusedPage(res, locale, app, e);
    }
  }));

  router.get(`${CONTINUE_PATH}/:pendingId`, pageHandler(resolveApp, async (req, res, app, locale) => {
    const pendingId = String(req.params.pendingId);
    const pending = held(req, app, pendingId);
    if (!pending) return sendError(res, 400, locale, app, { key: 'badLink', detail: 'this SAML sign-in is over or was started in another browser: start it again at the application' });
    const ctx = ctxOf(req, res, app);
    let answer;
    try {
      answer = await answerPendingSignIn(ctx, { pending, session: await browserSessionOfRequest(services, req, app) });
    } catch (e) {
      return refusedPage(res, locale, app, e);
    }
    if (answer.kind === 'respond') {
      res.clearCookie(`${PENDING_PREFIX}${pendingId}`, { path: CONTINUE_PATH, secure: secure(req) });
      return postResponse(res, app, locale, answer.response);
    }
    const client = await accountClient(services, app);
    if (!client) return sendError(res, 400, locale, app, { key: 'badLink', detail: 'the application has no login client for its pages: set the application setting account_client_id' });
    // to the hosted sign-in, which comes back here through the account page's callback
    const state = accountState(req, res, services.baseUrls.secure, client.clientId, { saml: pending.pendingId });
    const query = new URLSearchParams({ client_id: client.clientId, redirect_uri: accountCallbackOf(services, app), state, locale });
    res.redirect(303, `/signin?${query}`);
  }));

  router.get(SAML_PATHS.slo, pageHandler(resolveApp, async (req, res, app, locale) => {
    const rawQuery = req.originalUrl.includes('?') ? req.originalUrl.slice(req.originalUrl.indexOf('?') + 1) : '';
    try {
      const { location, ended } = await singleLogout(ctxOf(req, res, app), { rawQuery, session: await browserSessionOfRequest(services, req, app) });
      if (ended) res.clearCookie(sessionCookieName(req, services.baseUrls.secure), { path: '/', secure: secure(req) });
      res.redirect(303, location);
    } catch (e) {
      refusedPage(res, locale, app, e);
    }
  }));

  return router;
}

/** The HTTP-POST binding's answer: a form the browser posts to the service provider's ACS URL (by itself where scripts run). */
function postResponse(res: Response, app: Application, locale: PageLocale, response: PostedResponse): void {
  const relay = response.relayState !== undefined ? `<input type="hidden" name="RelayState" value="${escape(response.relayState)}">` : '';
  sendPage(res, 200, locale, text(locale, 'signIn'),
    `<form method="post" action="${escape(response.acsUrl)}"><input type="hidden" name="SAMLResponse" value="${escape(response.samlResponse)}">${relay}`
    + `<noscript><button type="submit">${escape(text(locale, 'continue'))}</button></noscript></form>`,
    { formAction: new URL(response.acsUrl).origin, autoSubmit: true, brand: brandOf(app) });
}
