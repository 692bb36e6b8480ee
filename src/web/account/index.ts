import express from 'express';
import type { Application } from '../../domain/storage/applications';
import type { Services } from '../../usecases/services';
import type { AccountLinking } from '../social';
import type { HostedPages } from '../hosted';
import { pageForm, pageHandler } from '../pages';
import { type Page, signed } from './parts';
import { showAccount } from './overview';
import { finishLink } from './identities';
import { ACCOUNT_ROUTES } from './routes';

export { deviceOf } from './parts';
export { activityTextKey } from './activity';

/**
 * The account page (docs/account-page.md): a person's own view of their account, in the
 * application's look and language. It signs in through the hosted /signin like any app, with the
 * login client the link names (`client_id`, else the application's `account_client_id` setting,
 * else its only login client), and keeps a server-side browser session (a `browser_session`
 * credential) whose value only an HttpOnly cookie holds. Every section calls the use cases the
 * API's endpoints call, with that session in place of an access token: the same rules, limits,
 * events and emails, and the same "signed in minutes ago" before changing how the account signs in.
 * Its routes: the page, its sign-in callback, one POST per change, and a registration's passkey
 * offer (ACCOUNT_ROUTES, routes.ts, registered in its order).
 */
export function accountRoutes(services: Services, resolveApp: (host: string | undefined) => Promise<Application>, hosted: HostedPages) {
  const router = express.Router();
  const p: Page = {
    services, formToken: (session) => services.box.tag(session.valueHash, 'account form'), secure: (req) => req.secure || services.baseUrls.secure,
    show: (req, res, s, status, shown) => showAccount(p, req, res, s, status, shown), hosted,
  };
  const form = pageForm({ limit: '80kb', parameterLimit: 40 });
  for (const route of ACCOUNT_ROUTES) {
    const handler = 'signed' in route ? signed(p, resolveApp, route.signed(p)) : pageHandler(resolveApp, route.open(p));
    if (route.method === 'GET') router.get(route.path, handler);
    else router.post(route.path, form, handler);
  }
  const linking: AccountLinking = { finishLink: (req, res, app, locale, socialToken, family) => finishLink(p, req, res, app, locale, socialToken, family) };
  return { router, linking };
}
