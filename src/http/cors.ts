import type { NextFunction, Request, Response } from 'express';
import type { Application } from '../domain/storage/applications';
import { settingOfList } from '../domain/settings';
import type { Services } from '../usecases/services';
import type { Route } from './routes';

/**
 * Cross-origin calls from browser apps (the original's JavaScript integrations). Each login client
 * lists the origins allowed to call on its behalf in its setting `allowed_origins` (the
 * application-wide default applies to clients without one): exact origins such as
 * `https://app.example.com`, separated by spaces or commas. Nothing is allowed by default, and
 * never a wildcard: a browser page may only use a client whose owner named its origin.
 */
const SETTING = 'allowed_origins';
const MAX_AGE_SECONDS = 600;

/** The endpoints a browser app calls: the login endpoints, a signed-in user's own record, and its factors (an access token's own endpoints). */
export const crossOrigin = (route: Route) => route.kinds.includes('login_client') || route.path === '/entity' || route.path === '/entity.update'
  || (route.auth[0] === 'access_token' && route.kinds.length === 0);

/** The origins a client's (or the application's) setting allows, normalized as browsers send them. */
export function allowedOrigins(setting: string | undefined): Set<string> {
  const out = new Set<string>();
  for (const entry of settingOfList(setting)) {
    try {
      const url = new URL(entry);
      if ((url.protocol === 'https:' || url.protocol === 'http:') && url.origin === entry.replace(/\/$/, '').toLowerCase()) out.add(url.origin);
    } catch {
      // not an origin: never matches
    }
  }
  return out;
}

/** Whether `client` (a login client) lets pages of `origin` call on its behalf. */
export function allows(app: Application, client: { features: readonly string[]; settings: Record<string, string> } | undefined, origin: string): boolean {
  if (!client || !client.features.includes('login_client')) return false;
  return allowedOrigins(client.settings[SETTING] ?? app.settings[SETTING]).has(origin);
}

/**
 * For a cross-origin call to an endpoint browsers may call: lets the page read the answer when the
 * call's own client allows its origin — the `client_id` it sends, else the client its access token
 * was issued to (looked up only for such calls).
 */
export async function exposeIfAllowed(
  services: Services, app: Application, res: Response, origin: string, clientId: string | undefined, tokenClient: number | null | undefined,
): Promise<boolean> {
  res.setHeader('Vary', 'Origin');
  const client = clientId !== undefined
    ? await services.clients.find(app.id, clientId)
    : tokenClient == null ? undefined : await services.db.clients.findById(app.id, tokenClient);
  if (!allows(app, client, origin)) return false;
  exposeTo(res, origin);
  return true;
}

/** The headers that let the page of `origin` read this answer. */
export function exposeTo(res: Response, origin: string): void {
  res.setHeader('Access-Control-Allow-Origin', origin);
  res.setHeader('Access-Control-Expose-Headers', 'X-Request-Id, Retry-After');
}

/**
 * The preflight (`OPTIONS`) of a cross-origin endpoint. It carries no `client_id`, so it is
 * answered for the origins any login client of the application allows; the call itself is then
 * answered readably only when its own client allows the origin. A refused preflight is a 204
 * without the allowing headers (the browser then stops).
 */
export function preflight(services: Services, resolveApp: (host: string | undefined) => Promise<Application>, route: Route) {
  return async (req: Request, res: Response, next: NextFunction) => {
    try {
      res.setHeader('Vary', 'Origin, Access-Control-Request-Headers');
      const origin = req.headers.origin;
      if (origin) {
        const app = await resolveApp(req.headers.host);
        // the stored rows: no secret needs opening to read a setting
        const clients = await services.db.clients.list(app.id);
        if (clients.some((c) => allows(app, c, origin))) {
          exposeTo(res, origin);
          res.setHeader('Access-Control-Allow-Methods', route.methods.join(', '));
          res.setHeader('Access-Control-Allow-Headers', 'Content-Type, Authorization, Date');
          res.setHeader('Access-Control-Max-Age', String(MAX_AGE_SECONDS));
        }
      }
      res.status(204).end();
    } catch (e) {
      next(e);
    }
  };
}
