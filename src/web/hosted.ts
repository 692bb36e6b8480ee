import express, { type Request, type Response } from 'express';
import type { Application } from '../domain/storage/applications';
import type { Client } from '../domain/clients';
import type { CompiledForm } from '../domain/flow-forms';
import type { FlowVersion } from '../domain/flows';
import QRCode from 'qrcode';
import { safeEqual, sha256Hex } from '../domain/secrets';
import { totpUri } from '../domain/second-factor';
import { enrollTotp } from '../usecases/factors/enroll-totp';
import { confirmTotp } from '../usecases/factors/confirm-totp';
import { isHttpUrl, settingOfList } from '../domain/settings';
import { DependencyDownError, Refusal } from '../domain/refusal';
import type { Services } from '../usecases/services';
import { isPaused, type FlowRequest, type FormSubmission, type LoginUseCase, type SignedIn, type SignInOutcome } from '../usecases/login/call';
import { requestPasswordReset } from '../usecases/login/email-requests';
import { registerWithPassword } from '../usecases/login/register';
import { continueAfterEnrollment } from '../usecases/login/enrolled-sign-in';
import { registrationOpen } from '../domain/registration';
import { signIn } from '../usecases/login/sign-in';
import { passkeySignIn } from '../usecases/login/passkey-sign-in';
import { beginEmailCode, codeOfLink, emailCodeSignIn } from '../usecases/login/email-code';
import { powHtml } from './widget-assets';
import { peerBudgetKey } from '../domain/addresses';
import { EMAIL_CODE_SECONDS, EMAIL_LINK_PATH, emailCodeRegisters, offersEmailCode, type EmailCodeExtra } from '../domain/email-codes';
import { socialRegister, socialSignIn } from '../usecases/login/social';
import { verifySecondFactor, type SecondFactorCommand } from '../usecases/login/verify-second-factor';
import { pausedMethods } from '../usecases/login/second-factor-step';
import { accountCallbackOf } from '../usecases/account/browser-sessions';
import { accountState } from './account-sign-in';
import { callUseCase, clientFlow, pageError, type PageRefusal } from './login-calls';
import { formValues, renderFields, VALIDATE_SCRIPT } from './form-fields';
import { brandOf, cookieValue, csrf, escape, originOf, type PageProblem, pageForm, pageHandler, providerLabel, sendError, sendPage, stringFields, type PageLocale } from './pages';
import type { StoredCredential } from '../domain/storage/credentials';
import { filled, textsOf } from '../texts';
import { connectionForAddress, offersConnections } from '../usecases/sso/discovery';
import { connectionSignIn, ConnectionRefusal, type CheckedResponse } from '../usecases/sso/connection-sign-in';

const badLink = (detail: string): PageProblem => ({ key: 'badLink', detail });

type Key =
  | 'signIn' | 'register' | 'forgot' | 'socialRegister' | 'signInButton' | 'registerButton' | 'forgotButton' | 'or' | 'withProvider'
  | 'noAccount' | 'haveAccount' | 'forgotLink' | 'backToSignIn' | 'forgotIntro' | 'forgotSent' | 'socialIntro' | 'merge'
  | 'tooMany' | 'expired' | 'failed' | 'otherBrowser' | 'codeTitle' | 'codeIntro' | 'codeLabel' | 'codeButton' | 'recoveryLabel' | 'codeAgain'
  | 'passkeyButton' | 'passkeyFailed' | 'enrollTitle' | 'enrollIntro' | 'enrollSecret' | 'enrollButton' | 'enrolledTitle' | 'enrolledIntro'
  | 'continueSignIn' | 'emailCodeLink' | 'emailCodeTitle' | 'emailCodeAsk' | 'emailLabel' | 'emailCodeSend' | 'emailCodeSent' | 'emailCodeLabel'
  | 'emailCodeButton' | 'emailCodeAgain' | 'emailCodeRegister' | 'linkTitle' | 'linkIntro' | 'linkButton' | 'linkOtherBrowser' | 'linkExpired'
  | 'organizationLink' | 'organizationTitle' | 'organizationAsk' | 'organizationNone' | 'organizationButton';

const say = (locale: PageLocale, key: Key, values: Record<string, string> = {}) =>
  filled(textsOf('hosted', locale)[key], values);

