import { randomUUID } from 'node:crypto';
import compression from 'compression';
import express, { type NextFunction, type Request, type Response } from 'express';
import { keptUserAgent } from './domain/events';
import { authenticate } from './http/authenticate';
import { isDatabaseUnavailable, isWriteConflict } from './db';
import { ApiError, errors, apiErrorOf } from './errors';
import { createEndUserAddress, END_USER_IP_HEADER } from './http/end-user-address';
import type { ApiServices, RequestContext } from './http/context';
import { Params } from './http/params';
import { createApplicationResolver } from './http/resolve-application';
import { type Route, ROUTES } from './http/routes';
import { BAD_CREDENTIALS, type ErrorStyle, httpStatusFor } from './http/status';
import { socialRoutes } from './web/social';
import { flowDocumentRoutes } from './web/flow-documents';
import { verifyEmailRoutes } from './web/verify-email';
import { undoEmailChangeRoutes } from './web/undo-email-change';
import { resetPasswordRoutes } from './web/reset-password';
import { hostedRoutes } from './web/hosted';
import { widgetAssetRoutes } from './web/widget-assets';
import { accountRoutes } from './web/account';
import { createOidcProviders } from './oidc/providers';
import { oidcInteractionRoutes } from './web/oidc-interaction';
import { samlRoutes } from './web/saml';
import { connectionRoutes } from './web/connections';
import { scimRoutes } from './web/scim';
import { crossOrigin, exposeIfAllowed, preflight } from './http/cors';
import type { Metrics } from './metrics';
import { openApiDocument } from './http/openapi';
import { packageVersion } from './paths';
import { landingRoutes } from './web/landing';
import { failedPage, markFailedPage, pageLocale, sendError } from './web/pages';
import { refuseUnsafeQuery } from './http/unsafe-input';

export interface AppOptions {
  services: ApiServices;
  /** Requests counted and timed by route (see metrics.ts). */
  metrics?: Metrics;
  defaultApp: string;
  /** Largest accepted request body. */
  bodyLimit?: string;
  routes?: readonly Route[];
  /** Express `trust proxy` (TRUST_PROXY). */
  trustProxy?: string;
  /**
   * Whether this process can serve (GET /readyz): each named check passes or says why not. By
   * default, only that the database answers.
   */
  readiness?: () => Promise<Record<string, ReadinessCheck>>;
  /** Mounts extra handlers after the common middleware (the benchmarks' static baseline). */
  extend?: (app: express.Express) => void;
}

/**
 * One check of GET /readyz: `true` passes; a string fails, saying why (the pod answers 503); a
 * `degraded` note passes, saying what the pod does without (a replica left alone while the primary
 * answers its reads).
 */
export type ReadinessCheck = true | string | { degraded: string };

interface Locals {
  requestId: string;
  errorStyle: ErrorStyle;
  /** What the request log line says about the outcome (never a secret, token, code or query string). */
  outcome: { route?: string; app?: string; clientId?: string; errorCode?: number; error?: string; subError?: string };
}

/** A client id as logged: only something shaped like one (a parameter may hold anything). */
const loggableClientId = (value: string | undefined) => (value !== undefined && /^[A-Za-z0-9_-]{1,64}$/.test(value) ? value : undefined);

/** body-parser's failure types → what the client is told, with the HTTP status they keep. */
const BODY_ERRORS: Record<string, [number, string]> = {
  'entity.too.large': [413, 'the request body is too large'],
  'parameters.too.many': [413, 'the request body has too many parameters'],
  'entity.parse.failed': [400, 'the request body is not valid application/x-www-form-urlencoded data'],
  'encoding.unsupported': [415, 'the request body has an unsupported Content-Encoding; send it plain or gzip/deflate'],
  'charset.unsupported': [415, 'the request body has an unsupported charset; send UTF-8'],
  'request.aborted': [400, 'the request body was not received completely'],
  'request.size.invalid': [400, 'the request body does not match its Content-Length'],
};

function hasBody(req: Request): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

function render(res: Response, err: ApiError): void {
  const locals = res.locals as Locals;
  if (res.headersSent) return;
  locals.outcome.errorCode = err.definition.code;
  locals.outcome.error = err.definition.error;
  locals.outcome.subError = err.definition.subError;
  for (const [name, value] of Object.entries(err.headers)) res.setHeader(name, value);
  res.status(httpStatusFor(err, locals.errorStyle)).json({
    stat: 'error',
    code: err.definition.code,
    error: err.definition.error,
    ...(err.definition.subError && { sub_error: err.definition.subError }),
    error_description: err.message,
    ...err.extra,
    request_id: locals.requestId,
  });
}

