import type { Response } from 'express';
import QRCode from 'qrcode';
import { totpUri } from '../../domain/second-factor';
import { enrollTotp } from '../../usecases/factors/enroll-totp';
import { confirmTotp } from '../../usecases/factors/confirm-totp';
import { removeTotp } from '../../usecases/factors/remove-totp';
import { newRecoveryCodes } from '../../usecases/factors/renew-recovery-codes';
import { callUseCase } from '../login-calls';
import { pageFailure } from '../hosted';
import { brandOf, escape, sendPage } from '../pages';
import { filled, textsOf } from '../../texts';
import { act, actionForm, type Key, type Page, reauthTip, requestOf, say, sayHtml, type Section, type Signed, type SignedWork, tooOld } from './parts';

/** The authenticator app (where the application's second factor is not off): on, with its recovery codes, or to turn on. */
export const totpSection: Section = {
  id: 'h-totp',
  title: 'totp',
  draw: ({ s: { locale }, o, token }) => {
    if (o.policy === 'off') return undefined;
    const t = sayHtml(locale);
    if (o.totp === 'on') {
      // each form's own label: two fields may not be told apart by their labels alone
      const code = (id: string, label: Key) => `<label for="${id}">${t(label)}</label>`
        + `<input id="${id}" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" maxlength="8" required>`;
      return `<p>${t('totpOn')} ${t('codesLeft', { count: String(o.recoveryCodesLeft) })}</p>`
        + actionForm('/account/recovery-codes', token, say(locale, 'newCodes'), {}, code('codes-code', 'totpCodeForCodes'), true)
        + actionForm('/account/totp/remove', token, say(locale, 'totpTurnOff'), {}, code('remove-code', 'totpCodeForRemove'), true);
    }
    return `<p>${t('totpOff')}</p>` + (o.fresh ? '' : reauthTip(locale)) + actionForm('/account/totp/enroll', token, say(locale, 'totpTurnOn'));
  },
};

/** The authenticator's QR code and its first code; then the recovery codes, once. */
export const totpEnroll = (p: Page): SignedWork => async (req, res, s, body) => {
  const { locale, app } = s;
  let secret = body.secret;
  let uri: string;
  let notice: string | undefined;
  if (body.code !== undefined && secret && /^[A-Z2-7]{16,64}$/.test(secret)) {
    const confirmed = await callUseCase(p.services, req, res, app, confirmTotp, requestOf(s), { token: s.session, code: body.code.trim().slice(0, 16) });
    if (confirmed.result) return codesPage(res, s, confirmed.result.recoveryCodes);
    if (tooOld(confirmed.error)) return p.show(req, res, s, 403, { reauth: true });
    notice = pageFailure(res, locale, 'enroll', confirmed.error).shown.notice;
    // the same QR code again (a wrong code asks for another code, not another scan), named as before
    const record = s.session.entityId === null ? undefined : await p.services.db.records.find(app.id, { id: s.session.entityId });
    uri = totpUri(secret, brandOf(app).name, record?.email ?? record?.username ?? record?.uuid ?? '');
  } else {
    const enrolled = await callUseCase(p.services, req, res, app, enrollTotp, requestOf(s), { token: s.session });
    if (!enrolled.result) {
      if (tooOld(enrolled.error)) return p.show(req, res, s, 403, { reauth: true });
      const { status, shown } = pageFailure(res, locale, 'enroll', enrolled.error);
      return p.show(req, res, s, status, shown);
    }
    ({ secret, uri } = enrolled.result);
  }
  const hosted = textsOf('hosted', locale);
  const qr = await QRCode.toString(uri, { type: 'svg', errorCorrectionLevel: 'M', margin: 2 });
  const title = say(locale, 'totp');
  const page = `<h1>${escape(hosted.enrollTitle)}</h1><p>${escape(filled(hosted.enrollIntro, { app: brandOf(app).name }))}</p>`
    + `<p class="notice" role="alert"${notice ? '' : ' hidden'}>${escape(notice ?? '')}</p>`
    + `<div class="qr" role="img" aria-label="${escape(hosted.enrollTitle)}">${qr}</div><p>${escape(hosted.enrollSecret)} <code id="secret">${escape(secret!)}</code></p>`
    + actionForm('/account/totp/enroll', p.formToken(s.session), hosted.enrollButton, { secret: secret! },
      `<label for="code">${escape(hosted.codeLabel)}</label><input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" maxlength="8" required autofocus>`)
    + `<p class="links"><a href="/account?locale=${escape(encodeURIComponent(locale))}">${escape(say(locale, 'backToAccount'))}</a></p>`;
  sendPage(res, notice ? 400 : 200, locale, title, page, { brand: brandOf(app), formAction: "'self'" });
};

/** Recovery codes, shown once (never cached: every page is no-store). */
function codesPage(res: Response, s: Signed, codes: string[]): void {
  const { locale } = s;
  const title = say(locale, 'codesTitle');
  sendPage(res, 200, locale, title, `<h1>${escape(title)}</h1><p class="notice done" role="status">${escape(textsOf('hosted', locale).enrolledIntro)}</p>`
    + `<ul class="codes">${codes.map((c) => `<li><code>${escape(c)}</code></li>`).join('')}</ul>`
    + `<a class="button" href="/account?locale=${escape(encodeURIComponent(locale))}">${escape(say(locale, 'backToAccount'))}</a>`, { brand: brandOf(s.app) });
}

export const totpRemove = (p: Page) => act(p, removeTotp, (s, body) => ({ token: s.session, code: (body.code ?? '').trim().slice(0, 16) }), 'totpOff');

/** Ten new recovery codes, proven by a current code: shown once. */
export const recoveryCodes = (p: Page): SignedWork => async (req, res, s, body) => {
  const renewed = await callUseCase(p.services, req, res, s.app, newRecoveryCodes, requestOf(s), { token: s.session, code: (body.code ?? '').trim().slice(0, 16) });
  if (renewed.result) return codesPage(res, s, renewed.result.recoveryCodes);
  const { status, shown } = pageFailure(res, s.locale, 'codes', renewed.error);
  await p.show(req, res, s, status, shown);
};