/** Who a hosted page works for: a login client, an allowed redirect_uri, the app's opaque state, and the client's flow. */
export interface Entry { client: Client; redirectUri: string; state?: string; locale: PageLocale; flow: FlowVersion }

/**
 * Where a page's forms may post and be redirected (CSP form-action covers the redirects a POST
 * starts): this host, the sign-in's redirect URI, and the client's other redirect URIs. A sign-in
 * for an OpenID app goes through the account page's callback here and ends at the app's
 * redirect URI, one of its client's.
 */
function formActionOf(app: Application, entry: Entry): string {
  const registered = settingOfList(entry.client.settings.redirect_uris ?? app.settings.redirect_uris).filter(isHttpUrl).map((u) => new URL(u).origin);
  return ["'self'", ...new Set([new URL(entry.redirectUri).origin, ...registered.slice(0, 20)])].join(' ');
}

/** What the social callback needs to come back to the hosted page (stored with the sign-in in progress). */
export interface HostedReturn { clientId: string; redirectUri: string; state?: string }

type View = 'signin' | 'register' | 'forgot' | 'social';
const FORMS: Record<View, string> = { signin: 'signInForm', register: 'registrationForm', forgot: 'forgotPasswordForm', social: 'socialRegistrationForm' };
const COOKIE = 'gh_login_csrf';
/** Binds the social token a page carries to the browser the social callback answered (see `Held`). */
const HOLD_COOKIE = 'gh_social_hold';
const HOLD_SECONDS = 30 * 60;
const MAX_STATE = 512;

const one = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

/** The operators' console's own callback, for a login client of the operators' application (docs/console.md). */
const isConsoleCallback = (services: Services, app: Application, uri: string) =>
  services.baseUrls.console?.app === app.name && services.baseUrls.console.callback === uri;

/** The exact redirect URIs a login client's `redirect_uris` setting (else the application's) allows. */
export function allowedRedirectUris(app: Application, client: Client): Set<string> {
  return new Set(settingOfList(client.settings.redirect_uris ?? app.settings.redirect_uris).filter(isHttpUrl));
}

/** An API failure as the page shows it: the flow's messages by field, else one notice. */
export function pageFailure(res: Response, locale: PageLocale, form: string, e: PageRefusal): { status: number; shown: { notice?: string; invalid?: Record<string, string[]> } } {
  // a dependency down: nothing was done, said on the form
  if (e instanceof DependencyDownError) return { status: 500, shown: { notice: say(locale, 'failed', { reason: pageError(e).message }) } };
  if (!(e instanceof Refusal)) {
    const seconds = String(e.retryAfterSeconds);
    res.setHeader('Retry-After', seconds);
    return { status: 429, shown: { notice: say(locale, 'tooMany', { seconds }) } };
  }
  const invalid = { ...e.detail.fields } as Record<string, string[]>;
  const formWide = invalid[form];
  if (formWide) return { status: 400, shown: { notice: formWide.join(' ') } };
  if (Object.keys(invalid).length > 0) return { status: 400, shown: { invalid } };
  // the person's own message when the flow has one, else what the API would say
  const message = e.detail.message ?? pageError(e).message;
  return { status: e.reason === 'misconfigured' ? 500 : 400, shown: { notice: say(locale, 'failed', { reason: message }) } };
}

/** What the hosted pages' functions share: the services, and the CSRF token of their forms. */
interface Hosted { services: Services; token: ReturnType<typeof csrf> }

/** The page's client, redirect URI, state and flow; or what is wrong with the link (never redirected to). */
async function entryOf(services: Services, app: Application, source: Record<string, unknown>, locale: PageLocale): Promise<Entry | PageProblem> {
  const clientId = one(source.client_id);
  if (!clientId || clientId.length > 64) return badLink('client_id is missing: open this page with the client_id of a login client of this application.');
  const client = await services.clients.find(app.id, clientId);
  if (!client || !client.features.includes('login_client')) return badLink('client_id is not a login client of this application.');
  const redirectUri = one(source.redirect_uri);
  // the account page's own callback is every login client's: its code stays with this service
  if (!redirectUri || !(allowedRedirectUris(app, client).has(redirectUri) || redirectUri === accountCallbackOf(services, app) || isConsoleCallback(services, app, redirectUri))) {
    return badLink('redirect_uri is missing or is not on the allow-list of this client (its redirect_uris setting, or the application\'s); nothing was sent anywhere.');
  }
  const state = one(source.state);
  if (state !== undefined && (state.length > MAX_STATE || /[\u0000-\u001f\u007f]/.test(state))) return badLink(`state must be at most ${MAX_STATE} printable characters.`);
  // a flow without the page's locale is shown in English, as its messages would be
  const flow = await clientFlow(services, app, client, locale);
  if (!flow) return badLink('this login client has no default flow to show (its default_flow_name and default_flow_version settings).');
  return { client, redirectUri, state: state || undefined, locale, flow };
}