/**
 * Resolves once no request is being handled (or after `timeoutMs`): a shutdown waits for requests
 * even when their clients are gone.
 */
export async function drained(app: express.Express, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (((app.locals.inFlight as number | undefined) ?? 0) > 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
}

/**
 * What every response gets: a request id, no caching, no sniffing; and, when it finishes, one log
 * line (the path only: query strings carry secrets and tokens) and its metrics.
 */
function envelope(logger: ApiServices['logger'], metrics: Metrics | undefined) {
  return (req: Request, res: Response, next: NextFunction) => {
    const locals = res.locals as Locals;
    // randomUUID draws from a cached entropy pool: far cheaper per request than randomBytes
    locals.requestId = randomUUID().replace(/-/g, '').slice(0, 16);
    locals.errorStyle = 'capture';
    locals.outcome = {};
    res.setHeader('X-Request-Id', locals.requestId);
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Pragma', 'no-cache');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      const { route, app: appName, clientId, errorCode, error, subError } = locals.outcome;
      const ms = Number((process.hrtime.bigint() - started) / 1000n) / 1000;
      logger.info({
        request_id: locals.requestId, method: req.method, path: req.path, route, status: res.statusCode, ms,
        app: appName, client_id: clientId, error_code: errorCode, error, sub_error: subError,
      }, 'request');
      // labelled by route template (the pages' and documents' own patterns), never by raw path
      const template = route ?? (req.route as { path?: string } | undefined)?.path ?? 'unmatched';
      metrics?.request(template, req.method, res.statusCode, errorCode, ms / 1000);
    });
    next();
  };
}

/**
 * The API's routes, found by exact path in one Map lookup: Express's router would test every
 * registered layer in turn on each request, which cost more of the event loop than the refresh
 * grant's own work. Each route runs its steps in order, as Express would: the method and body
 * checks, the body parser, then authentication and the handler.
 */
function apiRoutes(app: express.Express, options: AppOptions, resolveApp: ReturnType<typeof createApplicationResolver>) {
  const { services } = options;
  const endUserAddress = createEndUserAddress(services.logger);
  const urlencoded = (limit: string | number) => express.urlencoded({ extended: false, limit, parameterLimit: 200 });
  const defaultBody = urlencoded(options.bodyLimit ?? '64kb');

  type Step = (req: Request, res: Response, next: NextFunction) => void;
  const api = new Map<string, { steps: Step[]; preflight?: Step }>();
  for (const route of options.routes ?? ROUTES) {
    api.set(route.path.toLowerCase(), { preflight: crossOrigin(route) ? preflight(services, resolveApp, route) : undefined, steps: [(req, res, next) => {
      (res.locals as Locals).errorStyle = route.errors;
      (res.locals as Locals).outcome.route = route.path;
      if (!route.methods.includes(req.method as 'GET' | 'POST')) {
        res.setHeader('Allow', route.methods.join(', '));
        return next(errors.methodNotAllowed(req.method, route.path, route.methods));
      }
      // a client that sends a DPoP proof expects a token bound to its key: never a bearer token in its place
      if (route.bearerOnly && req.headers.dpop !== undefined) {
        return next(new ApiError('invalidRequestArgument', 'this endpoint issues bearer tokens only, and a DPoP proof was sent: send it to /oidc/token, whose tokens are bound to the key (docs/openid-connect.md#dpop), or send no DPoP header', {
          extra: { argument_name: 'DPoP' },
        }));
      }
      if (hasBody(req) && !req.is('application/x-www-form-urlencoded')) {
        return next(errors.unreadableBody('send parameters as an application/x-www-form-urlencoded body (or in the URL query where the endpoint reads it)', 415));
      }
      next();
    }, route.size ? urlencoded(route.size.body) : defaultBody, async (req, res, next) => {
      // counted until the work ends, even when the client has gone (see drained)
      app.locals.inFlight++;
      try {
        const params = Params.from(route.params === 'body' ? [req.body ?? {}] : [req.query as Record<string, unknown>, req.body ?? {}], route.size?.param);
        const application = await resolveApp(req.headers.host);
        const outcome = (res.locals as Locals).outcome;
        outcome.app = application.name;
        outcome.clientId = loggableClientId(params.get('client_id'));
        const origin = crossOrigin(route) ? req.headers.origin : undefined;
        // readable by the page also when the call fails, once its client is known to allow it
        const exposed = origin !== undefined && params.get('client_id') !== undefined
          && await exposeIfAllowed(services, application, res, origin, params.get('client_id'), undefined);
        const principal = await authenticate(
          { authorization: req.headers.authorization, date: req.headers.date, path: req.path, params },
          application,
          {
            schemes: route.auth,
            kinds: route.kinds,
            badCredentials: BAD_CREDENTIALS[route.errors],
            repeatable: route.reads,
          },
          { clients: services.clients, credentials: services.db.credentials, clock: services.clock, replays: services.replays },
        );
        if (principal.kind === 'client') outcome.clientId = principal.client.clientId;
        if (origin !== undefined && !exposed && principal.kind === 'entity') {
          await exposeIfAllowed(services, application, res, origin, undefined, principal.token.clientId);
        }
        const clientAddress = endUserAddress(principal, req.ip, req.headers[END_USER_IP_HEADER]);
        const ctx: RequestContext = {
          requestId: (res.locals as Locals).requestId, app: application, params, principal, services,
          // events keep the address as the limits count it, and the user agent cut and escaped
          origin: { requestId: (res.locals as Locals).requestId, address: clientAddress, userAgent: keptUserAgent(req.headers['user-agent']) },
          clientAddress,
        };
        const body = await route.handler(ctx);
        res.status(200).json({ ...body, stat: 'ok' });
      } catch (err) {
        // a use case's refusal names the command's field: the endpoint names it its own way
        next(apiErrorOf(err, route.arguments));
      } finally {
        app.locals.inFlight--;
      }
    }] });
  }
  return (req: Request, res: Response, done: NextFunction) => {
    // as Express matches: regardless of case, with or without a trailing slash
    const entry = api.get(req.path.toLowerCase()) ?? api.get(req.path.toLowerCase().replace(/\/+$/, ''));
    if (!entry) return done();
    if (req.method === 'OPTIONS' && entry.preflight) return entry.preflight(req, res, done);
    let i = 0;
    const next = (err?: unknown) => (err !== undefined ? done(err) : i < entry.steps.length ? entry.steps[i++](req, res, next) : done());
    next();
  };
}

