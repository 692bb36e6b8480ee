import type { Response } from 'express';
import { finishOffer, offerOf } from '../../usecases/account/browser-sessions';
import { finishPasskeyRegistration } from '../../usecases/factors/finish-passkey-registration';
import { callUseCase } from '../login-calls';
import { pageFailure, type HostedReturn } from '../hosted';
import { brandOf, escape, sendError, sendPage } from '../pages';
import { textsOf } from '../../texts';
import { actionForm, deviceOf, OFFER_PATH, type Page, requestOf, say, sessionCookie, type Signed, type SignedWork } from './parts';
import { ADD_PASSKEY_SCRIPT } from './passkeys';

/**
 * The offer after a registration on /register (the login client's or application's setting
 * `passkey_after_registration` = `offer`): the session the registration started (for this offer
 * only) adds a passkey, or not, then the app gets its code and the session ends (finishOffer).
 */
async function showOffer(p: Page, res: Response, s: Signed, back: HostedReturn, status: number, shown: { added?: boolean; notice?: string } = {}): Promise<void> {
  const { locale, app } = s;
  const hosted = textsOf('hosted', locale);
  const token = p.formToken(s.session);
  const entry = { locale };
  const body = `<h1>${escape(hosted.offerTitle)}</h1>`
    + (shown.added ? `<p class="notice done" role="status">${escape(hosted.offerAdded)}</p>` : `<p>${escape(hosted.offerIntro)}</p>`)
    + `<p class="notice" id="page-notice" role="alert"${shown.notice ? '' : ' hidden'}>${escape(shown.notice ?? '')}</p>`
    + (shown.added ? '' : `<form method="post" action="${OFFER_PATH}" id="passkey-add" data-failed="${escape(say(locale, 'passkeyFailed'))}">`
      + Object.entries(entry).map(([k, v]) => `<input type="hidden" name="${escape(k)}" value="${escape(v)}">`).join('')
      + `<input type="hidden" name="csrf" value="${escape(token)}"><input type="hidden" name="credential" value="">`
      + `<button type="button" id="passkey-add-button" hidden>${escape(say(locale, 'addPasskey'))}</button></form>`)
    + actionForm('/register/continue', token, shown.added ? hosted.offerContinue : hosted.offerSkip, entry, '', !shown.added);
  sendPage(res, status, locale, hosted.offerTitle, body, {
    brand: brandOf(app), formAction: `'self' ${new URL(back.redirectUri).origin}`, script: shown.added ? undefined : ADD_PASSKEY_SCRIPT, connect: !shown.added,
  });
}

/**
 * The app a registration's session waits to go back to (kept in the session when it started),
 * still allowed as the hosted pages allow it; else an error page. Nothing of the request names it.
 */
async function offerEntry(p: Page, res: Response, s: Signed): Promise<HostedReturn | undefined> {
  const offer = offerOf(s.session);
  const back = offer
    ? await p.hosted.hostedReturn(s.app, { client_id: offer.clientId, redirect_uri: offer.redirectUri, ...(offer.state && { state: offer.state }) }, s.locale)
    : { key: 'badLink', detail: 'this page follows a registration that offered a passkey, and this browser has none waiting' };
  if (!('key' in back)) return back;
  sendError(res, 400, s.locale, s.app, back);
  return undefined;
}

/** The offer's page. */
export const offerPage = (p: Page): SignedWork => async (_req, res, s) => {
  const back = await offerEntry(p, res, s);
  if (back) await showOffer(p, res, s, back, 200);
};

/** The passkey the browser made for the offer, added; the page says so, with the way on to the app. */
export const offerAdd = (p: Page): SignedWork => async (req, res, s, body) => {
  const back = await offerEntry(p, res, s);
  if (!back) return;
  let credential: unknown;
  try {
    credential = JSON.parse(body.credential ?? '');
  } catch {
    return showOffer(p, res, s, back, 400, { notice: say(s.locale, 'passkeyFailed') });
  }
  const added = await callUseCase(p.services, req, res, s.app, finishPasskeyRegistration, requestOf(s), {
    token: s.session, credential, name: deviceOf(req.headers['user-agent']) || undefined,
  });
  if (added.result) return showOffer(p, res, s, back, 200, { added: true });
  await showOffer(p, res, s, back, 400, { notice: pageFailure(res, s.locale, 'passkey', added.error).shown.notice ?? say(s.locale, 'passkeyFailed') });
};

/** On to the app (with a passkey or without): its code, made from the offer's session, which ends. */
export const offerContinue = (p: Page): SignedWork => async (req, res, s) => {
  const back = await offerEntry(p, res, s);
  const client = back && await p.services.clients.find(s.app.id, back.clientId);
  if (!back || !client) return;
  const made = await callUseCase(p.services, req, res, s.app, finishOffer, requestOf(s), { session: s.session, client });
  if (!made.result) {
    const { status, shown } = pageFailure(res, s.locale, 'offer', made.error);
    return showOffer(p, res, s, back, status, shown);
  }
  // the session was the offer's only: it ended with it
  res.clearCookie(sessionCookie(p, req), { path: '/', secure: p.secure(req) });
  const target = new URL(made.result.offer.redirectUri);
  target.searchParams.set('code', made.result.code);
  if (made.result.offer.state) target.searchParams.set('state', made.result.offer.state);
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.redirect(303, target.toString());
};
