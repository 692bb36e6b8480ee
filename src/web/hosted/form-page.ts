import type { Request, Response } from 'express';
import type { Application } from '../../domain/storage/applications';
import type { CompiledForm } from '../../domain/flow-forms';
import { registrationOpen } from '../../domain/registration';
import { emailCodeRegisters, offersEmailCode } from '../../domain/email-codes';
import type { Services } from '../../usecases/services';
import { offersConnections } from '../../usecases/sso/discovery';
import { powHtml } from '../widget-assets';
import { renderFields, VALIDATE_SCRIPT } from '../form-fields';
import { brandOf, escape, providerLabel, sendError, sendPage } from '../pages';
import {
  EMAIL_CODE_PATH, type Entry, entryQuery, formActionOf, FORMS, hidden, HOLD_COOKIE, HOLD_SECONDS, holdTag, type Hosted, type Key, ORGANIZATION_PATH,
  say, type Shown, type View,
} from './parts';

// The page of a form of the login client's flow (sign-in, registration, forgotten password, social
// registration): the form as the flow has it, the passkey button, the social providers, the links.

const TITLES: Record<View, Key> = { signin: 'signIn', register: 'register', forgot: 'forgot', social: 'socialRegister' };
const ACTIONS: Record<View, string> = { signin: '/signin', register: '/register', forgot: '/signin/forgot', social: '/register/social' };
const BUTTONS: Record<View, Key> = { signin: 'signInButton', register: 'registerButton', forgot: 'forgotButton', social: 'registerButton' };

/** The notices above a page's form: the view's introduction, a pending merge, what failed. */
function noticesHtml(entry: Entry, view: View, shown: Shown): string {
  const { locale } = entry;
  let html = '';
  if (view === 'forgot' && !shown.done) html += `<p>${escape(say(locale, 'forgotIntro'))}</p>`;
  if (view === 'social') html += `<p>${escape(say(locale, 'socialIntro', { provider: providerLabel(shown.provider ?? '') }))}</p>`;
  if (shown.mergeToken) html += `<p class="notice" role="status">${escape(say(locale, 'merge', { provider: providerLabel(shown.provider ?? '') }))}</p>`;
  return html + `<p class="notice" id="form-notice" role="alert"${shown.notice ? '' : ' hidden'}>${escape(shown.notice ?? '')}</p>`;
}

/** The form itself, with what it carries hidden (the entry, the CSRF token, a held social token and its browser's tag). */
function formHtml(h: Hosted, req: Request, res: Response, entry: Entry, view: View, form: CompiledForm, shown: Shown, token: string, pow = ''): string {
  if (shown.token || shown.mergeToken) {
    res.cookie(HOLD_COOKIE, holdTag(h.services, shown), { httpOnly: true, sameSite: 'strict', path: '/', secure: req.secure, maxAge: HOLD_SECONDS * 1000 });
  }
  return `<form method="post" action="${ACTIONS[view]}" data-validate aria-describedby="form-notice">`
    + renderFields(h.services.flows, entry.flow, form, entry.locale, shown.values ?? {}, shown.invalid ?? {})
    + hidden({
      client_id: entry.client.clientId, redirect_uri: entry.redirectUri, state: entry.state, locale: entry.locale,
      csrf: token, token: shown.token, merge_token: shown.mergeToken, provider: shown.provider,
    })
    + pow + `<button type="submit">${escape(say(entry.locale, BUTTONS[view]))}</button></form>`;
}

/** The application's social providers as buttons (on the sign-in and registration pages). */
async function providersHtml(services: Services, app: Application, entry: Entry): Promise<string> {
  const list = await services.providers.list(app.id);
  if (list.length === 0) return '';
  return `<p>${escape(say(entry.locale, 'or'))}</p><ul>` + list.map((p) => `<li><a class="button provider" href="/social/${escape(p.name)}/start?${escape(entryQuery(entry, { hosted: '1' }))}">`
    + `${escape(say(entry.locale, 'withProvider', { provider: providerLabel(p.name) }))}</a></li>`).join('') + '</ul>';
}

/**
 * A sign-in with a passkey on the sign-in page (docs/passkeys.md): the browser asks for the
 * challenge (passkey_auth_begin, this origin), signs it with a passkey the person picks, from the
 * button or from the identifier field's autofill (conditional mediation, where the browser has
 * it), and posts the credential with this page's CSRF token to /signin/passkey. Without WebAuthn
 * the button stays hidden.
 */
