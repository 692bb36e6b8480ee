import { randomBytes } from 'node:crypto';
import express, { type Request, type Response } from 'express';
import { peerBudgetKey } from '../domain/addresses';
import type { Application } from '../domain/storage/applications';
import { accountClient } from '../usecases/account/account-client';
import { accountCallbackOf } from '../usecases/account/browser-sessions';
import type { CallContext, Services } from '../usecases/services';
import {
  connectionMetadata, receiveSamlResponse, startSamlConnection, takeCheckedResponse,
} from '../usecases/sso/saml-connection';
import { ConnectionRefusal } from '../usecases/sso/connection-sign-in';
import { connectionTypeOf, finishOidcConnection, startOidcConnection } from '../usecases/sso/oidc-connection';
import type { Checks } from '../domain/social/relying-party';
import { accountState } from './account-sign-in';
import type { HostedPages, HostedReturn } from './hosted';
import { unsafeField } from '../domain/request-values';
import { errors } from '../errors';
import { cookieValue, markFailedPage, originOf, pageHandler, pageLocale, sendError, type PageLocale } from './pages';

/**
 * An organization's connection, the browser's side (docs/organizations.md#connections): Gatehouse's
 * service provider metadata for the identity provider, the start of a sign-in (from the hosted
 * sign-in's home-realm discovery, or the connection's start URL), and the ACS URL the identity
 * provider posts its response to. The sign-in in progress is sealed in a cookie of this browser
 * (SameSite=Lax, the connection's paths only), named by the RelayState: the response, posted from
 * another site, is checked and kept for a moment, and the browser comes back for it with a GET of
 * this site, where its cookies are; the response's InResponseTo must be the request this browser
 * made.
 */

const PENDING_PREFIX = 'gh_sso_';
const PENDING_SECONDS = 15 * 60;
const PENDING_ID = /^[A-Za-z0-9_-]{24,64}$/;
const RESULT_ID = /^[A-Za-z0-9_-]{32}$/;
const CONNECTION_ID = /^con_[0-9a-f]{24}$/;

/** What the browser keeps of a sign-in sent to the identity provider: the request (SAML) or the checks (OpenID), and where the sign-in goes on to. */
interface Pending { connection: string; requestId?: string; checks?: Checks; back: HostedReturn; locale: PageLocale }

const binding = (app: Application) => `connection sign-in\n${app.id}`;

/**
 * The ACS URL's body: a response with its signatures and certificates (and an identity provider's
 * group claims) is often more than the 16 KB a page's field may hold, so its SAMLResponse may be
 * 384 KB of base64 (nothing else: any other character is refused), its RelayState 80 characters of
 * ours; the rest of the pages' rules hold (no control characters, a page for an error).
 */
const acsForm = [
  (req: Request, res: Response, next: express.NextFunction) => {
    markFailedPage(res, { locale: pageLocale(req.query.locale, req.headers['accept-language']) });
    next();
  },
  express.urlencoded({ extended: false, limit: '512kb', parameterLimit: 10 }),
  (req: Request, _res: Response, next: express.NextFunction) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const { SAMLResponse: response, ...rest } = body;
    if (response !== undefined && (typeof response !== 'string' || response.length > 384 * 1024 || !/^[A-Za-z0-9+/=\s]*$/.test(response))) {
      return next(errors.unsafeInput('SAMLResponse', 'must be the base64 of a SAML response, at most 384 KB'));
    }
    const found = unsafeField(rest);
    next(found ? errors.unsafeInput(found[0], found[1]) : undefined);
  },
];

