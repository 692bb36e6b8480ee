import type { Request, Response } from 'express';
import type { Application } from '../../domain/storage/applications';
import { sha256Hex } from '../../domain/secrets';
import { Refusal } from '../../domain/refusal';
import type { LoginUseCase, SignedIn } from '../../usecases/login/call';
import { verifySecondFactor, type SecondFactorCommand } from '../../usecases/login/verify-second-factor';
import { pausedMethods } from '../../usecases/login/second-factor-step';
import { callUseCase } from '../login-calls';
import { brandOf, escape, sendPage } from '../pages';
import { type Entry, type EntryWork, entryQuery, flowRequest, formActionOf, hidden, type Hosted, pageFailure, say, toApp } from './parts';
import { PASSKEY_SCRIPT, passkeyHtml, show } from './form-page';

/**
 * The second step of a sign-in that waits for its second factor (docs/second-factor.md): the code
 * of the authenticator app, or a recovery code, with the paused sign-in's mfa_token carried in the
 * form (it lives 5 minutes, is the login client's, and is worth nothing without the code).
 */
export async function showCode(h: Hosted, req: Request, res: Response, app: Application, entry: Entry, mfaToken: string, status: number, notice?: string): Promise<void> {
  const { locale } = entry;
  const title = say(locale, 'codeTitle');
  // what may finish this sign-in: a code (and a recovery code), a passkey, or both
  const row = mfaToken.length <= 64 ? await h.services.db.credentials.findActive(app.id, 'mfa_token', sha256Hex(mfaToken), h.services.clock.now()) : undefined;
  const methods = row ? pausedMethods(row) : ['totp'];
  const token = h.token.issue(req, res);
  const passkey = methods.includes('passkey');
  const body = `<h1>${escape(title)}</h1>${methods.includes('totp') ? `<p>${escape(say(locale, 'codeIntro'))}</p>` : ''}`
    + `<p class="notice" id="form-notice" role="alert"${notice ? '' : ' hidden'}>${escape(notice ?? '')}</p>`
    + (methods.includes('totp') ? codeForm(entry, mfaToken, token) : '')
    + (passkey ? passkeyHtml(entry, token, mfaToken) : '')
    + `<p class="links"><a href="${escape(`/signin?${entryQuery(entry)}`)}">${escape(say(locale, 'backToSignIn'))}</a></p>`;
  sendPage(res, status, locale, title, body, {
    formAction: formActionOf(app, entry), brand: brandOf(app), ...(passkey && { script: PASSKEY_SCRIPT, connect: true }),
  });
}

/** The code step's form: a code of the authenticator app, or a recovery code. */
function codeForm(entry: Entry, mfaToken: string, token: string): string {
  const { locale } = entry;
  return '<form method="post" action="/signin/code" aria-describedby="form-notice">'
    + `<label for="code">${escape(say(locale, 'codeLabel'))}</label>`
    + '<input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" maxlength="8" autofocus>'
    + `<label for="recovery_code">${escape(say(locale, 'recoveryLabel'))}</label>`
    + '<input id="recovery_code" name="recovery_code" type="text" autocomplete="off" autocapitalize="none" spellcheck="false" maxlength="16">'
    + hidden({
      client_id: entry.client.clientId, redirect_uri: entry.redirectUri, state: entry.state, locale, csrf: token, mfa_token: mfaToken,
    })
    + `<button type="submit">${escape(say(locale, 'codeButton'))}</button></form>`;
}

/** A paused sign-in finished with its second factor, for the page's login client. */
const finishWithCode: LoginUseCase<SecondFactorCommand, SignedIn> = async (call, command) => {
  const verified = await verifySecondFactor({ ...call, client: call.request.client }, { ...command, signInOnly: true });
  if ('pair' in verified) throw new Error('a sign-in only verification answered a pair');
  return verified.signedIn;
};

/** The code step's POST: to the app with a code, the code page again with what failed, or the sign-in page when the paused sign-in is gone. */
export const submitCode = (h: Hosted): EntryWork => async (req, res, app, entry, body) => {
  const mfaToken = body.mfa_token ?? '';
  const code = body.code?.trim() || undefined;
  const recoveryCode = code === undefined ? body.recovery_code?.trim() || undefined : undefined;
  // the passkey form sends its credential instead
  let passkey: SecondFactorCommand['passkey'];
  if (code === undefined && recoveryCode === undefined && body.credential) {
    try {
      passkey = { challengeToken: body.challenge_token ?? '', credential: JSON.parse(body.credential) };
    } catch {
      return showCode(h, req, res, app, entry, mfaToken, 400, say(entry.locale, 'passkeyFailed'));
    }
  }
  if (code === undefined && recoveryCode === undefined && !passkey) return showCode(h, req, res, app, entry, mfaToken, 400, say(entry.locale, 'codeIntro'));
  const result = await callUseCase(h.services, req, res, app, finishWithCode, flowRequest(entry), { mfaToken, code, recoveryCode, passkey });
  if (result.result) return toApp(res, entry, result.result);
  const e = result.error!;
  if (e instanceof Refusal && e.reason === 'invalid' && e.detail.field === 'mfaToken') {
    return show(h, req, res, app, entry, 'signin', 400, { notice: say(entry.locale, 'codeAgain') });
  }
  const { status, shown } = pageFailure(res, entry.locale, 'code', e);
  await showCode(h, req, res, app, entry, mfaToken, status, shown.notice);
};