const entryQuery = (entry: Entry, extra: Record<string, string> = {}) => new URLSearchParams({
  client_id: entry.client.clientId, redirect_uri: entry.redirectUri, locale: entry.locale, ...(entry.state ? { state: entry.state } : {}), ...extra,
}).toString();

const hidden = (fields: Record<string, string | undefined>) => Object.entries(fields)
  .filter((e): e is [string, string] => e[1] !== undefined)
  .map(([k, v]) => `<input type="hidden" name="${escape(k)}" value="${escape(v)}">`).join('');

/**
 * What a page keeps through its form after a social callback: a social token to register, or a
 * merge token to link at sign-in, and the provider's name. Only the callback's own page puts them
 * in a form, and it binds them to its browser with a keyed tag in an HttpOnly, SameSite=Strict
 * cookie: a POST carrying a token without that tag (a cross-site form, a token copied into
 * another browser) is refused, so nobody can make a victim's sign-in link their identity.
 */
interface Held { token?: string; mergeToken?: string; provider?: string }
const holdTag = (services: Services, held: Held) =>
  services.box.tag(JSON.stringify([held.provider ?? '', held.token ?? '', held.mergeToken ?? '']), 'hosted social');

/** The social values of a POST, when this browser holds their tag; `undefined` when it does not. */
function heldBy(services: Services, req: Request, body: Record<string, string>): Held | undefined {
  if (!body.token && !body.merge_token) return {};
  const held = { token: body.token || undefined, mergeToken: body.merge_token || undefined, provider: body.provider || undefined };
  const tag = cookieValue(req, HOLD_COOKIE);
  return tag && safeEqual(tag, holdTag(services, held)) ? held : undefined;
}

interface Shown extends Held {
  values?: Record<string, string>;
  invalid?: Record<string, string[]>;
  notice?: string;
  done?: string;
}

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
const PASSKEY_SCRIPT = `(()=>{const f=document.getElementById('passkey-form'),b=document.getElementById('passkey-button'),n=document.getElementById('form-notice');`
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
function passkeyHtml(entry: Entry, token: string, mfaToken?: string): string {
  return `<form method="post" action="${mfaToken === undefined ? '/signin/passkey' : '/signin/code'}" id="passkey-form" data-failed="${escape(say(entry.locale, 'passkeyFailed'))}">`
    + hidden({
      client_id: entry.client.clientId, redirect_uri: entry.redirectUri, state: entry.state, locale: entry.locale, csrf: token,
      mfa_token: mfaToken, challenge_token: '', credential: '',
    })
    + `<button type="button" id="passkey-button" class="secondary" hidden>${escape(say(entry.locale, 'passkeyButton'))}</button></form>`;
}

