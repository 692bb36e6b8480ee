import express, { type Request, type Response } from 'express';
import type { Application } from '../domain/storage/applications';
import type { StoredCredential } from '../domain/storage/credentials';
import type { FlowVersion } from '../domain/flows';
import type { CompiledForm } from '../domain/flow-forms';
import { sha256Hex } from '../domain/secrets';
import type { Services } from '../usecases/services';
import { requestPasswordReset } from '../usecases/login/email-requests';
import { resetPassword } from '../usecases/login/reset-password';
import { callUseCase, senderForm } from './login-calls';
import { powHtml } from './widget-assets';
import { formValues, renderFields, VALIDATE_SCRIPT } from './form-fields';
import { pageFailure } from './hosted';
import { backToApp, brandOf, csrf, escape, LINK_CODE, originOf, pageForm, pageHandler, sendPage, stringFields, type PageLocale } from './pages';
import { textsOf } from '../texts';

type Outcome = 'choose' | 'changed' | 'used' | 'expired' | 'unknown' | 'forged' | 'sent';
const FORM = 'newPasswordFormNoAuth';
const FORGOT = 'forgotPasswordForm';
const COOKIE = 'gh_reset_csrf';

type PageWork = Parameters<typeof pageHandler>[1];

/** What the reset pages share: the services, and the CSRF token of their forms. */
interface ResetPages { services: Services; token: ReturnType<typeof csrf> }

const statusOf = (state: Outcome) => (state === 'unknown' ? 404 : 410);

/** The code's row and what it allows, without spending it. */
async function codeState(services: Services, app: Application, code: string): Promise<{ state: Outcome; row?: StoredCredential }> {
  if (!LINK_CODE.test(code)) return { state: 'unknown' };
  const row = await services.db.credentials.find(app.id, 'authorization_code', sha256Hex(code));
  if (!row || row.extra?.password_reset !== true || row.entityId === null) return { state: 'unknown' };
  if (row.usedAt) return { state: 'used', row };
  return { state: row.expiresAt <= services.clock.now() ? 'expired' : 'choose', row };
}

/** The email (else username) of the account a code is for. */
async function usernameOf(services: Services, app: Application, row: StoredCredential) {
  const record = row.entityId === null ? undefined : await services.db.records.find(app.id, { id: row.entityId });
  return record?.email ?? record?.username ?? undefined;
}

interface Shown {
  code: string; csrf: string; flow: FlowVersion; form: CompiledForm; invalid: Record<string, string[]>; values?: Record<string, string>; notice?: string;
  /** The account's email, in a username field password managers read (they save the new password for it). */
  username?: string;
  /** The proof-of-work widget of a new link's form, when its client asks for one. */
  pow?: string;
}

/**
 * The page: the outcome, and the new-password form (`choose`), or for a used or expired link the
 * flow's forgotPasswordForm, which mails a new link as /oauth/forgot_password_native does.
 */
function page(services: Services, res: Response, app: Application, locale: PageLocale, outcome: Outcome, status: number, form?: Shown, back = '') {
  const t = textsOf('resetPassword', locale) as Record<Outcome | 'title' | 'button' | 'resend', string>;
  let body = `<h1>${escape(t.title)}</h1><p class="notice${outcome === 'changed' || outcome === 'sent' ? ' done' : ''}" role="${outcome === 'choose' ? 'status' : 'alert'}">${escape(t[outcome])}</p>${back}`;
  if (form) {
    const resend = form.form.name === FORGOT;
    if (form.notice) body += `<p class="notice" role="alert">${escape(form.notice)}</p>`;
    body += `<form method="post" action="${resend ? '/reset-password/resend' : '/reset-password'}" data-validate>`
      + (form.username ? `<input type="text" name="username" autocomplete="username" value="${escape(form.username)}" class="visually-hidden" tabindex="-1" aria-hidden="true" readonly>` : '')
      + renderFields(services.flows, form.flow, form.form, locale, form.values ?? {}, form.invalid)
      + `<input type="hidden" name="code" value="${escape(form.code)}">`
      + `<input type="hidden" name="csrf" value="${escape(form.csrf)}"><input type="hidden" name="locale" value="${locale}">`
      + (form.pow ?? '') + `<button type="submit">${escape(resend ? t.resend : t.button)}</button></form>`;
  }
  sendPage(res, status, locale, t.title, body, { ...(form ? { formAction: "'self'", script: VALIDATE_SCRIPT } : {}), brand: brandOf(app), widget: form?.pow !== undefined });
}

