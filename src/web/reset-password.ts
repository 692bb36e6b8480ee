import express, { type Request, type Response } from 'express';
import { changeAccount } from '../domain/accounts';
import type { Application } from '../domain/storage/applications';
import type { StoredCredential } from '../domain/storage/credentials';
import type { FlowVersion } from '../domain/flows';
import type { CompiledForm } from '../domain/flow-forms';
import { changesFrom } from '../domain/profile-fields';
import { sha256Hex } from '../domain/secrets';
import { ApiError } from '../errors';
import type { Services } from '../usecases/services';
import { requestPasswordReset } from '../usecases/login/email-requests';
import { callUseCase, senderForm } from './login-calls';
import { formValues, renderFields, VALIDATE_SCRIPT } from './form-fields';
import { pageFailure } from './hosted';
import { backToApp, brandOf, csrf, escape, LINK_CODE, pageForm, pageHandler, sendPage, stringFields, type PageLocale } from './pages';
import { textsOf } from '../texts';

type Outcome = 'choose' | 'changed' | 'used' | 'expired' | 'unknown' | 'forged' | 'sent';
const FORM = 'newPasswordFormNoAuth';
const FORGOT = 'forgotPasswordForm';


const COOKIE = 'gh_reset_csrf';

/**
 * GET /reset-password?code=…, where password emails link (the login client's default
 * `password_recover_url`): the flow's newPasswordFormNoAuth, its rules as HTML attributes and
 * again on the server. The POST (with a CSRF token bound to a cookie) checks the form first, so a
 * typo never spends the code; then it redeems the code for the client that sent the email, as
 * /oauth/token does, sets the password and ends every session of the account.
 */