/** Liveness (the process answers) and readiness (each check of `readiness` passes, or 503 naming why not). */
function healthRoutes(options: AppOptions) {
  const { services } = options;
  const router = express.Router();
  // liveness: the process answers (it says nothing about the database)
  router.get('/healthz', (_req, res) => {
    res.json({ stat: 'ok' });
  });
  // readiness: the database (and, where configured, Redis, migrations, the default application)
  const readiness = options.readiness ?? (async () => {
    await services.db.ping();
    return { database: true as const };
  });
  const ready = async (_req: Request, res: Response, next: NextFunction) => {
    try {
      const checks = await readiness();
      const failing = Object.entries(checks).filter(([, v]) => typeof v === 'string');
      if (failing.length === 0) return void res.json({ stat: 'ok', checks });
      res.setHeader('Retry-After', '5');
      res.status(503).json({
        stat: 'error', code: 500, error: 'unexpected_error', sub_error: 'service_unavailable',
        error_description: `not ready: ${failing.map(([name, why]) => `${name} ${String(why)}`).join('; ')}`,
        checks, request_id: (res.locals as Locals).requestId,
      });
    } catch (err) {
      next(err);
    }
  };
  router.get('/readyz', ready);
  router.get('/health', ready);
  return router;
}

/**
 * The last handler: every failure as the API's error body (or, for a browser's page, an error page
 * in its language), logged with its request id when it was unexpected.
 */
function errorHandler(logger: ApiServices['logger']) {
  return (thrown: unknown, req: Request, res: Response, _next: NextFunction) => {
    const locals = res.locals as Locals;
    const err = apiErrorOf(thrown);
    let apiError: ApiError;
    if (err instanceof ApiError) {
      apiError = err;
    } else {
      const { type, status, expose } = (err ?? {}) as { type?: string; status?: number; expose?: boolean };
      const known = type ? BODY_ERRORS[type] : undefined;
      if (known) apiError = errors.unreadableBody(known[1], known[0]);
      else if (err instanceof URIError && status === 400) {
        // the router could not decode a path segment: a % not followed by two hex digits
        apiError = new ApiError('invalidArgument', 'the URL path is not valid percent-encoding (a % must be followed by two hex digits, such as %20)', {
          transportStatus: 400, extra: { argument_name: 'path' },
        });
      } else if (isDatabaseUnavailable(err)) apiError = errors.unavailable('the database', err);
      else if (isWriteConflict(err)) apiError = errors.conflicted(err);
      else if (expose && status && status >= 400 && status < 500) {
        // e.g. a body whose Content-Encoding says gzip but which is not gzip
        apiError = errors.unreadableBody('the request body could not be decoded; check its Content-Encoding and Content-Length', status);
      } else apiError = errors.unexpected(err);
    }
    if (apiError.internal !== undefined) {
      logger.error({ request_id: locals.requestId, method: req.method, path: req.path, err: apiError.internal }, 'unexpected error');
    }
    const page = failedPage(res);
    if (page && !res.headersSent) {
      // a browser's page: an error page in its language and look, never the API's JSON. The API's
      // spec errors answer 200 with their code in the body; a page says it in its status
      const code = apiError.definition.code;
      const transport = httpStatusFor(apiError, locals.errorStyle);
      const status = transport >= 400 ? transport : code === 510 ? 429 : code >= 500 ? 500 : 400;
      locals.outcome.errorCode = apiError.definition.code;
      locals.outcome.error = apiError.definition.error;
      for (const [name, value] of Object.entries(apiError.headers)) res.setHeader(name, value);
      // a request the page cannot take (a control character, a body too large) is the link's fault, and says what is wrong
      const badInput = apiError.extra.argument_name !== undefined && status < 500;
      return sendError(res, status, page.locale, page.app, badInput
        ? { key: 'badLink', detail: `${apiError.message} (request id ${locals.requestId})` }
        : { key: 'unavailable', detail: `request id ${locals.requestId}` });
    }
    render(res, apiError);
  };
}

