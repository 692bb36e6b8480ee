import type { Request, Response } from 'express';
import type { KoaContextWithOIDC } from 'oidc-provider';
import type { Application } from '../domain/storage/applications';
import { brandOf, escape, pageLocale, renderPage, sendPage, text, type PageLocale } from './pages';

// The device pages (docs/openid-connect.md#devices): where a person types a device's code, the
// question before the device is signed in, and the page after. The provider's deviceFlow draws them
// with these; src/oidc/providers.ts sends them in the language the provider's request asks for.

/** The provider's koa context, as its page sources get it. */
type ProviderCtx = KoaContextWithOIDC;

/** A page in the language it is drawn in. */
export type DrawnPage = (locale: PageLocale) => ReturnType<typeof renderPage>;

/** The name of an error of the provider (its errors are of its own realm: known by their name). */
export const providerErrorName = (err: unknown): string | undefined =>
  (err && typeof (err as { name?: unknown }).name === 'string' ? (err as { name: string }).name : undefined);

/** A device page: `body` drawn in the page's language, in the application's look, posting to this origin. */
const devicePage = (app: Application, body: (locale: PageLocale) => string): DrawnPage =>
  (locale) => renderPage(locale, text(locale, 'deviceTitle'), body(locale), { brand: brandOf(app), formAction: "'self'" });

/** What a wrong, expired, used or missing code says (the provider's error re-renders the input page); a form whose token failed, that it expired. */
const DEVICE_ERRORS: Readonly<Record<string, string>> = {
  NotFoundError: 'deviceNotFound', ExpiredError: 'deviceExpired', AlreadyUsedError: 'deviceUsed', NoCodeError: 'deviceNoCode', AbortedError: 'deviceAborted',
  InvalidRequest: 'deviceFormExpired',
};

/** The provider's anti-forgery token of its device forms, kept in its session. */
const formSecret = (ctx: ProviderCtx) => String((ctx.oidc.session?.state as { secret?: unknown } | undefined)?.secret ?? '');

/** The form where the person types the device's code: the provider's anti-forgery token, the code as typed before. */
export function deviceCodeForm(ctx: ProviderCtx, app: Application, err: unknown): DrawnPage {
  const secret = formSecret(ctx);
  const name = providerErrorName(err);
  const failed = err ? DEVICE_ERRORS[name ?? ''] ?? 'deviceNotFound' : undefined;
  const typed = err && typeof (err as { userCode?: unknown }).userCode === 'string' ? String((err as { userCode: string }).userCode).slice(0, 32) : '';
  return devicePage(app, (locale) => `<h1>${escape(text(locale, 'deviceTitle'))}</h1><p>${escape(text(locale, 'deviceIntro'))}</p>`
    + `<p class="notice" id="form-notice" role="alert"${failed ? '' : ' hidden'}>${failed ? escape(text(locale, failed)) : ''}</p>`
    + `<form method="post" action="${escape(ctx.oidc.urlFor('code_verification'))}" aria-describedby="form-notice">`
    + `<input type="hidden" name="xsrf" value="${escape(secret)}">`
    + `<label for="user_code">${escape(text(locale, 'deviceCodeLabel'))}</label>`
    + `<input id="user_code" name="user_code" type="text" value="${escape(typed)}" autocomplete="off" autocapitalize="characters" spellcheck="false" maxlength="32" required autofocus${failed ? ' aria-invalid="true"' : ''}>`
    + `<button type="submit">${escape(text(locale, 'deviceContinue'))}</button></form>`);
}

/** The question before a device is signed in: which app, from where, with which code; yes or no. */
export function deviceConfirmForm(
  ctx: ProviderCtx, app: Application, client: { clientName?: string; clientId: string }, info: { ip?: string; ua?: string } | undefined, userCode: string,
): DrawnPage {
  const secret = formSecret(ctx);
  const name = client.clientName ?? client.clientId;
  const action = escape(ctx.oidc.urlFor('code_verification'));
  const hiddenFields = `<input type="hidden" name="xsrf" value="${escape(secret)}"><input type="hidden" name="user_code" value="${escape(userCode)}">`;
  return devicePage(app, (locale) => `<h1>${escape(text(locale, 'deviceConfirmTitle', { app: name }))}</h1>`
    + `<p>${escape(text(locale, 'deviceConfirmIntro', { app: name, code: userCode }))}</p>`
    + (info?.ip ? `<p>${escape(text(locale, 'deviceConfirmFrom', { address: info.ip, device: (info.ua ?? '').slice(0, 160) }))}</p>` : '')
    + `<form method="post" action="${action}">${hiddenFields}<button type="submit" name="confirm" value="yes">${escape(text(locale, 'deviceConfirmButton'))}</button></form>`
    + `<form method="post" action="${action}">${hiddenFields}<button type="submit" name="abort" value="yes" class="secondary">${escape(text(locale, 'deviceAbortButton'))}</button></form>`);
}

/** The page after the person said yes: the device is signed in to the app. */
export function deviceDonePage(ctx: ProviderCtx, app: Application): DrawnPage {
  return (locale) => {
    const name = ctx.oidc.client?.clientName ?? ctx.oidc.client?.clientId ?? brandOf(app).name;
    return renderPage(locale, text(locale, 'deviceDoneTitle'), `<h1>${escape(text(locale, 'deviceDoneTitle'))}</h1>`
      + `<p class="notice done" role="status">${escape(text(locale, 'deviceDone', { app: name }))}</p>`, { brand: brandOf(app) });
  };
}

/** The answer to a code typed when this address or the application typed too many unknown ones: 429, and when to try again. */
export function sendTooManyCodes(req: Request, res: Response, app: Application, retryAfterSeconds: number): void {
  const locale = pageLocale(undefined, req.headers['accept-language']);
  const seconds = String(retryAfterSeconds);
  res.setHeader('Retry-After', seconds);
  sendPage(res, 429, locale, text(locale, 'deviceTitle'), `<h1>${escape(text(locale, 'deviceTitle'))}</h1>`
    + `<p class="notice" role="alert">${escape(text(locale, 'deviceTooMany', { seconds }))}</p>`, { brand: brandOf(app) });
}
