import type { Request, Response } from 'express';
import QRCode from 'qrcode';
import type { Application } from '../../domain/storage/applications';
import { sha256Hex } from '../../domain/secrets';
import { totpUri } from '../../domain/second-factor';
import { Refusal } from '../../domain/refusal';
import type { LoginUseCase, SignedIn } from '../../usecases/login/call';
import { enrollTotp } from '../../usecases/factors/enroll-totp';
import { confirmTotp } from '../../usecases/factors/confirm-totp';
import { continueAfterEnrollment } from '../../usecases/login/enrolled-sign-in';
import { callUseCase } from '../login-calls';
import { brandOf, escape, sendPage } from '../pages';
import { type Entry, type EntryWork, entryQuery, flowRequest, formActionOf, hidden, type Hosted, pageFailure, say, toApp } from './parts';
import { show } from './form-page';

/** The enroll_token's row, live: what the enrollment use cases act with (as with an access token). */
const enrollRowOf = (h: Hosted, app: Application, value: string) =>
  (value.length <= 64 ? h.services.db.credentials.findActive(app.id, 'enroll_token', sha256Hex(value), h.services.clock.now()) : Promise.resolve(undefined));

/**
 * The enrollment step of a sign-in whose application requires a second factor the account has not
 * added (docs/second-factor.md): a new authenticator secret as a QR code and as text, and its first
 * code, posted with the enroll_token. `shown`: the secret of the attempt before, kept (a wrong code
 * asks for another code, not another scan).
 */
export async function showEnroll(
  h: Hosted, req: Request, res: Response, app: Application, entry: Entry, enrollToken: string, status: number, shown?: { secret: string; notice: string },
): Promise<void> {
  const { locale } = entry;
  const row = await enrollRowOf(h, app, enrollToken);
  if (!row) return show(h, req, res, app, entry, 'signin', 400, { notice: say(locale, 'codeAgain') });
  let secret = shown?.secret;
  let uri: string;
  if (secret && /^[A-Z2-7]{16,64}$/.test(secret)) {
    const record = row.entityId === null ? undefined : await h.services.db.records.find(app.id, { id: row.entityId });
    uri = totpUri(secret, brandOf(app).name, record?.email ?? record?.username ?? record?.uuid ?? '');
  } else {
    const enrolled = await callUseCase(h.services, req, res, app, enrollTotp, flowRequest(entry), { token: row });
    if (!enrolled.result) {
      const { status: failed, shown: notice } = pageFailure(res, locale, 'enroll', enrolled.error);
      return show(h, req, res, app, entry, 'signin', failed, { notice: notice.notice });
    }
    ({ secret, uri } = enrolled.result);
  }
  const qr = await QRCode.toString(uri, { type: 'svg', errorCorrectionLevel: 'M', margin: 2 });
  const title = say(locale, 'enrollTitle');
  const body = `<h1>${escape(title)}</h1><p>${escape(say(locale, 'enrollIntro', { app: brandOf(app).name }))}</p>`
    + `<p class="notice" id="form-notice" role="alert"${shown?.notice ? '' : ' hidden'}>${escape(shown?.notice ?? '')}</p>`
    + `<div class="qr" role="img" aria-label="${escape(title)}">${qr}</div>`
    + `<p>${escape(say(locale, 'enrollSecret'))} <code id="secret">${escape(secret!)}</code></p>`
    + '<form method="post" action="/signin/enroll" aria-describedby="form-notice">'
    + `<label for="code">${escape(say(locale, 'codeLabel'))}</label>`
    + '<input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" maxlength="8" autofocus>'
    + hidden({
      client_id: entry.client.clientId, redirect_uri: entry.redirectUri, state: entry.state, locale, csrf: h.token.issue(req, res),
      enroll_token: enrollToken, secret,
    })
    + `<button type="submit">${escape(say(locale, 'enrollButton'))}</button></form>`
    + `<p class="links"><a href="${escape(`/signin?${entryQuery(entry)}`)}">${escape(say(locale, 'backToSignIn'))}</a></p>`;
  sendPage(res, status, locale, title, body, { formAction: "'self'", brand: brandOf(app) });
}

/** The enrollment step's POST: the authenticator turned on with its first code, and the recovery codes shown once; then the sign-in again, with both factors. */
export const submitEnroll = (h: Hosted): EntryWork => async (req, res, app, entry, body) => {
  const enrollToken = body.enroll_token ?? '';
  const secret = body.secret ?? '';
  const row = await enrollRowOf(h, app, enrollToken);
  if (!row) return show(h, req, res, app, entry, 'signin', 400, { notice: say(entry.locale, 'codeAgain') });
  const confirmed = await callUseCase(h.services, req, res, app, confirmTotp, flowRequest(entry), { token: row, code: (body.code ?? '').trim().slice(0, 16) });
  if (!confirmed.result) {
    const { status, shown } = pageFailure(res, entry.locale, 'enroll', confirmed.error);
    return showEnroll(h, req, res, app, entry, enrollToken, status, { secret, notice: shown.notice ?? '' });
  }
  const codes = confirmed.result.recoveryCodes;
  const { locale } = entry;
  const title = say(locale, 'enrolledTitle');
  // the authenticator's first code proved it: "continue" finishes the sign-in that waited, without the password again
  const page = `<h1>${escape(title)}</h1><p class="notice done" role="status">${escape(say(locale, 'enrolledIntro'))}</p>`
    + `<ul class="codes">${codes.map((c) => `<li><code>${escape(c)}</code></li>`).join('')}</ul>`
    + '<form method="post" action="/signin/enroll/continue">'
    + hidden({ client_id: entry.client.clientId, redirect_uri: entry.redirectUri, state: entry.state, locale, csrf: h.token.issue(req, res), enroll_token: enrollToken })
    + `<button type="submit">${escape(say(locale, 'continueSignIn'))}</button></form>`;
  // its POST redirects on to the app: form-action covers that redirect too
  sendPage(res, 200, locale, title, page, { brand: brandOf(app), formAction: formActionOf(app, entry) });
};

/** A sign-in that was sent to add a second factor, finished with the factor it added. */
const finishEnrolled: LoginUseCase<{ enrollToken: string }, SignedIn> = (call, command) =>
  continueAfterEnrollment({ ...call, client: call.request.client }, command);

/** "Continue" after the recovery codes: to the app with a code, or the sign-in page when the sign-in that waited is over. */
export const submitEnrolledContinue = (h: Hosted): EntryWork => async (req, res, app, entry, body) => {
  const result = await callUseCase(h.services, req, res, app, finishEnrolled, flowRequest(entry), { enrollToken: (body.enroll_token ?? '').slice(0, 64) });
  if (result.result) return toApp(res, entry, result.result);
  const e = result.error!;
  if (e instanceof Refusal && e.reason === 'invalid') return show(h, req, res, app, entry, 'signin', 400, { notice: say(entry.locale, 'codeAgain') });
  const { status, shown } = pageFailure(res, entry.locale, 'signin', e);
  return show(h, req, res, app, entry, 'signin', status, shown);
};
