import express, { type Request, type Response } from 'express';
import type { Application } from '../domain/storage/applications';
import { sha256Hex } from '../domain/secrets';
import { Refusal } from '../domain/refusal';
import type { Services } from '../usecases/services';
import { ownerOf, type StoredCredential } from '../domain/storage/credentials';
import type { CompiledForm } from '../domain/flow-forms';
import type { FlowVersion } from '../domain/flows';
import { requestEmailVerification } from '../usecases/login/email-requests';
import { callUseCase, senderForm } from './login-calls';
import { formValues, renderFields, VALIDATE_SCRIPT } from './form-fields';
import { pageFailure } from './hosted';
import { backToApp, brandOf, csrf, escape, LINK_CODE, originOf, pageForm, pageHandler, sendPage, stringFields, type PageLocale } from './pages';
import { filled, textsOf } from '../texts';
import { useVerificationCode } from '../usecases/tokens/use-verification-code';

type Outcome = 'confirm' | 'confirmAddress' | 'verified' | 'used' | 'usedVerified' | 'expired' | 'expiredResend' | 'unknown' | 'incomplete' | 'forged' | 'sent';

const COOKIE = 'gh_verify_csrf';
const RESEND = 'resendVerificationForm';

/** What the verification pages share: the services, and the CSRF token of their forms. */
interface VerifyPages { services: Services; token: ReturnType<typeof csrf> }

type PageWork = Parameters<typeof pageHandler>[1];

const statusOf = (state: Outcome) => (state === 'incomplete' || state === 'unknown' ? 404 : 410);

/** What the code's row says, without using it. */
async function stateOf(services: Services, app: Application, code: string): Promise<{ state: Outcome; row?: StoredCredential }> {
  if (!LINK_CODE.test(code)) return { state: code === '' ? 'incomplete' : 'unknown' };
  const row = await services.db.credentials.find(app.id, 'verification_code', sha256Hex(code));
  if (!row) return { state: 'unknown' };
  if (row.usedAt) return { state: 'used', row };
  return { state: row.expiresAt <= services.clock.now() ? 'expired' : 'confirm', row };
}

interface Resend { flow: FlowVersion; form: CompiledForm; values?: Record<string, string>; invalid?: Record<string, string[]>; notice?: string }

/** The page: the outcome, the confirm button (`confirm`), or for an expired link the flow's resendVerificationForm. */
function page(
  services: Services, res: Response, app: Application, locale: PageLocale, outcome: Outcome, status = 200, form?: { code: string; csrf: string; resend?: Resend }, back = '',
  address?: string,
) {
  const t = textsOf('verifyEmail', locale) as Record<Outcome | 'title' | 'button' | 'resend', string>;
  const done = outcome === 'verified' || outcome === 'sent' || outcome === 'usedVerified';
  const role = outcome === 'confirm' || outcome === 'confirmAddress' || done ? 'status' : 'alert';
  const said = filled(t[outcome], { address: address ?? '' });
  let body = `<h1>${escape(t.title)}</h1><p class="notice${done ? ' done' : ''}" role="${role}">${escape(said)}</p>${back}`;
  if (form?.resend?.notice) body += `<p class="notice" role="alert">${escape(form.resend.notice)}</p>`;
  if (form) {
    body += `<form method="post" action="${form.resend ? '/verify-email/resend' : '/verify-email'}"${form.resend ? ' data-validate' : ''}>`
      + (form.resend ? renderFields(services.flows, form.resend.flow, form.resend.form, locale, form.resend.values ?? {}, form.resend.invalid ?? {}) : '')
      + `<input type="hidden" name="verification_code" value="${escape(form.code)}">`
      + `<input type="hidden" name="csrf" value="${escape(form.csrf)}"><input type="hidden" name="locale" value="${locale}">`
      + `<button type="submit">${escape(form.resend ? t.resend : t.button)}</button></form>`;
  }
  sendPage(res, status, locale, t.title, body, { ...(form ? { formAction: "'self'", ...(form.resend && { script: VALIDATE_SCRIPT }) } : {}), brand: brandOf(app) });
}

/** The login client that sent the code and can send another (it has a verify_email_url), with its form. */
async function sender(services: Services, app: Application, row: StoredCredential, locale: PageLocale) {
  const found = await senderForm(services, app, row, locale, RESEND);
  return found && found.client.features.includes('login_client') && found.client.settings.verify_email_url ? found : undefined;
}

/** A link that no longer works: its outcome, with the form for a new link when it expired and its sender is known. */
async function spent(
  v: VerifyPages, req: Request, res: Response, app: Application, locale: PageLocale, state: Outcome, code: string, row?: StoredCredential,
  shown: Partial<Resend> = {}, status?: number,
) {
  // a used link is no dead end: whether the address is verified now, and the way back to the app
  if (state === 'used' && row) return usedLink(v.services, res, app, locale, row);
  const found = row && state === 'expired' ? await sender(v.services, app, row, locale) : undefined;
  if (!found) return page(v.services, res, app, locale, state, statusOf(state));
  page(v.services, res, app, locale, 'expiredResend', status ?? statusOf(state), { code, csrf: v.token.issue(req, res), resend: { flow: found.flow, form: found.form, ...shown } });
}