export function resetPasswordRoutes(services: Services, resolveApp: (host: string | undefined) => Promise<Application>): express.Router {
  const router = express.Router();
  const { db, tokens, clock, flows, passwords, outbox, versions } = services;

  /** The code's row and what it allows, without spending it. */
  async function codeState(app: Application, code: string): Promise<{ state: Outcome; row?: StoredCredential }> {
    if (!LINK_CODE.test(code)) return { state: 'unknown' };
    const row = await db.credentials.find(app.id, 'authorization_code', sha256Hex(code));
    if (!row || row.extra?.password_reset !== true || row.entityId === null) return { state: 'unknown' };
    if (row.usedAt) return { state: 'used', row };
    return { state: row.expiresAt <= clock.now() ? 'expired' : 'choose', row };
  }

  /** The email (else username) of the account a code is for. */
  const usernameOf = async (app: Application, row: StoredCredential) => {
    const record = row.entityId === null ? undefined : await db.entities.find(app.id, { id: row.entityId });
    return record?.email ?? record?.username ?? undefined;
  };

  /** The client that sent the email, and its flow's `name` form in the page's locale. */
  const formFor = (app: Application, row: StoredCredential, locale: PageLocale, name = FORM) => senderForm(services, app, row, locale, name);

  interface Shown {
    code: string; csrf: string; flow: FlowVersion; form: CompiledForm; invalid: Record<string, string[]>; values?: Record<string, string>; notice?: string;
    /** The account's email, in a username field password managers read (they save the new password for it). */
    username?: string;
  }

  /**
   * The page: the outcome, and the new-password form (`choose`), or for a used or expired link the
   * flow's forgotPasswordForm, which mails a new link as /oauth/forgot_password_native does.
   */
  const page = (res: Response, app: Application, locale: PageLocale, outcome: Outcome, status: number, form?: Shown, back = '') => {
    const t = textsOf('resetPassword', locale) as Record<Outcome | 'title' | 'button' | 'resend', string>;
    let body = `<h1>${escape(t.title)}</h1><p class="notice${outcome === 'changed' || outcome === 'sent' ? ' done' : ''}" role="${outcome === 'choose' ? 'status' : 'alert'}">${escape(t[outcome])}</p>${back}`;
    if (form) {
      const resend = form.form.name === FORGOT;
      if (form.notice) body += `<p class="notice" role="alert">${escape(form.notice)}</p>`;
      body += `<form method="post" action="${resend ? '/reset-password/resend' : '/reset-password'}" data-validate>`
        + (form.username ? `<input type="text" name="username" autocomplete="username" value="${escape(form.username)}" class="visually-hidden" tabindex="-1" aria-hidden="true" readonly>` : '')
        + renderFields(flows, form.flow, form.form, locale, form.values ?? {}, form.invalid)
        + `<input type="hidden" name="code" value="${escape(form.code)}">`
        + `<input type="hidden" name="csrf" value="${escape(form.csrf)}"><input type="hidden" name="locale" value="${locale}">`
        + `<button type="submit">${escape(resend ? t.resend : t.button)}</button></form>`;
    }
    sendPage(res, status, locale, t.title, body, { ...(form ? { formAction: "'self'", script: VALIDATE_SCRIPT } : {}), brand: brandOf(app) });
  };

  const guard = (work: Parameters<typeof pageHandler>[1]) => pageHandler(resolveApp, work);
  const token = csrf(COOKIE, '/reset-password');
  const statusOf = (state: Outcome) => (state === 'unknown' ? 404 : 410);

  /** A link that no longer works: its outcome, with the form for a new link when the sending client is known. */
  async function spent(req: Request, res: Response, app: Application, locale: PageLocale, state: Outcome, code: string, row: StoredCredential | undefined, shown: Partial<Shown> = {}, status?: number) {
    const found = row && (state === 'used' || state === 'expired') ? await formFor(app, row, locale, FORGOT) : undefined;
    if (!found) return page(res, app, locale, state, statusOf(state));
    page(res, app, locale, state, status ?? statusOf(state), {
      code, csrf: token.issue(req, res), flow: found.flow, form: found.form, invalid: {}, ...shown,
    });
  }

  router.get('/reset-password', guard(async (req, res, app, locale) => {
    const code = typeof req.query.code === 'string' ? req.query.code : '';
    const { state, row } = await codeState(app, code);
    if (state !== 'choose') return spent(req, res, app, locale, state, code, row);
    const found = row ? await formFor(app, row, locale) : undefined;
    if (!found) return page(res, app, locale, 'unknown', 404);
    page(res, app, locale, 'choose', 200, { code, csrf: token.issue(req, res), flow: found.flow, form: found.form, invalid: {}, username: await usernameOf(app, row!) });
  }));

  // a used or expired link: a new email, for the client that sent the first, with the API's answers
  router.post('/reset-password/resend', pageForm({ limit: '8kb', parameterLimit: 20 }), guard(async (req, res, app, locale) => {
    const sent = stringFields(req.body);
    if (!token.matches(req, sent.csrf)) return page(res, app, locale, 'forged', 403);
    const code = sent.code ?? '';
    const { state, row } = await codeState(app, code);
    const found = row && (state === 'used' || state === 'expired') ? await formFor(app, row, locale, FORGOT) : undefined;
    if (!found) return page(res, app, locale, state === 'choose' ? 'unknown' : state, statusOf(state));
    const values = formValues(found.form, sent);
    const result = await callUseCase(services, req, res, app, requestPasswordReset, {
      client: found.client, flow: found.flow, redirectUri: found.client.settings.password_recover_url ?? '', responseType: 'token',
    }, values);
    if (result.body) {
      token.clear(res);
      return page(res, app, locale, 'sent', 200);
    }
    const { status, shown } = pageFailure(res, locale, FORGOT, result.error);
    await spent(req, res, app, locale, state, code, row, { ...shown, values }, status);
  }));

  router.post('/reset-password', pageForm({ limit: '8kb', parameterLimit: 20 }), guard(async (req, res, app, locale) => {
    const sent = stringFields(req.body);
    if (!token.matches(req, sent.csrf)) return page(res, app, locale, 'forged', 403);
    const code = sent.code ?? '';
    const { state, row } = await codeState(app, code);
    if (state !== 'choose') return spent(req, res, app, locale, state, code, row);
    const found = row ? await formFor(app, row, locale) : undefined;
    if (!found || !row) return page(res, app, locale, 'unknown', 404);

    // the rules first: a mistake keeps the code usable
    const result = await found.form.validate(sent, { isUnique: async () => true });
    if (Object.keys(result.invalid).length > 0) {
      return page(res, app, locale, 'choose', 400, { code, csrf: token.issue(req, res), flow: found.flow, form: found.form, invalid: result.invalid, username: await usernameOf(app, row) });
    }
    const { password } = changesFrom(found.form, result.values);
    if (password === undefined) throw new Error(`${FORM} of flow ${found.flow.name} has no field that writes the password`);
    try {
      // as /oauth/token would: for the client that sent the email, with the redirect URI it was sent with
      await tokens.exchangeCode(app, found.client, code, row.redirectUri ?? '');
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
      return spent(req, res, app, locale, 'used', code, row);
    }
    const hash = await passwords.hash(password);
    // every session ends, the one just made for this page included: sign in again with the new password
    const written = await changeAccount({ db, outbox, versions, now: () => clock.now() }, app.id, row.entityId!, { passwordHash: hash });
    if (!written) throw new ApiError('recordNotFound', 'the account was deleted meanwhile');
    token.clear(res);
    page(res, app, locale, 'changed', 200, undefined, backToApp(app, found.client, locale));
  }));
  return router;
}
