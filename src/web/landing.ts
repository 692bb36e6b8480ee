import express from 'express';
import type { Application } from '../domain/storage/applications';
import { DEFAULT_APP_NAME } from '../domain/brand';
import { brandOf, escape, pageHandler, sendPage } from './pages';

/**
 * GET /: an operator's first look at a deployment: what answers here, and where to go next. It
 * names no client and no secret; the sign-in pages need an app's client_id and redirect_uri, so
 * they are described, not linked.
 */
export function landingRoutes(resolveApp: (host: string | undefined) => Promise<Application>, version: string): express.Router {
  const router = express.Router();
  router.get('/', pageHandler(resolveApp, async (_req, res, app, locale) => {
    const brand = brandOf(app);
    const links: [string, string][] = [
      ['/openapi.json', 'The API, described as OpenAPI 3.1'],
      ['/healthz', 'Liveness: this process answers'],
      ['/readyz', 'Readiness: database, migrations, default application, secret key and Redis'],
    ];
    const body = `<h1>${escape(brand.name)}</h1>`
      + `<p>This is Gatehouse ${escape(version)}, a user registration and authentication service`
      + `${brand.name === DEFAULT_APP_NAME ? '' : ` for ${escape(brand.name)}`}. `
      + 'Apps call its API; people sign in on its pages.</p>'
      + `<ul>${links.map(([href, label]) => `<li><a href="${href}">${escape(label)}</a> <code>${href}</code></li>`).join('')}</ul>`
      + '<p>The hosted sign-in and registration pages are <code>/signin</code> and <code>/register</code>, opened by an app with its '
      + '<code>client_id</code> and a <code>redirect_uri</code> on the client\'s allow-list (setting <code>redirect_uris</code>).</p>';
    res.setHeader('Cache-Control', 'no-store');
    sendPage(res, 200, locale, brand.name, body, { brand });
  }));
  return router;
}
