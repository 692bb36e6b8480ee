import express, { type Response } from 'express';
import { UNDO_EMAIL_CHANGE_PATH } from '../domain/email-change';
import { sha256Hex } from '../domain/secrets';
import type { Application } from '../domain/storage/applications';
import { filled, textsOf } from '../texts';
import { undoEmailChange } from '../usecases/account/undo-email-change';
import type { Services } from '../usecases/services';
import { brandOf, csrf, escape, LINK_CODE, originOf, pageForm, pageHandler, sendPage, type PageLocale } from './pages';

type Outcome = 'confirm' | 'restored' | 'used' | 'expired' | 'unknown' | 'incomplete' | 'forged' | 'taken';

const COOKIE = 'gh_undo_csrf';
const STATUS: Record<Outcome, number> = { confirm: 200, restored: 200, used: 410, expired: 410, unknown: 404, incomplete: 404, forged: 403, taken: 409 };

/** What the code's row says, without using it. */
async function stateOf(services: Services, app: Application, code: string): Promise<Outcome> {
  if (!LINK_CODE.test(code)) return code === '' ? 'incomplete' : 'unknown';
  const row = await services.db.credentials.find(app.id, 'email_change_undo', sha256Hex(code));
  if (!row) return 'unknown';
  if (row.usedAt) return 'used';
  return row.expiresAt <= services.clock.now() ? 'expired' : 'confirm';
}

function page(res: Response, app: Application, locale: PageLocale, outcome: Outcome, values: Record<string, string> = {}, form?: { code: string; csrf: string }) {
  const t = textsOf('undoEmailChange', locale) as Record<Outcome | 'title' | 'button', string>;
  const message = filled(t[outcome], values);
  let body = `<h1>${escape(t.title)}</h1><p class="notice${outcome === 'restored' ? ' done' : ''}" role="${outcome === 'confirm' ? 'status' : 'alert'}">${escape(message)}</p>`;
  if (form) {
    body += `<form method="post" action="${UNDO_EMAIL_CHANGE_PATH}"><input type="hidden" name="code" value="${escape(form.code)}">`
      + `<input type="hidden" name="csrf" value="${escape(form.csrf)}"><input type="hidden" name="locale" value="${locale}">`
      + `<button type="submit">${escape(t.button)}</button></form>`;
  }
  res.setHeader('Cache-Control', 'no-store');
  sendPage(res, STATUS[outcome], locale, t.title, body, { ...(form && { formAction: "'self'" }), brand: brandOf(app) });
}

/**
 * GET /undo-email-change?code=…, where the email telling the old address of a change links. The GET
 * only shows the code's state and a button (mail scanners that fetch links never use it); the POST,
 * the person's click with its CSRF token, puts the old address back and ends every session
 * (docs/api.md#changing-the-email-address).
 */
export function undoEmailChangeRoutes(services: Services, resolveApp: (host: string | undefined) => Promise<Application>): express.Router {
  const router = express.Router();
  const token = csrf(services.box, COOKIE, UNDO_EMAIL_CHANGE_PATH, services.baseUrls.secure);
  router.get(UNDO_EMAIL_CHANGE_PATH, pageHandler(resolveApp, async (req, res, app, locale) => {
    const code = typeof req.query.code === 'string' ? req.query.code : '';
    const state = await stateOf(services, app, code);
    page(res, app, locale, state, {}, state === 'confirm' ? { code, csrf: token.issue(req, res) } : undefined);
  }));
  router.post(UNDO_EMAIL_CHANGE_PATH, pageForm({ limit: '4kb', parameterLimit: 10 }), pageHandler(resolveApp, async (req, res, app, locale) => {
    const code = typeof req.body?.code === 'string' ? req.body.code : '';
    if (!token.matches(req, req.body?.csrf)) return page(res, app, locale, 'forged');
    token.clear(res);
    const state = await stateOf(services, app, code);
    if (state !== 'confirm') return page(res, app, locale, state);
    const outcome = await undoEmailChange(services, { app, code, origin: originOf(req, res) });
    if (outcome.kind === 'restored') return page(res, app, locale, 'restored', { email: outcome.email });
    if (outcome.kind === 'taken') return page(res, app, locale, 'taken');
    if (outcome.kind === 'gone') return page(res, app, locale, 'unknown');
    page(res, app, locale, await stateOf(services, app, code));
  }));
  return router;
}
