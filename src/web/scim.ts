import express, { type NextFunction, type Request, type Response } from 'express';
import { peerBudgetKey } from '../domain/addresses';
import { BUDGET_KEYS } from '../domain/budget-keys';
import { keptUserAgent } from '../domain/events';
import { DependencyDownError, LimitReachedError } from '../domain/refusal';
import { isObject } from '../domain/scim/filter';
import { resourceTypeDocuments, schemaDocuments, SCHEMA, SCIM_PATH, serviceProviderConfig } from '../domain/scim/schemas';
import type { Application } from '../domain/storage/applications';
import { etagOf, projectionOf, projected, ScimError, type Projection, type ScimCall } from '../usecases/scim/common';
import { createGroup, deleteGroup, getGroup, listGroups, patchGroup, replaceGroup } from '../usecases/scim/groups';
import { scimCaller } from '../usecases/scim/tokens';
import { createUser, deleteUser, fieldOf, getUser, listUsers, patchUser, replaceUser, type ListResult } from '../usecases/scim/users';
import type { Services } from '../usecases/services';

/**
 * The SCIM 2.0 service (docs/scim.md), at `<application address>/scim/v2`: each organization's
 * directory, with that organization's bearer token, reaches its users and groups only. Every
 * answer is `application/scim+json`; every refusal a SCIM Error (RFC 7644 §3.12), never a page or
 * a stack trace. Each call is one use case (src/usecases/scim).
 */


const CONTENT_TYPE = 'application/scim+json; charset=utf-8';

/** Calls with a missing, unknown or revoked token allowed per client address (then 429 until the window ends). */
export const FAILED_CALLS = { max: 60, windowSeconds: 60 };

interface ScimLocals { call?: ScimCall; requestId?: string }

const send = (res: Response, status: number, body: unknown) => {
  res.status(status).type(CONTENT_TYPE).send(JSON.stringify(body));
};

const listResponse = (list: ListResult) => ({ schemas: [SCHEMA.listResponse], ...list });