export const PASSKEY_SCRIPT = `(()=>{const f=document.getElementById('passkey-form'),b=document.getElementById('passkey-button'),n=document.getElementById('form-notice');`
  + `if(!f||!window.PublicKeyCredential||!PublicKeyCredential.parseRequestOptionsFromJSON)return;b.hidden=false;const v=(k)=>f.elements.namedItem(k),m=v('mfa_token');`
  // as the second factor of a paused sign-in (the code step): that account's passkeys, from the button only
  + `const go=async(mediation,signal)=>{const q={client_id:v('client_id').value};if(m)q.mfa_token=m.value;`
  + `const r=await fetch('/oauth/passkey_auth_begin',{method:'POST',body:new URLSearchParams(q)});`
  + `const j=await r.json();if(j.stat!=='ok')throw new Error(j.error_description);`
  + `const c=await navigator.credentials.get({publicKey:PublicKeyCredential.parseRequestOptionsFromJSON(j.options),mediation,signal});`
  + `v('challenge_token').value=j.challenge_token;v('credential').value=JSON.stringify(c.toJSON());f.submit()};let auto;`
  + `if(!m&&PublicKeyCredential.isConditionalMediationAvailable)PublicKeyCredential.isConditionalMediationAvailable().then((ok)=>{if(ok){auto=new AbortController();go('conditional',auto.signal).catch(()=>{})}});`
  + `b.addEventListener('click',()=>{if(auto)auto.abort();go(undefined).catch((e)=>{if(e.name==='AbortError')return;n.textContent=f.dataset.failed;n.hidden=false})})})();`;

/** The passkey form of the sign-in page (or of the code step, with the paused sign-in's mfa_token): a button (shown by PASSKEY_SCRIPT) and what its POST carries. */
export function passkeyHtml(entry: Entry, token: string, mfaToken?: string): string {
  return `<form method="post" action="${mfaToken === undefined ? '/signin/passkey' : '/signin/code'}" id="passkey-form" data-failed="${escape(say(entry.locale, 'passkeyFailed'))}">`
    + hidden({
      client_id: entry.client.clientId, redirect_uri: entry.redirectUri, state: entry.state, locale: entry.locale, csrf: token,
      mfa_token: mfaToken, challenge_token: '', credential: '',
    })
    + `<button type="button" id="passkey-button" class="secondary" hidden>${escape(say(entry.locale, 'passkeyButton'))}</button></form>`;
}

/** A hosted page: the view's form from the login client's flow, what the last attempt showed, and the links between views. */
export async function show(h: Hosted, req: Request, res: Response, app: Application, entry: Entry, view: View, status: number, shown: Shown = {}): Promise<void> {
  const { locale } = entry;
  const title = say(locale, TITLES[view]);
  const form = h.services.flows.form(app, entry.flow, FORMS[view]);
  if (!form) return sendError(res, 500, locale, app, { key: 'unavailable', detail: `the flow ${entry.flow.name} version ${entry.flow.version} has no form ${FORMS[view]}` });
  let body = `<h1>${escape(title)}</h1>` + noticesHtml(entry, view, shown);
  // one form token for the page's forms (each issue sets the cookie anew)
  const token = h.token.issue(req, res);
  const pow = !shown.done && view !== 'social' ? await powHtml(h.services, req, res, app, entry.client, entry.locale) : undefined;
  body += shown.done ? `<p class="notice done" role="status">${escape(shown.done)}</p>` : formHtml(h, req, res, entry, view, form, shown, token, pow);
  const passkeys = view === 'signin' && !shown.mergeToken && !shown.done;
  if (passkeys) body += passkeyHtml(entry, token);
  if ((view === 'signin' || view === 'register') && !shown.mergeToken) body += await providersHtml(h.services, app, entry);
  // no way to register is shown where the application takes none (its operators make its accounts)
  const links = view === 'signin'
    ? [[`/signin?${entryQuery(entry, { view: 'forgot' })}`, 'forgotLink'], ...registrationOpen(app, entry.client) ? [[`/register?${entryQuery(entry)}`, 'noAccount']] : []]
    : [[`/signin?${entryQuery(entry)}`, view === 'register' ? 'haveAccount' : 'backToSignIn']];
  // a code by email: on the sign-in page where the client offers it, on the registration page where it registers too
  const byCode = offersEmailCode(app, entry.client) && !shown.mergeToken && (view === 'signin' || (view === 'register' && emailCodeRegisters(app, entry.client)));
  if (byCode) links.unshift([`${EMAIL_CODE_PATH}?${entryQuery(entry)}`, 'emailCodeLink']);
  // an organization's own identity provider: where some organization of the application has a connection
  if (view === 'signin' && !shown.mergeToken && await offersConnections(h.services, app)) links.unshift([`${ORGANIZATION_PATH}?${entryQuery(entry)}`, 'organizationLink']);
  body += `<p class="links">${links.map(([href, key]) => `<a href="${escape(href)}">${escape(say(locale, key as Key))}</a>`).join('')}</p>`;
  // a successful POST redirects to the app: form-action covers that redirect too
  sendPage(res, status, locale, title, body, {
    formAction: formActionOf(app, entry), brand: brandOf(app), script: passkeys ? [VALIDATE_SCRIPT, PASSKEY_SCRIPT] : VALIDATE_SCRIPT, connect: passkeys, widget: pow !== undefined,
  });
}

/**
 * What the page shows typed in already: the identifier an app passed as `login_hint` (an OpenID
 * app's, passed on by the provider) in the form's identifier field, when it could be one.
 */
export function hinted(h: Hosted, app: Application, entry: Entry, view: View, hint: unknown): Shown {
  if (typeof hint !== 'string' || hint.trim() === '' || hint.length > 254) return {};
  const field = h.services.flows.form(app, entry.flow, FORMS[view])?.fields.find((f) => f.field.type !== 'password');
  return field ? { values: { [field.name]: hint.trim() } } : {};
}