/** The record a code is for, when it still exists. */
const recordOf = (services: Services, app: Application, row: StoredCredential) =>
  (row.entityId === null ? Promise.resolve(undefined) : services.db.records.find(app.id, { id: row.entityId }));

/** The client that sent the code (for the way back to its app). */
async function senderOf(services: Services, app: Application, row: StoredCredential) {
  const sentBy = ownerOf(row);
  return sentBy === undefined || sentBy === null ? undefined : services.db.clients.findById(app.id, sentBy);
}

/** A link used before: whether the address is verified (never which one: it may have changed since), and the way back to the app. */
async function usedLink(services: Services, res: Response, app: Application, locale: PageLocale, row: StoredCredential) {
  const record = await recordOf(services, app, row);
  const back = backToApp(app, await senderOf(services, app, row), locale);
  if (record?.email && record.emailVerified) return page(services, res, app, locale, 'usedVerified', 410, undefined, back);
  page(services, res, app, locale, 'used', 410, undefined, back);
}

const showLink = (v: VerifyPages): PageWork => async (req, res, app, locale) => {
  const code = typeof req.query.verification_code === 'string' ? req.query.verification_code : '';
  const { state, row } = await stateOf(v.services, app, code);
  if (state !== 'confirm') return spent(v, req, res, app, locale, state, code, row);
  // the page says which address it verifies
  const address = row ? (await recordOf(v.services, app, row))?.email ?? undefined : undefined;
  page(v.services, res, app, locale, address ? 'confirmAddress' : 'confirm', 200, { code, csrf: v.token.issue(req, res) }, '', address);
};

/** The user's click: the code used as /access/useVerificationCode uses it, then a page back to the app whose email carried the link. */
const useLink = (v: VerifyPages): PageWork => async (req, res, app, locale) => {
  const { services, token } = v;
  const code = typeof req.body?.verification_code === 'string' ? req.body.verification_code : '';
  if (!token.matches(req, req.body?.csrf)) return page(services, res, app, locale, 'forged', 403);
  token.clear(res);
  try {
    if (!LINK_CODE.test(code)) return page(services, res, app, locale, 'unknown', 404);
    const { row } = await stateOf(services, app, code);
    await useVerificationCode(services, { app, code, origin: originOf(req, res) });
    const client = row ? await senderOf(services, app, row) : undefined;
    page(services, res, app, locale, 'verified', 200, undefined, backToApp(app, client, locale));
  } catch (e) {
    if (!(e instanceof Refusal)) throw e;
    const { state, row } = await stateOf(services, app, code);
    await spent(v, req, res, app, locale, state === 'confirm' ? 'unknown' : state, code, row);
  }
};

/** An expired link: a new email, for the client that sent the first, with verify_email_native's answers and limits. */
const resendLink = (v: VerifyPages): PageWork => async (req, res, app, locale) => {
  const { services, token } = v;
  const sent = stringFields(req.body);
  if (!token.matches(req, sent.csrf)) return page(services, res, app, locale, 'forged', 403);
  const code = sent.verification_code ?? '';
  const { state, row } = await stateOf(services, app, code);
  const found = row && state === 'expired' ? await sender(services, app, row, locale) : undefined;
  if (!found) return page(services, res, app, locale, state === 'confirm' ? 'unknown' : state, statusOf(state));
  const values = formValues(found.form, sent);
  const result = await callUseCase(services, req, res, app, requestEmailVerification, {
    client: found.client, flow: found.flow, redirectUri: found.client.settings.verify_email_url ?? '', responseType: 'token',
  }, { form: { values } });
  if (!result.error) {
    token.clear(res);
    return page(services, res, app, locale, 'sent');
  }
  const { status, shown } = pageFailure(res, locale, RESEND, result.error);
  await spent(v, req, res, app, locale, state, code, row, { ...shown, values }, status);
};

/**
 * GET /verify-email?verification_code=…, where verification emails link. The GET only shows the
 * state of the code and a button: mail scanners that fetch links never use the code. The POST
 * (the user's click, with a CSRF token bound to a cookie) uses it as /access/useVerificationCode
 * does. Every answer is a localized page with a next step.
 */
export function verifyEmailRoutes(services: Services, resolveApp: (host: string | undefined) => Promise<Application>): express.Router {
  const router = express.Router();
  const v: VerifyPages = { services, token: csrf(services.box, COOKIE, '/verify-email', services.baseUrls.secure) };
  const guard = (work: PageWork) => pageHandler(resolveApp, work);
  router.get('/verify-email', guard(showLink(v)));
  router.post('/verify-email', pageForm({ limit: '4kb', parameterLimit: 10 }), guard(useLink(v)));
  router.post('/verify-email/resend', pageForm({ limit: '8kb', parameterLimit: 20 }), guard(resendLink(v)));
  return router;
}
