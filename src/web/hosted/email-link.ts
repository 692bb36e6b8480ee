import type { Application } from '../../domain/storage/applications';
import type { StoredCredential } from '../../domain/storage/credentials';
import { safeEqual, sha256Hex } from '../../domain/secrets';
import { peerBudgetKey } from '../../domain/addresses';
import { EMAIL_LINK_PATH, type EmailCodeExtra } from '../../domain/email-codes';
import { codeOfLink, emailCodeSignIn } from '../../usecases/login/email-code';
import { callUseCase } from '../login-calls';
import { brandOf, cookieValue, escape, originOf, type pageHandler, sendPage, stringFields, type PageLocale } from '../pages';
import { type Entry, entryOf, flowRequest, formActionOf, hidden, type Hosted, say } from './parts';
import { afterEmailCode, EMAIL_COOKIE } from './email-code';

/** A page with no entry of its own: the mailed link's (its code's row names the sign-in it goes back to). */
export type LinkWork = Parameters<typeof pageHandler>[1];

/** The entry a code's row goes back to (a hosted page's sign-in), or undefined (an app's own: its page shows the code). */
async function entryOfCode(h: Hosted, app: Application, row: StoredCredential, locale: PageLocale): Promise<Entry | undefined> {
  const hosted = (row.extra as Partial<EmailCodeExtra> | null)?.hosted;
  if (!hosted || row.clientId === null || row.redirectUri === null) return undefined;
  const stored = await h.services.db.clients.findById(app.id, row.clientId);
  if (!stored) return undefined;
  const entry = await entryOf(h.services, app, { client_id: stored.clientId, redirect_uri: row.redirectUri, state: hosted.state }, hosted.locale as PageLocale ?? locale);
  return 'key' in entry ? undefined : entry;
}

/** The mailed link's page: a button that goes on (nothing happens on a GET), or the link is gone. */
export const showLink = (h: Hosted): LinkWork => async (req, res, app, locale) => {
  const link = typeof req.query.l === 'string' && req.query.l.length <= 512 ? req.query.l : '';
  const found = link ? await codeOfLink({ app, origin: originOf(req, res), clientAddress: peerBudgetKey(req.ip), services: h.services }, { link }) : undefined;
  if (!found) return sendPage(res, 400, locale, say(locale, 'linkTitle', { app: brandOf(app).name }), `<p class="notice" role="alert">${escape(say(locale, 'linkExpired'))}</p>`, { brand: brandOf(app) });
  const title = say(locale, 'linkTitle', { app: brandOf(app).name });
  const body = `<h1>${escape(title)}</h1><p>${escape(say(locale, 'linkIntro'))}</p>`
    + `<form method="post" action="${EMAIL_LINK_PATH}">${hidden({ l: link, locale, csrf: h.token.issue(req, res) })}`
    + `<button type="submit">${escape(say(locale, 'linkButton'))}</button></form>`;
  // the button's POST may redirect to the app that asked
  const entry = await entryOfCode(h, app, found.row, locale);
  sendPage(res, 200, locale, title, body, { formAction: entry ? formActionOf(app, entry) : "'self'", brand: brandOf(app) });
};

/**
 * The link's button: in the browser that asked (its cookie holds this code's code_token), the
 * sign-in goes on as a typed code would; anywhere else the page shows the code to type there.
 */
export const followLink = (h: Hosted): LinkWork => async (req, res, app, locale) => {
  const body = stringFields(req.body);
  const link = (body.l ?? '').slice(0, 512);
  const title = say(locale, 'linkTitle', { app: brandOf(app).name });
  if (!h.token.matches(req, body.csrf)) return sendPage(res, 403, locale, title, `<p class="notice" role="alert">${escape(say(locale, 'expired'))}</p>`, { brand: brandOf(app) });
  const found = link ? await codeOfLink({ app, origin: originOf(req, res), clientAddress: peerBudgetKey(req.ip), services: h.services }, { link }) : undefined;
  if (!found) return sendPage(res, 400, locale, title, `<p class="notice" role="alert">${escape(say(locale, 'linkExpired'))}</p>`, { brand: brandOf(app) });
  const held = cookieValue(req, EMAIL_COOKIE);
  const entry = held !== undefined && safeEqual(sha256Hex(held), found.row.valueHash) ? await entryOfCode(h, app, found.row, locale) : undefined;
  if (!entry) {
    // another browser (or an app's own sign-in): the code, to type where the sign-in was asked for
    const code = `${found.code.slice(0, 3)} ${found.code.slice(3)}`;
    return sendPage(res, 200, locale, title, `<h1>${escape(title)}</h1><p>${escape(say(locale, 'linkOtherBrowser'))}</p><p class="code" id="code">${escape(code)}</p>`, { brand: brandOf(app) });
  }
  const result = await callUseCase(h.services, req, res, app, emailCodeSignIn, flowRequest(entry), { codeToken: held!, link });
  await afterEmailCode(h, req, res, app, entry, result, { codeToken: held!, email: found.email, code: found.code, values: {} });
};
