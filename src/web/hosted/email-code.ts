import type { Request, Response } from 'express';
import type { Application } from '../../domain/storage/applications';
import { Refusal } from '../../domain/refusal';
import { EMAIL_CODE_SECONDS, offersEmailCode } from '../../domain/email-codes';
import type { SignInOutcome } from '../../usecases/login/call';
import { beginEmailCode, emailCodeSignIn } from '../../usecases/login/email-code';
import { powHtml } from '../widget-assets';
import { callUseCase } from '../login-calls';
import { formValues, renderFields, VALIDATE_SCRIPT } from '../form-fields';
import { brandOf, escape, sendPage } from '../pages';
import {
  EMAIL_CODE_PATH, type Entry, entryQuery, type EntryWork, flowRequest, formActionOf, FORMS, hidden, type Hosted, pageFailure, say, type Shown,
} from './parts';
import { hinted, show } from './form-page';
import { toAppOrPause } from './outcome';

/**
 * Sign-in by email code on the hosted pages (docs/email-codes.md): the address asked for, a code
 * mailed with a link, the code typed on the next page; the browser that asked holds the code's
 * code_token in an HttpOnly cookie, so the mailed link signs in there only (elsewhere its page shows
 * the code to type where it was asked for). The link's page shows a button: a mail scanner's GET
 * signs nobody in.
 */
export const EMAIL_COOKIE = 'gh_email_code';

/** The page that asks for the address (`shown.values.email`: typed already). */
async function showEmailAsk(h: Hosted, req: Request, res: Response, app: Application, entry: Entry, status: number, shown: Shown = {}): Promise<void> {
  const { locale } = entry;
  if (!offersEmailCode(app, entry.client)) return show(h, req, res, app, entry, 'signin', 404, { notice: say(locale, 'failed', { reason: 'this app does not offer sign-in by email code' }) });
  const title = say(locale, 'emailCodeTitle');
  const value = Object.values(shown.values ?? {})[0] ?? '';
  const pow = await powHtml(h.services, req, res, app, entry.client, entry.locale);
  const body = `<h1>${escape(title)}</h1><p>${escape(say(locale, 'emailCodeAsk'))}</p>`
    + `<p class="notice" id="form-notice" role="alert"${shown.notice ? '' : ' hidden'}>${escape(shown.notice ?? '')}</p>`
    + `<form method="post" action="${EMAIL_CODE_PATH}" aria-describedby="form-notice">`
    + `<label for="email">${escape(say(locale, 'emailLabel'))}</label>`
    + `<input id="email" name="email" type="email" autocomplete="email" maxlength="254" required autofocus value="${escape(value)}">`
    + hidden({ client_id: entry.client.clientId, redirect_uri: entry.redirectUri, state: entry.state, locale, csrf: h.token.issue(req, res) })
    + (pow ?? '') + `<button type="submit">${escape(say(locale, 'emailCodeSend'))}</button></form>`
    + `<p class="links"><a href="${escape(`/signin?${entryQuery(entry)}`)}">${escape(say(locale, 'backToSignIn'))}</a></p>`;
  sendPage(res, status, locale, title, body, { formAction: "'self'", brand: brandOf(app), widget: pow !== undefined });
}

/** The page's GET: the address asked for, the app's login_hint typed in already. */
export const askEmail = (h: Hosted): EntryWork => (req, res, app, entry) =>
  showEmailAsk(h, req, res, app, entry, 200, { values: hinted(h, app, entry, 'signin', req.query.login_hint).values });

/**
 * The page where the mailed code is typed: the code_token in the form (and in this browser's
 * cookie), and, for an address no account has, the registration form's other fields (`register`).
 */
function showEmailCode(
  h: Hosted, req: Request, res: Response, app: Application, entry: Entry, status: number,
  shown: { codeToken: string; email?: string; notice?: string; register?: { code: string; values: Record<string, string>; invalid: Record<string, string[]> } },
): void {
  const { locale } = entry;
  const title = say(locale, 'emailCodeTitle');
  const registration = shown.register && h.services.flows.form(app, entry.flow, FORMS.register);
  const fields = registration
    ? { ...registration, fields: registration.fields.filter((f) => f.field.type !== 'password' && f.field.schemaAttribute !== 'email') }
    : undefined;
  const intro = shown.register ? say(locale, 'emailCodeRegister', { email: shown.email ?? '' }) : say(locale, 'emailCodeSent', { email: shown.email ?? '' });
  const body = `<h1>${escape(title)}</h1><p>${escape(intro)}</p>`
    + `<p class="notice" id="form-notice" role="alert"${shown.notice ? '' : ' hidden'}>${escape(shown.notice ?? '')}</p>`
    + `<form method="post" action="${EMAIL_CODE_PATH}/verify" aria-describedby="form-notice"${fields ? ' data-validate' : ''}>`
    + (fields
      ? renderFields(h.services.flows, entry.flow, fields, locale, shown.register!.values, shown.register!.invalid) + hidden({ code: shown.register!.code })
      : `<label for="code">${escape(say(locale, 'emailCodeLabel'))}</label>`
        + '<input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" maxlength="9" required autofocus>')
    + hidden({ client_id: entry.client.clientId, redirect_uri: entry.redirectUri, state: entry.state, locale, csrf: h.token.issue(req, res), code_token: shown.codeToken, email: shown.email })
    + `<button type="submit">${escape(say(locale, fields ? 'registerButton' : 'emailCodeButton'))}</button></form>`
    + `<p class="links"><a href="${escape(`${EMAIL_CODE_PATH}?${entryQuery(entry, shown.email ? { login_hint: shown.email } : {})}`)}">${escape(say(locale, 'emailCodeAgain'))}</a>`
    + `<a href="${escape(`/signin?${entryQuery(entry)}`)}">${escape(say(locale, 'backToSignIn'))}</a></p>`;
  sendPage(res, status, locale, title, body, { formAction: formActionOf(app, entry), brand: brandOf(app), ...(fields && { script: VALIDATE_SCRIPT }) });
}