/** A hosted page: the view's form from the login client's flow, what the last attempt showed, and the links between views. */
async function show(h: Hosted, req: Request, res: Response, app: Application, entry: Entry, view: View, status: number, shown: Shown = {}): Promise<void> {
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
function hinted(h: Hosted, app: Application, entry: Entry, view: View, hint: unknown): Shown {
  if (typeof hint !== 'string' || hint.trim() === '' || hint.length > 254) return {};
  const field = h.services.flows.form(app, entry.flow, FORMS[view])?.fields.find((f) => f.field.type !== 'password');
  return field ? { values: { [field.name]: hint.trim() } } : {};
}

/**
 * The second step of a sign-in that waits for its second factor (docs/second-factor.md): the code
 * of the authenticator app, or a recovery code, with the paused sign-in's mfa_token carried in the
 * form (it lives 5 minutes, is the login client's, and is worth nothing without the code).
 */
async function showCode(h: Hosted, req: Request, res: Response, app: Application, entry: Entry, mfaToken: string, status: number, notice?: string): Promise<void> {
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

/** The enroll_token's row, live: what the enrollment use cases act with (as with an access token). */
const enrollRowOf = (h: Hosted, app: Application, value: string) =>
  (value.length <= 64 ? h.services.db.credentials.findActive(app.id, 'enroll_token', sha256Hex(value), h.services.clock.now()) : Promise.resolve(undefined));

/**
 * The enrollment step of a sign-in whose application requires a second factor the account has not
 * added (docs/second-factor.md): a new authenticator secret as a QR code and as text, and its first
 * code, posted with the enroll_token. `shown`: the secret of the attempt before, kept (a wrong code
 * asks for another code, not another scan).
 */
async function showEnroll(
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
const submitEnroll = (h: Hosted): EntryWork => async (req, res, app, entry, body) => {
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
const submitEnrolledContinue = (h: Hosted): EntryWork => async (req, res, app, entry, body) => {
  const result = await callUseCase(h.services, req, res, app, finishEnrolled, flowRequest(entry), { enrollToken: (body.enroll_token ?? '').slice(0, 64) });
  if (result.result) return toApp(res, entry, result.result);
  const e = result.error!;
  if (e instanceof Refusal && e.reason === 'invalid') return show(h, req, res, app, entry, 'signin', 400, { notice: say(entry.locale, 'codeAgain') });
  const { status, shown } = pageFailure(res, entry.locale, 'signin', e);
  return show(h, req, res, app, entry, 'signin', status, shown);
};

/** A paused sign-in finished with its second factor, for the page's login client. */
const finishWithCode: LoginUseCase<SecondFactorCommand, SignedIn> = async (call, command) => {
  const verified = await verifySecondFactor({ ...call, client: call.request.client }, { ...command, signInOnly: true });
  if ('pair' in verified) throw new Error('a sign-in only verification answered a pair');
  return verified.signedIn;
};

/** The code step's POST: to the app with a code, the code page again with what failed, or the sign-in page when the paused sign-in is gone. */
const submitCode = (h: Hosted): EntryWork => async (req, res, app, entry, body) => {
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

/** What a page's use case works for: the entry's login client and flow, its redirect_uri, and a code for the app. */
const flowRequest = (entry: Entry): FlowRequest => ({ client: entry.client, flow: entry.flow, redirectUri: entry.redirectUri, responseType: 'code' });

/** A sign-in's outcome: to the app with its code, or its pause's page (the second factor asked for, or one to add first). */
function toAppOrPause(h: Hosted, req: Request, res: Response, app: Application, entry: Entry, outcome: SignInOutcome): Promise<void> | void {
  if (!isPaused(outcome)) return toApp(res, entry, outcome);
  const { pause } = outcome;
  return pause.kind === 'enroll' ? showEnroll(h, req, res, app, entry, pause.token, 200) : showCode(h, req, res, app, entry, pause.token, 200);
}

/** To the app with the code (and its state). */
function toApp(res: Response, entry: Entry, signedIn: SignedIn): void {
  res.clearCookie(HOLD_COOKIE, { path: '/' });
  const target = new URL(entry.redirectUri);
  target.searchParams.set('code', String(signedIn.authorizationCode));
  if (entry.state) target.searchParams.set('state', entry.state);
  res.setHeader('Referrer-Policy', 'no-referrer');
  res.redirect(303, target.toString());
}

/**
 * Sign-in by email code on the hosted pages (docs/email-codes.md): the address asked for, a code
 * mailed with a link, the code typed on the next page; the browser that asked holds the code's
 * code_token in an HttpOnly cookie, so the mailed link signs in there only (elsewhere its page shows
 * the code to type where it was asked for). The link's page shows a button: a mail scanner's GET
 * signs nobody in.
 */
const EMAIL_CODE_PATH = '/signin/email-code';
const EMAIL_COOKIE = 'gh_email_code';

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
const submitEmailBegin = (h: Hosted): EntryWork => async (req, res, app, entry, body) => {
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
async function afterEmailCode(
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
const submitEmailCode = (h: Hosted): EntryWork => async (req, res, app, entry, body) => {
  const codeToken = body.code_token ?? '';
  const code = (body.code ?? '').slice(0, 16);
  const registration = h.services.flows.form(app, entry.flow, FORMS.register);
  const values = registration && body.code !== undefined && Object.keys(body).some((k) => registration.fields.some((f) => f.name === k)) ? formValues(registration, body) : {};
  const result = await callUseCase(h.services, req, res, app, emailCodeSignIn, flowRequest(entry), { codeToken, code, form: { values } });
  await afterEmailCode(h, req, res, app, entry, result, { codeToken, email: body.email, code, values });
};

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
async function showLink(h: Hosted, req: Request, res: Response, app: Application, locale: PageLocale): Promise<void> {
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
}

/**
 * The link's button: in the browser that asked (its cookie holds this code's code_token), the
 * sign-in goes on as a typed code would; anywhere else the page shows the code to type there.
 */
async function followLink(h: Hosted, req: Request, res: Response, app: Application, locale: PageLocale): Promise<void> {
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
}

const viewOf = (path: string): View => (path === '/register' ? 'register' : path === '/signin/forgot' ? 'forgot' : path === '/register/social' ? 'social' : 'signin');

type EntryWork = (req: Request, res: Response, app: Application, entry: Entry, body: Record<string, string>, held: Held) => Promise<void>;

/** A page's GET or POST: the entry checked first (an error page, never a redirect, when it is wrong); a POST's CSRF token and held social values next. */
const withEntry = (h: Hosted, resolveApp: (host: string | undefined) => Promise<Application>, work: EntryWork) =>
  pageHandler(resolveApp, async (req, res, app, locale) => {
    const source = req.method === 'POST' ? req.body ?? {} : req.query;
    const entry = await entryOf(h.services, app, source, locale);
    if ('key' in entry) return sendError(res, 400, locale, app, entry);
    const body = req.method === 'POST' ? stringFields(req.body) : {};
    if (req.method !== 'POST') return work(req, res, app, entry, body, {});
    // a refused POST shows the page's plain form with a fresh token: nothing of its body
    const view = viewOf(req.path);
    const plain = view === 'social' ? 'signin' : view;
    if (!h.token.matches(req, body.csrf)) return show(h, req, res, app, entry, plain, 403, { notice: say(locale, 'expired') });
    const held = heldBy(h.services, req, body);
    if (!held) return show(h, req, res, app, entry, plain, 403, { notice: say(locale, 'otherBrowser') });
    await work(req, res, app, entry, body, held);
  });

/**
 * Whether a registration on this page offers a passkey before going back to the app: the login
 * client's setting `passkey_after_registration` (else the application's) is `offer`.
 */
const offersPasskey = (app: Application, client: Client) => (client.settings.passkey_after_registration ?? app.settings.passkey_after_registration) === 'offer';

/**
 * A registration that offers a passkey: its code goes to the account page's callback, which
 * starts the new account's browser session in this browser and goes on to the offer (then the app
 * gets a code made from that session).
 */
function toOffer(h: Hosted, req: Request, res: Response, app: Application, entry: Entry, signedIn: SignedIn): void {
  res.clearCookie(HOLD_COOKIE, { path: '/' });
  const next = { client_id: entry.client.clientId, redirect_uri: entry.redirectUri, locale: entry.locale, ...(entry.state && { state: entry.state }) };
  const state = accountState(req, res, h.services.baseUrls.secure, entry.client.clientId, next);
  const target = new URL(accountCallbackOf(h.services, app));
  target.searchParams.set('code', String(signedIn.authorizationCode));
  target.searchParams.set('state', state);
  res.redirect(303, target.toString());
}

/** A POST that signs in or registers: redirected with a code, or the form again with what failed. */
const submit = <C>(h: Hosted, view: View, useCase: LoginUseCase<C, SignInOutcome>, command: (form: FormSubmission, held: Held, body: Record<string, string>) => C): EntryWork =>
  async (req, res, app, entry, body, held) => {
    const form = h.services.flows.form(app, entry.flow, FORMS[view]);
    const fields = form ? formValues(form, body) : {};
    // home-realm discovery: an address at an organization's verified domain signs in through its connection, never with a password here
    const address = view === 'signin'
      ? Object.entries(fields).find(([name, v]) => !/password/i.test(name) && /^[^\s@]{1,64}@[^\s@]{1,253}$/.test(v.trim()))?.[1] : undefined;
    if (address !== undefined && await toConnection(h, res, app, entry, address, true)) return;
    // (not for a registration on the account page's own sign-in: it is going to a session already)
    const offer = (view === 'register' || view === 'social') && offersPasskey(app, entry.client) && entry.redirectUri !== accountCallbackOf(h.services, app);
    const request = offer ? { ...flowRequest(entry), redirectUri: accountCallbackOf(h.services, app) } : flowRequest(entry);
    const result = await callUseCase(h.services, req, res, app, useCase, request, command({ values: fields }, held, body));
    if (result.result) return offer && !isPaused(result.result) ? toOffer(h, req, res, app, entry, result.result) : toAppOrPause(h, req, res, app, entry, result.result);
    const { status, shown } = pageFailure(res, entry.locale, FORMS[view], result.error!);
    await show(h, req, res, app, entry, view, status, { ...shown, values: fields, ...held });
  };

/** The passkey's POST: to the app with a code, the code step when the account owes its second factor, or the sign-in page saying it failed. */
const submitPasskey = (h: Hosted): EntryWork => async (req, res, app, entry, body) => {
  let credential: unknown;
  try {
    credential = JSON.parse(body.credential ?? '');
  } catch {
    return show(h, req, res, app, entry, 'signin', 400, { notice: say(entry.locale, 'passkeyFailed') });
  }
  const result = await callUseCase(h.services, req, res, app, passkeySignIn, flowRequest(entry), { challengeToken: body.challenge_token ?? '', credential });
  if (result.result) return toAppOrPause(h, req, res, app, entry, result.result);
  const { status, shown } = pageFailure(res, entry.locale, FORMS.signin, result.error!);
  // the flow's form says nothing of a passkey: one notice
  await show(h, req, res, app, entry, 'signin', status, { notice: shown.notice ?? say(entry.locale, 'passkeyFailed') });
};

/** The forgotten-password POST: the email links to the client's password_recover_url, which the use case requires as redirect_uri. */
const submitForgot = (h: Hosted): EntryWork => async (req, res, app, entry, body) => {
  const found = h.services.flows.form(app, entry.flow, FORMS.forgot);
  const fields = found ? formValues(found, body) : {};
  const request: FlowRequest = { ...flowRequest(entry), redirectUri: entry.client.settings.password_recover_url ?? '', responseType: 'token' };
  const result = await callUseCase(h.services, req, res, app, requestPasswordReset, request, { form: { values: fields }, altcha: body.altcha });
  // the page says the same whether an account has this address (and a password) or not: it tells no one who has an account
  // (the API keeps its documented no_such_account, for an app's backend)
  const unknown = result.error instanceof Refusal && (result.error.reason === 'no_such_account' || result.error.reason === 'nothing_to_do');
  if (!result.error || unknown) return show(h, req, res, app, entry, 'forgot', 200, { done: say(entry.locale, 'forgotSent') });
  const { status, shown } = pageFailure(res, entry.locale, FORMS.forgot, result.error!);
  await show(h, req, res, app, entry, 'forgot', status, { ...shown, values: fields });
};

/**
 * The end of a social sign-in started from a hosted page (called by the social callback with the
 * provider's one-time token): a linked account goes to the app with a code; a new identity gets
 * the social registration form, prefilled; an email that an account holds gets the sign-in form,
 * which links the identity once the password is right.
 */
async function finishSocial(
  h: Hosted, req: Request, res: Response, app: Application, locale: PageLocale, back: HostedReturn, provider: string, socialToken: string,
): Promise<void> {
  const entry = await entryOf(h.services, app, { client_id: back.clientId, redirect_uri: back.redirectUri, state: back.state }, locale);
  if ('key' in entry) return sendError(res, 400, locale, app, entry);
  const result = await callUseCase(h.services, req, res, app, socialSignIn, flowRequest(entry), { token: socialToken, thinRegistration: false, registrationForm: FORMS.social });
  if (result.result) return toAppOrPause(h, req, res, app, entry, result.result);
  const e = result.error!;
  // an account deleted while signing in: its identity registers anew
  if (e instanceof Refusal && (e.reason === 'unknown_identity' || e.reason === 'gone')) {
    const values = Object.fromEntries(Object.entries(e.detail.prefill ?? {}).filter((v): v is [string, string] => typeof v[1] === 'string'));
    return show(h, req, res, app, entry, 'social', 200, { values, token: socialToken, provider });
  }
  if (e instanceof Refusal && e.reason === 'email_in_use') return show(h, req, res, app, entry, 'signin', 200, { mergeToken: socialToken, provider });
  const { status, shown } = pageFailure(res, locale, FORMS.signin, e);
  return show(h, req, res, app, entry, 'signin', status, shown);
}

/** Where a person at an organization with its own identity provider types their work address (home-realm discovery). */
const ORGANIZATION_PATH = '/signin/organization';

/** The page that asks for the work address, or says no organization signs in with it. */
function showOrganizationAsk(h: Hosted, req: Request, res: Response, app: Application, entry: Entry, status: number, shown: { notice?: string; email?: string } = {}): void {
  const { locale } = entry;
  const title = say(locale, 'organizationTitle');
  const body = `<h1>${escape(title)}</h1><p>${escape(say(locale, 'organizationAsk'))}</p>`
    + `<p class="notice" id="form-notice" role="alert"${shown.notice ? '' : ' hidden'}>${escape(shown.notice ?? '')}</p>`
    + `<form method="post" action="${ORGANIZATION_PATH}" aria-describedby="form-notice">`
    + `<label for="email">${escape(say(locale, 'emailLabel'))}</label>`
    + `<input id="email" name="email" type="email" autocomplete="email" maxlength="254" required autofocus value="${escape(shown.email ?? '')}">`
    + hidden({ client_id: entry.client.clientId, redirect_uri: entry.redirectUri, state: entry.state, locale, csrf: h.token.issue(req, res) })
    + `<button type="submit">${escape(say(locale, 'organizationButton'))}</button></form>`
    + `<p class="links"><a href="${escape(`/signin?${entryQuery(entry)}`)}">${escape(say(locale, 'backToSignIn'))}</a></p>`;
  sendPage(res, status, locale, title, body, { formAction: "'self'", brand: brandOf(app) });
}

/** The work address's POST: to its organization's connection, or the page again saying none signs in with it. */
const submitOrganization = (h: Hosted): EntryWork => async (req, res, app, entry, body) => {
  const email = (body.email ?? '').trim().slice(0, 254);
  if (await toConnection(h, res, app, entry, email, true)) return;
  showOrganizationAsk(h, req, res, app, entry, 400, { email, notice: say(entry.locale, 'organizationNone') });
};

/** Sends the browser to the connection of an address's organization (home-realm discovery), if it has one: true when it did. */
async function toConnection(h: Hosted, res: Response, app: Application, entry: Entry, address: string, afterForm = false): Promise<boolean> {
  const connection = await connectionForAddress(h.services, app, address);
  if (!connection) return false;
  const start = `/sso/${connection}/start?${entryQuery(entry, { login_hint: address.trim() })}`;
  if (!afterForm) {
    res.redirect(303, start);
    return true;
  }
  // a form's answer may redirect only where the page's form-action allows, and the identity provider is
  // elsewhere: a page of this site goes on by itself (a refresh is no form's), with a link for the person
  const title = say(entry.locale, 'organizationTitle');
  sendPage(res, 200, entry.locale, title, `<meta http-equiv="refresh" content="0;url=${escape(start)}"><h1>${escape(title)}</h1>`
    + `<p><a class="button" href="${escape(start)}">${escape(say(entry.locale, 'organizationButton'))}</a></p>`, { brand: brandOf(app) });
  return true;
}

/** An organization's connection signed the person in (its response checked): to the app with a code, or the second factor's page; what failed, on the sign-in page. */
async function finishConnection(h: Hosted, req: Request, res: Response, app: Application, locale: PageLocale, back: HostedReturn, checked: CheckedResponse): Promise<void> {
  const entry = await entryOf(h.services, app, { client_id: back.clientId, redirect_uri: back.redirectUri, state: back.state }, locale);
  if ('key' in entry) return sendError(res, 400, locale, app, entry);
  let result;
  try {
    result = await callUseCase(h.services, req, res, app, connectionSignIn, flowRequest(entry), { checked });
  } catch (e) {
    if (e instanceof ConnectionRefusal) return sendError(res, 400, locale, app, { key: 'badLink', detail: e.message });
    throw e;
  }
  if (result.result) return toAppOrPause(h, req, res, app, entry, result.result);
  const { status, shown } = pageFailure(res, locale, FORMS.signin, result.error!);
  return show(h, req, res, app, entry, 'signin', status, shown);
}

/**
 * GET /signin and GET /register: the reference sign-in and registration pages, built from the
 * login client's flow (signInForm, registrationForm, forgotPasswordForm, socialRegistrationForm)
 * as stored, so a flow change shows without code. Every POST goes through the same use cases as
 * the API (the same rules, limits and uniform failures), and a success redirects to `redirect_uri`
 * (on the client's `redirect_uris` allow-list) with an authorization code and the app's `state`.
 */
export function hostedRoutes(services: Services, resolveApp: (host: string | undefined) => Promise<Application>) {
  const router = express.Router();
  const h: Hosted = { services, token: csrf(services.box, COOKIE, '/', services.baseUrls.secure) };
  const page = (work: EntryWork) => withEntry(h, resolveApp, work);
  const form = pageForm({ limit: '32kb', parameterLimit: 60 });
  router.get('/signin', page(async (req, res, app, entry) => {
    const view = req.query.view === 'forgot' ? 'forgot' : 'signin';
    // home-realm discovery: an app that knows the address (login_hint) at an organization's verified domain goes to its connection
    if (view === 'signin' && typeof req.query.login_hint === 'string' && await toConnection(h, res, app, entry, req.query.login_hint)) return;
    return show(h, req, res, app, entry, view, 200, hinted(h, app, entry, view, req.query.login_hint));
  }));
  // an invitation's registration names its address (login_hint), typed in already
  // where the application takes no registrations, its registration page is its sign-in page
  router.get('/register', page((req, res, app, entry) => {
    const view = registrationOpen(app, entry.client) ? 'register' : 'signin';
    return show(h, req, res, app, entry, view, 200, hinted(h, app, entry, view, req.query.login_hint));
  }));
  router.post('/signin', form, page(submit(h, 'signin', signIn, (submitted, held, body) => ({ form: submitted, mergeToken: held.mergeToken, altcha: body.altcha }))));
  router.post('/register', form, page(submit(h, 'register', registerWithPassword, (submitted, _held, body) => ({ form: submitted, altcha: body.altcha }))));
  router.post('/register/social', form, page(submit(h, 'social', socialRegister, (submitted, held) => ({ form: submitted, token: held.token ?? '' }))));
  router.post('/signin/forgot', form, page(submitForgot(h)));
  router.get(ORGANIZATION_PATH, page(async (req, res, app, entry) => showOrganizationAsk(h, req, res, app, entry, 200)));
  router.post(ORGANIZATION_PATH, form, page(submitOrganization(h)));
  router.post('/signin/code', form, page(submitCode(h)));
  router.post('/signin/passkey', form, page(submitPasskey(h)));
  router.post('/signin/enroll', form, page(submitEnroll(h)));
  router.post('/signin/enroll/continue', form, page(submitEnrolledContinue(h)));
  router.get(EMAIL_CODE_PATH, page((req, res, app, entry) => showEmailAsk(h, req, res, app, entry, 200, { values: hinted(h, app, entry, 'signin', req.query.login_hint).values })));
  router.post(EMAIL_CODE_PATH, form, page(submitEmailBegin(h)));
  router.post(`${EMAIL_CODE_PATH}/verify`, form, page(submitEmailCode(h)));
  router.get(EMAIL_LINK_PATH, pageHandler(resolveApp, (req, res, app, locale) => showLink(h, req, res, app, locale)));
  router.post(EMAIL_LINK_PATH, form, pageHandler(resolveApp, (req, res, app, locale) => followLink(h, req, res, app, locale)));
  return {
    router,
    finishSocial: (req: Request, res: Response, app: Application, locale: PageLocale, back: HostedReturn, provider: string, socialToken: string) =>
      finishSocial(h, req, res, app, locale, back, provider, socialToken),
    finishConnection: (req: Request, res: Response, app: Application, locale: PageLocale, back: HostedReturn, checked: CheckedResponse) =>
      finishConnection(h, req, res, app, locale, back, checked),
    /** Whether a hosted page may start a social sign-in for these parameters (the same checks as its own GET). */
    async hostedReturn(app: Application, query: Record<string, unknown>, locale: PageLocale): Promise<HostedReturn | PageProblem> {
      const entry = await entryOf(services, app, query, locale);
      return 'key' in entry ? entry : { clientId: entry.client.clientId, redirectUri: entry.redirectUri, state: entry.state };
    },
  };
}
export type HostedPages = ReturnType<typeof hostedRoutes>;