/**
 * Builds the Express app (no listen: tests use it with supertest). Each endpoint runs the same
 * named steps: parse → resolve application → authenticate/authorize → handler → render.
 */
export function buildApp(options: AppOptions): express.Express {
  const { services } = options;
  const logger = services.logger;
  const resolveApp = createApplicationResolver(services.db, options.defaultApp, () => services.clock.now().getTime());
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  if (options.trustProxy !== undefined) {
    const t = options.trustProxy;
    app.set('trust proxy', t === 'true' ? true : t === 'false' ? false : /^\d+$/.test(t) ? Number(t) : t);
  }

  app.locals.inFlight = 0;
  app.use(envelope(logger, options.metrics));
  // gzip only for clients that ask for it: the wrapper costs every response otherwise
  const compress = compression();
  app.use((req, res, next) => (req.headers['accept-encoding'] ? compress(req, res, next) : next()));

  // pages and documents are mounted after the API: no API path is also a page
  app.use(apiRoutes(app, options, resolveApp));
  // each organization's SCIM service (docs/scim.md): its own errors, never a page
  app.use(scimRoutes(services, resolveApp));

  app.use(healthRoutes(options));

  // what the pages and the provider read: no control character, nothing longer than the API takes (the API's own parameters are checked as they are read)
  app.use(refuseUnsafeQuery((req, res) => markFailedPage(res, { locale: pageLocale(req.query.locale, req.headers['accept-language']) })));

  // the OpenID provider of each application (unless its setting openid_provider is off)
  // the provider trusts X-Forwarded-* only when every proxy is trusted (TRUST_PROXY=true); finer settings are Express's alone
  const oidc = createOidcProviders(services, { trustProxy: options.trustProxy === 'true' });
  app.use(oidc.route(resolveApp));
  // its sign-ins: the hosted pages and the account page's session
  app.use(oidcInteractionRoutes(services, resolveApp, oidc.providerFor));
  // the SAML identity provider (docs/saml.md)
  app.use(samlRoutes(services, resolveApp));

  // the reference sign-in and registration pages, built from the login client's flow
  // the proof-of-work widget's files (docs/proof-of-work.md)
  app.use(widgetAssetRoutes());
  const hosted = hostedRoutes(services, resolveApp);
  app.use(hosted.router);
  // organizations' enterprise connections (docs/organizations.md#connections)
  app.use(connectionRoutes(services, resolveApp, hosted));
  // the account page: the person's own profile, password, passkeys, second factor, linked accounts and sessions
  const account = accountRoutes(services, resolveApp, hosted);
  app.use(account.router);
  // the built-in social login application's browser pages and auth_info (not API routes)
  app.use(socialRoutes(services, resolveApp, hosted, account.linking));
  // the mobile SDKs' flow documents
  app.use(flowDocumentRoutes(services));
  // where verification emails link
  app.use(verifyEmailRoutes(services, resolveApp));
  app.use(undoEmailChangeRoutes(services, resolveApp));
  // where password emails link
  app.use(resetPasswordRoutes(services, resolveApp));
  // the API described as OpenAPI 3.1, generated from the route table
  const openApi = JSON.stringify(openApiDocument(options.routes ?? ROUTES, packageVersion()));
  app.get('/openapi.json', (_req, res) => {
    res.setHeader('Cache-Control', 'public, max-age=300');
    res.type('application/json').send(openApi);
  });

  // an operator's first look at a deployment
  app.use(landingRoutes(resolveApp, packageVersion()));

  options.extend?.(app);

  app.use((req, _res, next) => next(errors.unknownEndpoint(req.method, req.path)));

  app.use(errorHandler(logger));

  return app;
}