export function connectionRoutes(services: Services, resolveApp: (host: string | undefined) => Promise<Application>, hosted: HostedPages) {
  const router = express.Router();
  const secure = (req: Request) => services.baseUrls.secure || req.secure;
  const ctxOf = (req: Request, res: Response, app: Application): CallContext => ({ origin: originOf(req, res), app, clientAddress: peerBudgetKey(req.ip), services });
  const refused = (res: Response, locale: PageLocale, app: Application, e: unknown) => {
    if (!(e instanceof ConnectionRefusal)) throw e;
    sendError(res, 400, locale, app, { key: 'badLink', detail: e.message });
  };

  /** Where a sign-in with no app's page behind it goes on to: the account page (its callback, its state in this browser's cookie). */
  async function accountReturn(req: Request, res: Response, app: Application): Promise<HostedReturn | undefined> {
    const client = await accountClient(services, app);
    if (!client) return undefined;
    return { clientId: client.clientId, redirectUri: accountCallbackOf(services, app), state: accountState(req, res, services.baseUrls.secure, client.clientId) };
  }

  /** The sign-in this browser keeps under `name` for the connection, taken (its cookie cleared). */
  function taken(req: Request, res: Response, app: Application, connection: string, name: string): Pending | undefined {
    const held = cookieValue(req, `${PENDING_PREFIX}${name}`);
    if (!held) return undefined;
    res.clearCookie(`${PENDING_PREFIX}${name}`, { path: `/sso/${connection}`, secure: secure(req) });
    try {
      const pending = JSON.parse(services.box.open(Buffer.from(held, 'base64url').toString(), binding(app))) as Pending;
      return pending.connection === connection ? pending : undefined;
    } catch {
      return undefined;
    }
  }

  // an OpenID connection's provider sends the browser back here (a GET of this site: its cookie comes with it)
  router.get('/sso/:connection/callback', pageHandler(resolveApp, async (req, res, app, locale) => {
    const connection = String(req.params.connection);
    const state = typeof req.query.state === 'string' && PENDING_ID.test(req.query.state) ? req.query.state : undefined;
    const pending = CONNECTION_ID.test(connection) && state ? taken(req, res, app, connection, state) : undefined;
    if (!pending?.checks) return sendError(res, 400, locale, app, { key: 'badLink', detail: 'this sign-in is over or was started in another browser: start it again' });
    const query = Object.fromEntries(Object.entries(req.query).filter((e): e is [string, string] => typeof e[1] === 'string'));
    try {
      const checked = await finishOidcConnection(ctxOf(req, res, app), { connectionId: connection, query, checks: pending.checks });
      return hosted.finishConnection(req, res, app, pending.locale, pending.back, checked);
    } catch (e) {
      refused(res, pending.locale, app, e);
    }
  }));

  router.get('/sso/:connection/metadata', pageHandler(resolveApp, async (req, res, app, locale) => {
    try {
      const xml = await connectionMetadata(services, app, String(req.params.connection));
      res.status(200).set({ 'Content-Type': 'application/samlmetadata+xml; charset=utf-8', 'Cache-Control': 'public, max-age=3600' }).send(xml);
    } catch (e) {
      refused(res, locale, app, e);
    }
  }));

  // the hosted sign-in's home-realm discovery (its login client, redirect_uri and state), or the connection's start URL (the account page)
  router.get('/sso/:connection/start', pageHandler(resolveApp, async (req, res, app, locale) => {
    const connection = String(req.params.connection);
    if (!CONNECTION_ID.test(connection)) return sendError(res, 404, locale, app, { key: 'badLink', detail: 'this link names no connection of this application' });
    let back: HostedReturn | undefined;
    if (req.query.client_id !== undefined) {
      const checked = await hosted.hostedReturn(app, req.query, locale);
      if ('key' in checked) return sendError(res, 400, locale, app, checked);
      back = checked;
    } else back = await accountReturn(req, res, app);
    if (!back) return sendError(res, 400, locale, app, { key: 'badLink', detail: 'the application has no login client for its pages: set the application setting account_client_id' });
    const keep = (name: string, pending: Pending) => res.cookie(`${PENDING_PREFIX}${name}`, Buffer.from(services.box.seal(JSON.stringify(pending), binding(app))).toString('base64url'), {
      httpOnly: true, sameSite: 'lax', secure: secure(req), path: `/sso/${connection}`, maxAge: PENDING_SECONDS * 1000,
    });
    try {
      if (await connectionTypeOf(services, app, connection) === 'oidc') {
        const started = await startOidcConnection(ctxOf(req, res, app), { connectionId: connection });
        keep(started.checks.state, { connection, checks: started.checks, back, locale });
        return res.redirect(303, started.url);
      }
      const pendingId = randomBytes(18).toString('base64url');
      const started = await startSamlConnection(ctxOf(req, res, app), { connectionId: connection, relayState: pendingId });
      keep(pendingId, { connection, requestId: started.requestId, back, locale });
      res.redirect(303, started.url);
    } catch (e) {
      refused(res, locale, app, e);
    }
  }));

  // the identity provider's response, posted from its site: checked, kept, and the browser sent on to a page of this site
  router.post('/sso/:connection/acs', acsForm, pageHandler(resolveApp, async (req, res, app, locale) => {
    const connection = String(req.params.connection);
    const body = (req.body ?? {}) as Record<string, unknown>;
    const samlResponse = typeof body.SAMLResponse === 'string' ? body.SAMLResponse : '';
    const relay = typeof body.RelayState === 'string' && PENDING_ID.test(body.RelayState) ? body.RelayState : '';
    if (!samlResponse) return sendError(res, 400, locale, app, { key: 'badLink', detail: 'the identity provider posted no SAMLResponse' });
    try {
      const { resultId } = await receiveSamlResponse(ctxOf(req, res, app), { connectionId: connection, samlResponse });
      res.redirect(303, `/sso/${connection}/continue/${resultId}${relay ? `?relay=${relay}` : ''}`);
    } catch (e) {
      refused(res, locale, app, e);
    }
  }));

  router.get('/sso/:connection/continue/:result', pageHandler(resolveApp, async (req, res, app, locale) => {
    const connection = String(req.params.connection);
    const result = String(req.params.result);
    const relay = typeof req.query.relay === 'string' && PENDING_ID.test(req.query.relay) ? req.query.relay : undefined;
    if (!RESULT_ID.test(result) || !CONNECTION_ID.test(connection)) return sendError(res, 404, locale, app, { key: 'badLink', detail: 'this link names no sign-in of this application' });
    const pending = relay ? taken(req, res, app, connection, relay) : undefined;
    const pageLocale = pending?.locale ?? locale;
    try {
      const checked = await takeCheckedResponse(ctxOf(req, res, app), { resultId: result, ...(pending && { requestId: pending.requestId }) });
      if (checked.connection !== connection) throw new ConnectionRefusal('this sign-in belongs to another connection');
      const back = pending?.back ?? await accountReturn(req, res, app);
      if (!back) return sendError(res, 400, pageLocale, app, { key: 'badLink', detail: 'the application has no login client for its pages: set the application setting account_client_id' });
      return hosted.finishConnection(req, res, app, pageLocale, back, checked);
    } catch (e) {
      refused(res, pageLocale, app, e);
    }
  }));

  return router;
}