/** The address's POST: a code mailed (the same page whether an account has the address or not), its code_token held by this browser. */
export const submitEmailBegin = (h: Hosted): EntryWork => async (req, res, app, entry, body) => {
  const email = (body.email ?? '').trim();
  const hosted = { locale: entry.locale, ...(entry.state && { state: entry.state }) };
  const result = await callUseCase(h.services, req, res, app, beginEmailCode, flowRequest(entry), { email, hosted, altcha: body.altcha });
  if (!result.result) {
    const { status, shown } = pageFailure(res, entry.locale, 'email', result.error);
    return showEmailAsk(h, req, res, app, entry, status, { notice: shown.notice ?? Object.values(shown.invalid ?? {}).flat().join(' '), values: { email } });
  }
  // Strict: only this site's own pages read it (the link's page is a GET that does not; its button a POST of this site)
  res.cookie(EMAIL_COOKIE, result.result.codeToken, {
    httpOnly: true, sameSite: 'strict', path: EMAIL_CODE_PATH, secure: h.services.baseUrls.secure, maxAge: EMAIL_CODE_SECONDS * 1000,
  });
  showEmailCode(h, req, res, app, entry, 200, { codeToken: result.result.codeToken, email });
};

/**
 * An email code use case's outcome on a page: to the app (or the second factor's step); the
 * registration form when the address has no account yet; the address page when the code is gone;
 * else the code page with what failed.
 */
export async function afterEmailCode(
  h: Hosted, req: Request, res: Response, app: Application, entry: Entry, result: Awaited<ReturnType<typeof callUseCase<unknown, SignInOutcome>>>,
  shown: { codeToken: string; email?: string; code: string; values: Record<string, string> },
): Promise<void> {
  if (result.result) {
    res.clearCookie(EMAIL_COOKIE, { path: EMAIL_CODE_PATH });
    return toAppOrPause(h, req, res, app, entry, result.result);
  }
  const e = result.error!;
  const { locale } = entry;
  if (e instanceof Refusal && e.reason === 'invalid' && (e.detail.field === 'codeToken' || e.detail.field === 'link')) {
    res.clearCookie(EMAIL_COOKIE, { path: EMAIL_CODE_PATH });
    return showEmailAsk(h, req, res, app, entry, 400, { notice: say(locale, 'codeAgain'), values: { email: shown.email ?? '' } });
  }
  // the code was right, and the address has no account yet: the rest of the registration form
  const registering = e instanceof Refusal && (e.reason === 'missing' && e.detail.formField !== undefined || e.reason === 'invalid_form');
  if (registering) {
    const invalid = e.reason === 'invalid_form' ? { ...e.detail.fields } as Record<string, string[]> : {};
    return showEmailCode(h, req, res, app, entry, e.reason === 'missing' ? 200 : 400, { codeToken: shown.codeToken, email: shown.email, register: { code: shown.code, values: shown.values, invalid } });
  }
  const { status, shown: failure } = pageFailure(res, locale, 'code', e);
  showEmailCode(h, req, res, app, entry, status, { codeToken: shown.codeToken, email: shown.email, notice: failure.notice ?? Object.values(failure.invalid ?? {}).flat().join(' ') });
}

/** The code's POST (and the registration's, with the code carried): through the same use case as /oauth/email_code_native. */
export const submitEmailCode = (h: Hosted): EntryWork => async (req, res, app, entry, body) => {
  const codeToken = body.code_token ?? '';
  const code = (body.code ?? '').slice(0, 16);
  const registration = h.services.flows.form(app, entry.flow, FORMS.register);
  const values = registration && body.code !== undefined && Object.keys(body).some((k) => registration.fields.some((f) => f.name === k)) ? formValues(registration, body) : {};
  const result = await callUseCase(h.services, req, res, app, emailCodeSignIn, flowRequest(entry), { codeToken, code, form: { values } });
  await afterEmailCode(h, req, res, app, entry, result, { codeToken, email: body.email, code, values });
};
