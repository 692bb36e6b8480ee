import type { NextFunction, Request, Response } from 'express';
import { isProviderPage } from '../domain/openid-routes';
import { CONTROL, unsafeField } from '../domain/request-values';
import { errors } from '../errors';

/** The paths a browser is sent to (the pages, the account page, the provider's browser endpoints): refused with an error page. */
const PAGES = /^\/(?:$|signin|register|account|reset-password|verify-email|undo-email-change|social\/|oidc\/interaction\/|saml\/|sso\/)/;

/**
 * Express middleware: refuses a request whose path or query string holds what no request may
 * (domain/request-values.ts), before any page or the OpenID provider reads it; `asPage` marks a
 * browser's page, whose refusal is an error page. (The API's routes check their parameters as
 * they read them, params.ts; the pages' forms are checked as they are parsed, web/pages.ts.)
 */
export const refuseUnsafeQuery = (asPage: (req: Request, res: Response) => void) => (req: Request, res: Response, next: NextFunction): void => {
  let path: string;
  try {
    path = decodeURIComponent(req.path);
  } catch {
    // not percent-encoding: the router answers that (app.ts)
    path = '';
  }
  const found = CONTROL.test(path) ? ['path', 'contains a control character; remove it'] as const : unsafeField(req.query);
  if (!found) return next();
  if (PAGES.test(req.path) || isProviderPage(req.path)) asPage(req, res);
  next(errors.unsafeInput(found[0], found[1]));
};