/** A link that no longer works: its outcome, with the form for a new link when the sending client is known. */
async function spent(
  r: ResetPages, req: Request, res: Response, app: Application, locale: PageLocale, state: Outcome, code: string, row: StoredCredential | undefined,
  shown: Partial<Shown> = {}, status?: number,
) {
  const found = row && (state === 'used' || state === 'expired') ? await senderForm(r.services, app, row, locale, FORGOT) : undefined;
  if (!found) return page(r.services, res, app, locale, state, statusOf(state));
  // a new link is a forgotten password's email: the proof of work its client asks for (docs/proof-of-work.md)
  const pow = await powHtml(r.services, req, res, app, found.client, locale);
  page(r.services, res, app, locale, state, status ?? statusOf(state), {
    code, csrf: r.token.issue(req, res), flow: found.flow, form: found.form, invalid: {}, ...shown, ...(pow && { pow }),
  });
}

/** The new-password form for a live code (`invalid`: what the last attempt got wrong). */
async function choose(r: ResetPages, req: Request, res: Response, app: Application, locale: PageLocale, code: string, row: StoredCredential, invalid: Record<string, string[]> = {}) {
  const found = await senderForm(r.services, app, row, locale, FORM);
  if (!found) return page(r.services, res, app, locale, 'unknown', 404);
  const status = Object.keys(invalid).length > 0 ? 400 : 200;
  page(r.services, res, app, locale, 'choose', status, { code, csrf: r.token.issue(req, res), flow: found.flow, form: found.form, invalid, username: await usernameOf(r.services, app, row) });
}

const showLink = (r: ResetPages): PageWork => async (req, res, app, locale) => {
  const code = typeof req.query.code === 'string' ? req.query.code : '';
  const { state, row } = await codeState(r.services, app, code);
  if (state !== 'choose' || !row) return spent(r, req, res, app, locale, state, code, row);
  await choose(r, req, res, app, locale, code, row);
};

/** A used or expired link: a new email, for the client that sent the first, with the API's answers. */
const resendLink = (r: ResetPages): PageWork => async (req, res, app, locale) => {
  const sent = stringFields(req.body);
  if (!r.token.matches(req, sent.csrf)) return page(r.services, res, app, locale, 'forged', 403);
  const code = sent.code ?? '';
  const { state, row } = await codeState(r.services, app, code);
  const found = row && (state === 'used' || state === 'expired') ? await senderForm(r.services, app, row, locale, FORGOT) : undefined;
  if (!found) return page(r.services, res, app, locale, state === 'choose' ? 'unknown' : state, statusOf(state));
  const values = formValues(found.form, sent);
  const result = await callUseCase(r.services, req, res, app, requestPasswordReset, {
    client: found.client, flow: found.flow, redirectUri: found.client.settings.password_recover_url ?? '', responseType: 'token',
  }, { form: { values }, altcha: sent.altcha });
  if (!result.error) {
    r.token.clear(res);
    return page(r.services, res, app, locale, 'sent', 200);
  }
  const { status, shown } = pageFailure(res, locale, FORGOT, result.error);
  await spent(r, req, res, app, locale, state, code, row, { ...shown, values }, status);
};

/** The new password: set by the reset use case, then a page back to the app (every session ended: sign in again). */
const setPassword = (r: ResetPages): PageWork => async (req, res, app, locale) => {
  const sent = stringFields(req.body);
  if (!r.token.matches(req, sent.csrf)) return page(r.services, res, app, locale, 'forged', 403);
  const code = sent.code ?? '';
  const { state, row } = await codeState(r.services, app, code);
  if (state !== 'choose' || !row) return spent(r, req, res, app, locale, state, code, row);
  const found = await senderForm(r.services, app, row, locale, FORM);
  if (!found) return page(r.services, res, app, locale, 'unknown', 404);
  const outcome = await resetPassword(r.services, { app, link: { code, row, client: found.client, form: found.form }, sent, locale: found.flow.locale, origin: originOf(req, res) });
  if (outcome.kind === 'invalid') return choose(r, req, res, app, locale, code, row, outcome.invalid);
  if (outcome.kind === 'spent') return spent(r, req, res, app, locale, 'used', code, row);
  r.token.clear(res);
  page(r.services, res, app, locale, 'changed', 200, undefined, backToApp(app, found.client, locale));
};

/**
 * GET /reset-password?code=…, where password emails link (the login client's default
 * `password_recover_url`): the flow's newPasswordFormNoAuth, its rules as HTML attributes and
 * again on the server. The POST (with a CSRF token bound to a cookie) checks the form first, so a
 * typo never spends the code; then the reset use case redeems the code for the client that sent the
 * email, sets the password and ends every session of the account.
 */
export function resetPasswordRoutes(services: Services, resolveApp: (host: string | undefined) => Promise<Application>): express.Router {
  const router = express.Router();
  const r: ResetPages = { services, token: csrf(services.box, COOKIE, '/reset-password', services.baseUrls.secure) };
  const guard = (work: PageWork) => pageHandler(resolveApp, work);
  const form = pageForm({ limit: '8kb', parameterLimit: 20 });
  router.get('/reset-password', guard(showLink(r)));
  router.post('/reset-password/resend', form, guard(resendLink(r)));
  router.post('/reset-password', form, guard(setPassword(r)));
  return router;
}