export function scimRoutes(services: Services, resolveApp: (host: string | undefined) => Promise<Application>) {
  const router = express.Router({ caseSensitive: false });
  const { rateLimiter, scimLimit } = services;
  const json = express.json({ type: ['application/scim+json', 'application/json', 'application/*+json'], limit: '2mb', strict: true });

  // who calls: the organization of the bearer token, within its budget
  router.use(async (req: Request, res: Response, next: NextFunction) => {
    try {
      const outcome = (res.locals as { outcome?: { route?: string; app?: string } }).outcome;
      if (outcome) outcome.route = SCIM_PATH;
      res.setHeader('Cache-Control', 'no-store');
      const app = await resolveApp(req.headers.host);
      if (outcome) outcome.app = app.name;
      const address = peerBudgetKey(req.ip);
      const auth = req.headers.authorization;
      const token = auth && /^bearer\s+/i.test(auth) ? auth.replace(/^bearer\s+/i, '').trim() : undefined;
      // a call with a good token counts against its token only (the directories of many
      // organizations may call from one provider's addresses); one with a token that is none,
      // against its address, which past its budget is answered 429 (a token is one indexed read)
      let caller;
      try {
        caller = await scimCaller(services, { app, token });
      } catch (e) {
        if (e instanceof ScimError) await rateLimiter.take([[BUDGET_KEYS.scimFailed(app.id, address), FAILED_CALLS]]);
        throw e;
      }
      await rateLimiter.take([[BUDGET_KEYS.scimToken(app.id, caller.tokenId), scimLimit]]);
      const requestId = String(res.locals.requestId ?? '');
      (res.locals as ScimLocals).call = {
        app, organization: caller.organization, base: `${services.baseUrls.of(app.name)}${SCIM_PATH}`,
        acting: { actor: { kind: 'scim', tokenId: caller.tokenId }, origin: { requestId, address, userAgent: keptUserAgent(req.headers['user-agent']) } },
      };
      next();
    } catch (e) {
      next(e);
    }
  });
  const withBody = [
    (req: Request, _res: Response, next: NextFunction) => {
      const length = Number(req.headers['content-length'] ?? 0);
      if ((length > 0 || req.headers['transfer-encoding'] !== undefined) && !req.is(['application/scim+json', 'application/json', 'application/*+json'])) {
        return next(new ScimError(415, 'send the body as application/scim+json'));
      }
      next();
    },
    json,
  ];
  const call = (res: Response) => (res.locals as ScimLocals).call!;
  const handle = (fn: (req: Request, res: Response) => Promise<void>) => (req: Request, res: Response, next: NextFunction) => {
    fn(req, res).catch(next);
  };
  const projectionFrom = (source: Record<string, unknown>) => projectionOf(fieldOf(source, 'attributes'), fieldOf(source, 'excludedAttributes'));
  const query = (req: Request) => req.query as Record<string, unknown>;
  const searchBody = (req: Request) => {
    const body = req.body as unknown;
    if (!isObject(body)) throw new ScimError(400, 'the body must be a SearchRequest', 'invalidSyntax');
    const schemas = fieldOf(body, 'schemas');
    if (!Array.isArray(schemas) || !schemas.some((s) => typeof s === 'string' && s.toLowerCase() === SCHEMA.searchRequest.toLowerCase())) {
      throw new ScimError(400, `schemas must name ${SCHEMA.searchRequest}`, 'invalidSyntax');
    }
    return body;
  };
  const sendResource = (res: Response, status: number, resource: Record<string, unknown>, req: Request) => {
    const meta = resource.meta as { version?: string; location?: string } | undefined;
    if (meta?.version) res.setHeader('ETag', meta.version);
    if (status === 201 && meta?.location) res.setHeader('Location', meta.location);
    send(res, status, projected(resource, projectionFrom(query(req)), resource.schemas && (resource.schemas as string[])[0] === SCHEMA.group ? SCHEMA.group : SCHEMA.user));
  };
  const ifMatch = (req: Request) => req.headers['if-match'];

  // what the service is (RFC 7644 §4): read only
  const readOnly = (path: string, answer: (req: Request, base: string) => unknown) => {
    router.get(path, handle(async (req, res) => {
      const found = answer(req, call(res).base);
      if (found === undefined) throw new ScimError(404, `${req.path} is not a resource of this service`);
      send(res, 200, found);
    }));
    router.all(path, (req, res, next) => {
      res.setHeader('Allow', 'GET');
      next(new ScimError(405, `${req.method} is not allowed here: the service's schemas and configuration are read only`));
    });
  };
  readOnly('/ServiceProviderConfig', (_req, base) => serviceProviderConfig(base, `${base.replace(/\/scim\/v2$/, '')}/docs/scim`));
  readOnly('/ResourceTypes', (_req, base) => listResponse({ totalResults: 2, startIndex: 1, itemsPerPage: 2, Resources: resourceTypeDocuments(base) }));
  readOnly('/ResourceTypes/:id', (req, base) => resourceTypeDocuments(base).find((r) => r.id.toLowerCase() === String(req.params.id).toLowerCase()));
  readOnly('/Schemas', (_req, base) => listResponse({ totalResults: 3, startIndex: 1, itemsPerPage: 3, Resources: schemaDocuments(base) }));
  readOnly('/Schemas/:id', (req, base) => schemaDocuments(base).find((s) => s.id.toLowerCase() === String(req.params.id).toLowerCase()));

  /** A resource type's endpoints: the list, .search, create, and each resource's GET, PUT, PATCH and DELETE, each one use case. */
  interface Resources {
    list(call: ScimCall, query: { filter?: unknown; startIndex?: unknown; count?: unknown; projection: Projection }): Promise<ListResult>;
    create(call: ScimCall, body: unknown): Promise<Record<string, unknown>>;
    get(call: ScimCall, id: string, projection: Projection): Promise<{ resource: Record<string, unknown>; version: number }>;
    replace(call: ScimCall, id: string, body: unknown, ifMatch?: string): Promise<Record<string, unknown>>;
    patch(call: ScimCall, id: string, body: unknown, ifMatch?: string): Promise<Record<string, unknown>>;
    remove(call: ScimCall, id: string, ifMatch?: string): Promise<void>;
  }
  const resources = (path: string, ops: Resources) => {
    router.get(path, handle(async (req, res) => {
      const q = query(req);
      send(res, 200, listResponse(await ops.list(call(res), { filter: q.filter, startIndex: q.startIndex, count: q.count, projection: projectionFrom(q) })));
    }));
    router.post(`${path}/.search`, ...withBody, handle(async (req, res) => {
      const body = searchBody(req);
      send(res, 200, listResponse(await ops.list(call(res), {
        filter: fieldOf(body, 'filter'), startIndex: fieldOf(body, 'startIndex'), count: fieldOf(body, 'count'), projection: projectionFrom(body),
      })));
    }));
    router.post(path, ...withBody, handle(async (req, res) => sendResource(res, 201, await ops.create(call(res), req.body), req)));
    router.get(`${path}/:id`, handle(async (req, res) => {
      const { resource, version } = await ops.get(call(res), String(req.params.id), projectionFrom(query(req)));
      // the version the client holds: nothing to send
      if (req.headers['if-none-match']?.split(',').map((t) => t.trim()).some((t) => t === '*' || t === etagOf(version))) {
        res.setHeader('ETag', etagOf(version));
        res.status(304).end();
        return;
      }
      sendResource(res, 200, resource, req);
    }));
    router.put(`${path}/:id`, ...withBody, handle(async (req, res) => sendResource(res, 200, await ops.replace(call(res), String(req.params.id), req.body, ifMatch(req)), req)));
    router.patch(`${path}/:id`, ...withBody, handle(async (req, res) => sendResource(res, 200, await ops.patch(call(res), String(req.params.id), req.body, ifMatch(req)), req)));
    router.delete(`${path}/:id`, handle(async (req, res) => {
      await ops.remove(call(res), String(req.params.id), ifMatch(req));
      res.status(204).end();
    }));
  };
  resources('/Users', {
    list: (c, q) => listUsers(services, c, q), create: (c, body) => createUser(services, c, body), get: (c, id) => getUser(services, c, id),
    replace: (c, id, body, m) => replaceUser(services, c, id, body, m), patch: (c, id, body, m) => patchUser(services, c, id, body, m), remove: (c, id, m) => deleteUser(services, c, id, m),
  });
  resources('/Groups', {
    list: (c, q) => listGroups(services, c, q), create: (c, body) => createGroup(services, c, body), get: (c, id, projection) => getGroup(services, c, id, projection),
    replace: (c, id, body, m) => replaceGroup(services, c, id, body, m), patch: (c, id, body, m) => patchGroup(services, c, id, body, m), remove: (c, id, m) => deleteGroup(services, c, id, m),
  });

  router.all('/Bulk', (_req, _res, next) => next(new ScimError(501, 'bulk operations are not supported (ServiceProviderConfig says so): send each operation on its own')));
  router.all(['/Users', '/Groups'], (req, res, next) => {
    res.setHeader('Allow', 'GET, POST');
    next(new ScimError(405, `${req.method} is not allowed on ${req.path}`));
  });
  router.all(['/Users/:id', '/Groups/:id'], (req, res, next) => {
    res.setHeader('Allow', 'GET, PUT, PATCH, DELETE');
    next(new ScimError(405, `${req.method} is not allowed on a resource`));
  });
  router.use((req, _res, next) => next(new ScimError(404, `${req.path.slice(0, 200)} is not an endpoint of the SCIM service: /Users, /Groups, /Schemas, /ResourceTypes, /ServiceProviderConfig`)));

  // every refusal a SCIM Error
  router.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
    const requestId = String(res.locals.requestId ?? '');
    const error = (status: number, detail: string, scimType?: string) => {
      const outcome = (res.locals as { outcome?: { errorCode?: number; error?: string } }).outcome;
      if (outcome) outcome.error = scimType ?? String(status);
      send(res, status, { schemas: [SCHEMA.error], status: String(status), ...(scimType && { scimType }), detail: `${detail} (request ${requestId})` });
    };
    if (err instanceof ScimError) {
      if (err.status === 401) res.setHeader('WWW-Authenticate', 'Bearer realm="scim"');
      return error(err.status, err.detail, err.scimType);
    }
    if (err instanceof LimitReachedError) {
      res.setHeader('Retry-After', String(err.retryAfterSeconds));
      return error(429, `too many calls: try again in ${err.retryAfterSeconds} seconds`);
    }
    if (err instanceof DependencyDownError) {
      res.setHeader('Retry-After', '5');
      return error(503, `${err.what} is unavailable at the moment: try again shortly`);
    }
    const type = (err as { type?: string }).type;
    if (type === 'entity.parse.failed') return error(400, 'the body is not JSON', 'invalidSyntax');
    if (type === 'entity.too.large') return error(413, 'the request body is larger than 2 MB');
    if (type === 'charset.unsupported' || type === 'encoding.unsupported') return error(415, 'send the body as UTF-8 application/scim+json');
    services.logger.error({ err, path: req.path }, 'SCIM call failed');
    return error(500, 'the call failed on the server; it is logged under its request id');
  });

  const outer = express.Router();
  outer.use(SCIM_PATH, router);
  return outer;
}
